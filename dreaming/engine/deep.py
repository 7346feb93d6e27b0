"""Deep: gate, rehydrate and score every fact; draft the candidates; cap them.

A fact an approved claim already states reinforces that claim instead of being proposed
again. Every fact that is not drafted gets the reason why (``DeepResult.reasons``), which
the diary reports per episode.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from .consolidate import REDACTION_MARK, Choice, choose, text_key
from .facts import Clock, Fact, Inputs, Units, label
from .learn import NONE, Adjustment, Reviewers, Where
from .light import LightResult
from .policy import Policy
from .rem import Contest, RemResult
from .route import Route, route, section_name
from .score import EvidenceView, recall_for, signals, weighted
from .similar import terms_of
from .types import TERMINAL_LIFECYCLES, CandidateDraft, Evidence
from .wording import (
    asks_the_listener,
    dated,
    display_text,
    not_a_claim,
    opens_pointing_back,
    points_to_files,
    procedure_text,
    standalone,
    trim_snippet,
)
from .worth import Model, restatement, shipped, unit_features

_MAX_CONTRADICT_IDS = 50
# Two sentences longer than this together are no longer one claim read at a glance.
_MAX_PAIR_CHARS = 320
_UNCONTESTED = Contest(frozenset(), (), None, False)


class Reason(StrEnum):
    """What became of a fact, in the order the gates ask (the diary and the review pages
    read the values; a closed lifecycle adds its own, "lifecycle:<state>")."""

    REINFORCED = "reinforced"
    TOO_FEW_EVIDENCE = "too_few_evidence"
    TOO_FEW_DAYS = "too_few_days"
    TOO_FEW_CONTEXTS = "too_few_contexts"
    EVIDENCE_GONE = "rehydrate:evidence_gone"
    REDACTED = "secret_redacted"
    FRAGMENTS = "junk:fragments"
    NOT_A_CLAIM = "junk:not_a_claim"
    NOT_CLAIM_WORTHY = "not_claim_worthy"
    POINTS_BACK = "junk:points_back"
    DATED = "dated"
    LEANS_ON_CONTEXT = "junk:leans_on_context"
    EVIDENCE_PRUNED_BELOW_MIN_SCORE = "rehydrate:below_min_score"
    BELOW_MIN_SCORE = "below_min_score"
    MERGED_DUPLICATE_TEXT = "merged_duplicate_text"
    DEFERRED = "deferred_not_returned"
    CANDIDATE = "candidate"


@dataclass(frozen=True, slots=True)
class DeepResult:
    """What Deep hands on to the diary (and, through it, to the sweep's result)."""

    candidates: Sequence[CandidateDraft]  # proposed, then deferred, then blocked
    reinforced: Mapping[int, list[int]]  # approved claim id -> episode ids seen again
    reasons: Mapping[int, str]  # fact -> what became of it ("candidate", a gate …)
    counts: Mapping[str, int]


def run(
    inp: Inputs,
    light: LightResult,
    rem: RemResult,
    live: set[int] | None,
    clock: Clock,
    reviewers: Reviewers | None = None,
) -> DeepResult:
    counts: Counter[str] = Counter()
    reasons: dict[int, str] = {}
    with clock("deep.score"):
        passing, reinforced = _score(inp, light, rem, live, counts, reasons, reviewers)
    with clock("deep.cap"):
        candidates = _cap(inp, light, rem, passing, counts, reasons)
    return DeepResult(candidates, reinforced, reasons, counts)


@dataclass(slots=True)
class _Passing:
    """A fact that passed every gate, waiting for the per-sweep cap."""

    score: float
    ci: int
    choice: Choice
    support: list[int]
    contradict: set[int]
    lifecycle: str
    raw: dict[str, float]
    stats: dict[str, float]
    flags: tuple[str, ...]
    key: str
    worth: float  # P(claim line) of the chosen sentence, as the project's reviewers moved it
    shipped_worth: float  # ... by the shipped model alone
    moved: Adjustment  # how and by whom the reviewers moved it
    where: Where  # where its wording was written, for the reviewers' next decisions

    @property
    def rank(self) -> float:
        return _rank(self.worth, self.score)


def _rank(worth: float, score: float) -> float:
    """Order within the cap: how much the fact's text reads as a claim, plus half how well
    it is supported. Support alone favours what a log copies forward day after day (the
    same open to-dos, the same status lines); a reviewer's first page should be the
    statements they can approve, the better supported first among equals."""
    return worth + score / 2


def _score(
    inp: Inputs,
    light: LightResult,
    rem: RemResult,
    live: set[int] | None,
    counts: Counter[str],
    reasons: dict[int, str],
    reviewers: Reviewers | None = None,
) -> tuple[list[_Passing], dict[int, list[int]]]:
    """Gate, rehydrate and score every fact; reinforce approved claims seen again."""
    U, eps, policy = light.units, inp.eps, inp.policy
    reinforced: dict[int, set[int]] = {}
    passing: list[_Passing] = []
    has_claims = bool(inp.claims)
    min_evidence = policy.min_evidence
    contests = rem.contests
    model = shipped()
    # This loop sees every fact of the sweep: the cheap gates that reject most of them stay
    # inline, and only the facts left pay for a call (_rehydrate, _propose).
    for ci, c in enumerate(light.facts):
        contest = contests.get(ci, _UNCONTESTED)
        if len(c.units) == 1 and not contest.contradict:
            # Fast path for the commonest fact: one sentence, nobody contradicting it.
            support = U.eps[c.units[0]]  # already sorted, never mutated below
            if not support:
                continue
            if (
                len(support) < min_evidence
                and U.claim[c.units[0]] is None
                and not _authoritative(inp, support)
            ):
                reasons[ci] = Reason.TOO_FEW_EVIDENCE
                continue
            contradict: set[int] = set()
        else:
            contradict = set(contest.contradict)
            if c.episodes is not None:
                support = sorted(set(c.episodes) - contradict)
            else:
                support = sorted({i for u in c.units for i in U.eps[u]} - contradict)
            if not support:
                continue
        claim_units = [u for u in c.units if U.claim[u] is not None] if has_claims else []
        if claim_units and not contest.claim_opposed:
            core = light.core(ci)
            best = max(
                claim_units, key=lambda u: (_jac(U.feat[u].subject, core), -(U.claim[u] or 0))
            )
            reinforced.setdefault(U.claim[best], set()).update(eps[i].id for i in support)
            reasons[ci] = Reason.REINFORCED
            continue
        state, decided = rem.lifecycles[ci]
        # A procedure and a recurring theme are records in their own right: a closed
        # theme is proposed as done work (never as an open problem), and "done" in
        # one step of a runbook does not retire the runbook.
        if (
            state in TERMINAL_LIFECYCLES
            and c.kind == "fact"
            and not (decided and light.unit_fact[decided.unit] == ci)
        ):
            reasons[ci] = f"lifecycle:{state}"
            continue
        # The count gates are cheap and reject most facts; text choice and scoring
        # only run for what is left.
        reason = _gate(inp, support)
        if reason:
            reasons[ci] = reason
            continue
        pruned = 0
        if live is not None:
            support, contradict, pruned = _rehydrate(inp, support, contradict, live, counts)
            if not support:
                reasons[ci] = Reason.EVIDENCE_GONE
                continue
        got = _propose(
            inp, light, ci, contest, support, contradict, state, pruned, counts, model, reviewers
        )
        if isinstance(got, str):
            reasons[ci] = got
        else:
            passing.append(got)
    return passing, {cid: sorted(v) for cid, v in sorted(reinforced.items())}


def _rehydrate(
    inp: Inputs, support: list[int], contradict: set[int], live: set[int], counts: Counter[str]
) -> tuple[list[int], set[int], int]:
    """The fact's evidence less what was erased or superseded since it was read, which must
    not ground a candidate (OpenClaw re-reads the live file for the same reason); no support
    at all when what is left no longer passes the gate. Also returns how much was pruned."""
    eps = inp.eps
    live_support = [i for i in support if eps[i].id in live]
    pruned = len(support) - len(live_support)
    if not pruned:
        return support, contradict, 0
    counts["rehydrate_pruned_evidence"] += pruned
    if not live_support or _gate(inp, live_support):
        counts["rehydrate_dropped"] += 1
        return [], contradict, pruned
    return live_support, {i for i in contradict if eps[i].id in live}, pruned


def _propose(
    inp: Inputs,
    light: LightResult,
    ci: int,
    contest: Contest,
    support: list[int],
    contradict: set[int],
    state: str,
    pruned: int,
    counts: Counter[str],
    model: Model,
    reviewers: Reviewers | None,
) -> _Passing | Reason:
    """A fact that passed the count gates, worded and scored: what waits for the cap, or
    the reason it does not."""
    U, eps, policy, c = light.units, inp.eps, inp.policy, light.facts[ci]
    support_set = set(support)
    text_units = [u for u in c.units if U.eps[u] and not support_set.isdisjoint(U.eps[u])]
    choice, shaped, shown = _wording(inp, light, ci, support_set, text_units)
    if choice.unit is None:
        redacted = "redacted" in (choice.reason or "")
        return Reason.REDACTED if redacted else Reason.FRAGMENTS
    # A lead-in ("Two rules were restated:") or a field of names ("Deciders: Ann Lee,
    # Bo Chan") says nothing a reviewer could approve, however often it recurs.
    if c.kind == "fact" and not_a_claim(choice.text):
        return Reason.NOT_A_CLAIM
    # A fact is as claim-like as its best wording: five people saying it five ways,
    # one of them as a clean statement, have stated a claim.
    restated = restatement(U, inp, c, choice.unit)
    # Two sentences shown together read as claim-like as the better of them: a question
    # and its answer ("Could we switch? No; X was chosen on purpose.") state the answer.
    worth = max(model.prob(unit_features(U, u, restated)) for u in shown)
    if worth < model.threshold and not shaped and len(text_units) > 1:
        # choose() favours the wording covering most of the fact's terms; when that
        # one does not read as a claim but another wording does, the fact is a claim
        # and the reviewer is shown the wording they could approve.
        worth, choice = _best_worded(U, text_units, restated, worth, choice, policy)
    # The project's reviewers have the last word on what reads as a claim here. Their
    # refit reads whether a note says the fact from the wording's place.
    days, wordings, _ = restated
    where = Where(U.place[choice.unit], U.weight[choice.unit], U.trust[choice.unit], days, wordings)
    moved = reviewers.adjust(choice.text, where) if reviewers else NONE
    shipped_worth, worth = worth, moved.apply(worth) if moved.logit else worth
    # A contested fact, a procedure, a theme and a question the project has to answer
    # (asked of no one in particular) are records in their own right.
    if c.kind == "fact" and not contest.kind and worth < model.threshold and not _open(choice.text):
        return Reason.NOT_CLAIM_WORTHY
    # choose() prefers a wording that reads on its own: if the best one still opens on
    # a word pointing at what came before ("It means a lot."), every wording does, and
    # however often it is restated (which the model counts for it) a reviewer could not
    # approve it as it stands.
    if c.kind == "fact" and not contest.kind and opens_pointing_back(choice.text):
        return Reason.POINTS_BACK
    score, raw, stats = _evaluate(inp, light, support, choice.unit)
    # Said once, a statement scores low on frequency and days; written once in a
    # reference source it is still the reference, when it stands on its own.
    # choose() prefers a wording that outlives its day: if the best one is still
    # tied to it, every wording is a log entry or a plan, not a durable fact. A
    # contested fact, a procedure and a theme are records in their own right.
    if c.kind == "fact" and not contest.kind and dated(choice.text):
        return Reason.DATED
    # The evidence gate let it through on authority alone (see _gate), or a reference
    # source states it and weaker restatements grouped with it only diluted its score:
    # what one trusted note says alone is not lost for being said again in a log.
    alone = U.claim[choice.unit] is None and (
        len(support) < policy.min_evidence
        or (score < policy.min_score and _authoritative(inp, support))
    )
    # A procedure is read step by step, each step leaning on the one before. Another
    # claim-like wording that reads on its own ("`make test` runs the unit tests") may
    # say what the chosen one leaves to its surroundings ("**Tests:** `make test`").
    if alone and c.kind != "procedure" and not _reads_alone(choice.text):
        found, better = _best_worded(
            U, text_units, restated, model.threshold, choice, policy, _reads_alone
        )
        if better is choice:
            return Reason.LEANS_ON_CONTEXT
        choice = better
        moved = reviewers.adjust(choice.text) if reviewers else NONE
        shipped_worth, worth = found, moved.apply(found) if moved.logit else found
    if alone:
        stats["authority"] = max(eps[i].source_trust for i in support)
    elif score < policy.min_score:
        if pruned:
            counts["rehydrate_dropped"] += 1
            return Reason.EVIDENCE_PRUNED_BELOW_MIN_SCORE
        return Reason.BELOW_MIN_SCORE
    flags = tuple(sorted({f for i in support for f in eps[i].risk_flags}))
    return _Passing(
        score,
        ci,
        choice,
        support,
        contradict,
        state,
        raw,
        stats,
        flags,
        text_key(choice.text),
        round(worth, 4),
        round(shipped_worth, 4),
        moved,
        where,
    )


def _wording(
    inp: Inputs, light: LightResult, ci: int, support_set: set[int], text_units: list[int]
) -> tuple[Choice, bool, tuple[int, ...]]:
    """The text a reviewer is shown for the fact, whether it came from the fact's own
    shape (a procedure's steps, a block's rows) rather than a choice among its sentences,
    and the units whose sentences the text shows (a procedure counts by its first step)."""
    U, policy, c = light.units, inp.policy, light.facts[ci]
    if c.kind == "procedure":
        got = _procedure_text(inp, U, c, support_set)
        if got is not None:
            return got, True, (got.unit,)
    elif c.blocks:
        window = _block_text(U, policy, c, support_set, inp.people)
        if window is not None:
            units, got = window
            return got, True, units
    choice = choose(
        text_units,
        U.text,
        U.feat,
        U.junk,
        U.trust,
        U.weight,
        light.core(ci),
        policy.snippet_max_chars,
        inp.people,
    )
    return choice, False, (choice.unit,)


def _best_worded(
    U: Units,
    units: list[int],
    restated: tuple[int, int, bool],
    worth: float,
    choice: Choice,
    policy: Policy,
    need: Callable[[str], bool] | None = None,
) -> tuple[float, Choice]:
    """The fact's most claim-like clean wording (one ``need`` accepts, if given) and its
    worth, if it beats ``worth``; else ``choice`` itself."""
    model = shipped()
    for u in units:
        if U.junk[u] or REDACTION_MARK in U.text[u] or u == choice.unit:
            continue
        p = model.prob(unit_features(U, u, restated))
        if p > worth:
            text = trim_snippet(display_text(U.text[u]), policy.snippet_max_chars)
            if need is None or need(text):
                worth, choice = p, Choice(u, text)
    return worth, choice


def _block_text(
    U: Units, policy: Policy, c: Fact, support: set[int], people: frozenset[str]
) -> tuple[tuple[int, ...], Choice] | None:
    """The fact in its best-supported wording: one or two adjacent sentences of a block.

    The window covering most of the terms the group's blocks share wins (then the more
    trusted source, a well-formed sentence, the shorter text): extractive, so every
    candidate is a sentence someone wrote, and the adjacent sentence is added only when
    it carries shared terms the first lacks ("Decided: reports stay weekly. No daily
    digest this year.").
    """
    limit = policy.snippet_max_chars
    blocks = [b for b in c.blocks if any(not support.isdisjoint(U.eps[u]) for u in b)]
    if not blocks:
        return None
    terms = {u: terms_of(U.feat[u]) for b in blocks for u in b}
    counts: Counter[str] = Counter()
    for b in blocks:
        counts.update(frozenset().union(*(terms[u] for u in b)))
    need = max(2, math.ceil(len(blocks) / 2)) if len(blocks) > 1 else 1
    core = {t for t, k in counts.items() if k >= need} or set(counts)
    best: tuple | None = None
    for b in blocks:
        ok = [u for u in b if not U.junk[u] and REDACTION_MARK not in U.text[u]]
        for k, u in enumerate(ok):
            windows = [(u,)]
            if k + 1 < len(ok) and b.index(ok[k + 1]) == b.index(u) + 1:
                windows.append((u, ok[k + 1]))
            for w in windows:
                text = " ".join(display_text(U.text[x], people) for x in w)
                if len(w) > 1 and len(text) > _MAX_PAIR_CHARS:
                    continue
                got = frozenset().union(*(terms[x] for x in w)) & core
                if len(w) > 1 and got == (terms[w[0]] & core):
                    continue  # the second sentence adds nothing the group shares
                well_formed = text[:1].isupper() and text[-1:] in ".!?"
                key = (dated(text), -len(got), -U.trust[u], not well_formed, len(text), w)
                if best is None or key < best[0]:
                    best = (key, w, text)
    if best is None:
        return None
    return best[1], Choice(best[1][0], trim_snippet(best[2], limit))


def _procedure_text(inp: Inputs, U: Units, c: Fact, support: set[int]) -> Choice | None:
    """A procedure's text from its live evidence: the written form, else its steps."""
    steps = [u for u in c.text_units if not support.isdisjoint(U.eps[u])]
    if not steps:
        return None
    # Every step, never cut at the snippet length: a runbook missing its last steps is
    # one a reviewer cannot approve.
    if c.text_episode is not None and c.text_episode in support:
        text = procedure_text(inp.eps[c.text_episode].content, inp.people)
    else:
        text = "\n".join(display_text(U.text[u], inp.people) for u in steps)
    if REDACTION_MARK in text:
        return None  # choose() knows how to avoid a redacted sentence
    return Choice(steps[0], text)


def _reads_alone(text: str) -> bool:
    """A wording a reviewer could approve without the text around it (``standalone``),
    and more than an index entry naming where files are (``points_to_files``)."""
    return standalone(text) and not points_to_files(text)


def _open(text: str) -> bool:
    """Is the text a question the project has to answer, not one put to a listener?"""
    return text.rstrip().endswith("?") and not asks_the_listener(text)


def _authoritative(inp: Inputs, support: list[int]) -> bool:
    """Is the fact written down in a source trusted to be the reference?"""
    floor = inp.policy.authority_trust
    return any(inp.eps[i].source_trust >= floor for i in support)


def _too_few_evidence(inp: Inputs, support: list[int]) -> Reason | None:
    if len(support) < inp.policy.min_evidence and not _authoritative(inp, support):
        return Reason.TOO_FEW_EVIDENCE
    return None


def _too_few_days(inp: Inputs, support: list[int]) -> Reason | None:
    days = inp.policy.min_distinct_days
    if days > 1 and len({inp.ep_day[i] for i in support}) < days:
        return Reason.TOO_FEW_DAYS
    return None


def _too_few_contexts(inp: Inputs, support: list[int]) -> Reason | None:
    need = inp.policy.min_distinct_contexts
    if need > 1 and len({inp.eps[i].source_id for i in support}) < need:
        return Reason.TOO_FEW_CONTEXTS
    return None


# The count gates, in the order they are asked; the first that fails names the reason.
COUNT_GATES: tuple[Callable[[Inputs, list[int]], Reason | None], ...] = (
    _too_few_evidence,
    _too_few_days,
    _too_few_contexts,
)


def _gate(inp: Inputs, support: list[int]) -> Reason | None:
    """Apply the count gates (evidence, days, contexts); return the failing one."""
    for gate in COUNT_GATES:
        reason = gate(inp, support)
        if reason:
            return reason
    return None


def _evaluate(
    inp: Inputs, light: LightResult, support: list[int], rep_unit: int
) -> tuple[float, dict[str, float], dict[str, float]]:
    """Score one fact's support; return the score, raw signals and evidence counts."""
    eps, ep_day, ep_group = inp.eps, inp.ep_day, light.ep_group
    days = {ep_day[i] for i in support}
    # The same content (or a near-duplicate of it) twice on one day is one occurrence,
    # not two: repeated filler scoring like a durable fact was an OpenClaw complaint.
    occurrences = len({ep_group[i] * 1_000_000 + ep_day[i] for i in support})
    f = light.units.feat[rep_unit]
    view = EvidenceView(
        n_support=occurrences,
        days=len(days),
        newest=eps[support[-1]].occurred_at,  # support is in time order
        trust=[eps[i].source_trust for i in support],
        recall=recall_for((eps[i].id for i in support), inp.recall),
        key_terms=len(f.subject | f.values),
    )
    raw = signals(view, inp.recency_ref, inp.policy)
    weights = inp.policy.weights.as_dict()
    score = round(sum(weights[k] * v for k, v in raw.items()), 6)
    stats = {
        "evidence": float(len(support)),
        "occurrences": float(occurrences),
        "days": float(len(days)),
        "contexts": float(len({eps[i].source_id for i in support})),
    }
    return score, raw, stats


def _cap(
    inp: Inputs,
    light: LightResult,
    rem: RemResult,
    passing: list[_Passing],
    counts: Counter[str],
    reasons: dict[int, str],
) -> list[CandidateDraft]:
    """Keep the riskiest and most claim-like, best-supported proposals; defer the rest."""
    policy = inp.policy
    # Riskiest first (a human must see those), then by rank; identical texts from
    # two facts keep the stronger one. Only what the cap can show becomes a draft.
    passing.sort(key=lambda p: (not p.flags, -p.rank, p.key))
    seen: set[str] = set()
    keep: list[_Passing] = []
    for p in passing:
        if p.key in seen:
            reasons[p.ci] = Reason.MERGED_DUPLICATE_TEXT
            continue
        seen.add(p.key)
        if len(keep) >= policy.max_proposals and not _likely(light, rem, p):
            reasons[p.ci] = Reason.NOT_CLAIM_WORTHY
            continue
        keep.append(p)
    limit = policy.max_proposals + policy.max_deferred
    for p in keep[limit:]:
        reasons[p.ci] = Reason.DEFERRED
    counts[Reason.DEFERRED] = max(len(keep) - limit, 0)
    drafts = [_draft(inp, light, rem, p) for p in keep[:limit]]
    for p in keep[:limit]:
        reasons[p.ci] = Reason.CANDIDATE
    drafts.sort(key=lambda d: (not d.flags, -draft_rank(d), d.dedupe_key))
    out: list[CandidateDraft] = []
    kept = 0
    for d in drafts:
        if d.status == "proposed":
            if kept < policy.max_proposals:
                kept += 1
            else:
                d = replace(d, status="deferred")
                counts["deferred_over_cap"] += 1
        elif d.status == "deferred":
            counts["deferred_snoozed"] += 1
        out.append(d)
    order = {"proposed": 0, "deferred": 1, "blocked": 2}
    out.sort(key=lambda d: (order[d.status], not d.flags, -draft_rank(d), d.dedupe_key))
    counts["deferred_over_cap"] += counts[Reason.DEFERRED]
    return out


# Past the proposals a reviewer is shown now, the queue keeps for later only what the model
# rates more likely a claim than not: waiting candidates cost reviewer time too, and a fact
# that only just cleared the gate is worth a place in a short queue, not in a backlog.
_LIKELY = 0.5


def _likely(light: LightResult, rem: RemResult, p: _Passing) -> bool:
    """May ``p`` wait in the deferred band? A risky fact, a contested one, a procedure and
    a theme are records in their own right; any other must read as a claim more likely
    than not."""
    plain = light.facts[p.ci].kind == "fact" and p.ci not in rem.contests
    return bool(p.flags) or not plain or p.worth >= _LIKELY


def _draft(inp: Inputs, light: LightResult, rem: RemResult, p: _Passing) -> CandidateDraft:
    eps, U, policy = inp.eps, light.units, inp.policy
    c = light.facts[p.ci]
    support = p.support
    newest = eps[support[-1]].occurred_at
    procedural = sum(1 for i in support if eps[i].memory_type == "procedural-candidate")
    contest = rem.contests.get(p.ci, _UNCONTESTED)
    r = route(
        p.choice.text,
        contested=contest.kind,
        procedural_votes=procedural / len(support),
        subject_label=section_name(p.choice.text, light.core(p.ci))
        or label(light.core(p.ci), U, [c.units]),
        day_label=newest.date().isoformat(),
        restatements=(U.text[u] for u in c.units),
        steps=sum(1 for u in set(c.units) if u in U.steps),
        sections=(eps[i].section for i in U.eps[p.choice.unit]),
        restated_sections=(eps[i].section for i in support),
    )
    decisions = sum(1 for i in support if eps[i].kind == "decision")
    days = int(p.stats["days"])
    if c.kind == "procedure":
        r = Route("RUNBOOKS", r.section, f"procedure: {c.label}, seen on {days} days")
    elif c.kind == "theme":
        # Still recurring, it is an open problem; closed, it is history of the system.
        if p.lifecycle in TERMINAL_LIFECYCLES:
            r = Route(
                "SYSTEM_OVERVIEW",
                "Recurring issues",
                f"recurring theme: {c.label} on {days} days, {p.lifecycle}",
            )
        else:
            r = Route(
                "OPEN_QUESTIONS",
                "Recurring issues",
                f"recurring theme: {c.label} on {days} days, still open",
            )
    elif r.page == "SYSTEM_OVERVIEW" and decisions * 2 > len(support):
        r = Route("DECISION_LOG", newest.date().isoformat(), "decision: episode kind")
    status, blocked = "proposed", None
    hit = [f for f in p.flags if _blocked_by(f, policy.block_flags)]
    if hit:
        status, blocked = "blocked", f"evidence flag {hit[0]} is blocked by the project policy"
    elif p.lifecycle == "snoozed":
        status = "deferred"
    _, breakdown = weighted(p.raw, policy)
    breakdown.update(p.stats)
    breakdown["worth"] = p.worth
    breakdown.update(p.where.signals())
    if p.moved.logit:
        breakdown["worth.model"] = p.shipped_worth
        breakdown["worth.reviewers"] = p.moved.logit
    f = U.feat[p.choice.unit]
    subject_terms = sorted(light.core(p.ci) | f.values)
    evidence = [Evidence(eps[i].id, "support") for i in support]
    contra = sorted({eps[i].id for i in p.contradict})[:_MAX_CONTRADICT_IDS]
    evidence.extend(Evidence(i, "contradict") for i in contra)
    return CandidateDraft(
        text=p.choice.text,
        page_target=r.page,
        section=r.section,
        route_reason=r.reason,
        memory_type="procedural-candidate" if r.page == "RUNBOOKS" else "semantic-candidate",
        score=p.score,
        signals=breakdown,
        evidence=evidence,
        lifecycle=p.lifecycle,
        flags=p.flags,
        dedupe_key=p.key,
        subject_key="|".join(subject_terms[:8]),
        status=status,
        blocked_reason=blocked,
        conflict_keys=tuple(sorted({rem.conflicts[k].dedupe_key for k in contest.conflicts})),
        similar_approved=p.moved.approved,
        similar_rejected=p.moved.rejected,
    )


def draft_rank(d: CandidateDraft) -> float:
    """Where a draft stands in the sweep's order, and the queue's (`Candidate.rank`)."""
    return _rank(d.signals["worth"], d.score)


def _blocked_by(flag: str, rules: Sequence[str]) -> bool:
    return any(flag == r or (r.endswith(":") and flag.startswith(r)) for r in rules)


def _jac(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)
