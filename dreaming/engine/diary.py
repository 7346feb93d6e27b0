"""The diary: what stays episodic and why, the final counts, and the human summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from .consolidate import REDACTION_MARK, SUBJECT_CHARS, snippet
from .deep import DeepResult
from .facts import Inputs
from .light import LightResult
from .policy import Policy
from .rem import RemResult
from .types import CandidateDraft, ConflictDraft, Ep, SetAside, Theme


@dataclass(frozen=True, slots=True)
class DiaryResult:
    stays: Sequence[SetAside]  # why the episodes in no candidate stay episodic
    diary: str
    counts: Mapping[str, int]  # every phase's counts and the diary's own


def settle(
    inp: Inputs, light: LightResult, rem: RemResult, deep: DeepResult, counts: Mapping[str, int]
) -> DiaryResult:
    """Say what stays episodic and why, count everything, write the diary.

    ``counts`` are the earlier phases' counts; the result's are those and the diary's.
    """
    eps = inp.eps
    in_candidate = {
        ev.episode_id for d in deep.candidates for ev in d.evidence if ev.role == "support"
    }
    in_reinforced = {i for v in deep.reinforced.values() for i in v}
    by_reason: dict[str, list[int]] = {}
    for i in range(len(eps)):
        eid = eps[i].id
        if eid in in_candidate or eid in in_reinforced:
            continue
        reason = light.aside.get(i) or _episode_reason(light, rem, deep, i)
        by_reason.setdefault(reason, []).append(eid)
    stays = [
        SetAside(r, len(v), tuple(sorted(v)[: inp.policy.sample_ids]))
        for r, v in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    total: Counter[str] = Counter(counts)
    for d in deep.candidates:
        total[d.status] += 1
    total["reinforced_claims"] = len(deep.reinforced)
    total["reinforced_episodes"] = len(in_reinforced)
    total["stays_episodic"] = sum(s.count for s in stays)
    for key in ("proposed", "deferred", "blocked", "rehydrate_dropped"):
        total.setdefault(key, 0)
    total.setdefault("rehydrate_pruned_evidence", 0)
    text = _summary(eps, deep.candidates, rem.conflicts, stays, rem.themes, total, inp.policy)
    return DiaryResult(stays, text, total)


_REASON_RANK = {
    "below_min_score": 1,
    "too_few_days": 2,
    "too_few_contexts": 3,
    "too_few_evidence": 4,
    "rehydrate:evidence_gone": 5,
    "secret_redacted": 7,
}


def _episode_reason(light: LightResult, rem: RemResult, deep: DeepResult, i: int) -> str:
    # An episode holds several sentences; report the reason of the one that came
    # closest to being proposed.
    U = light.units
    best: tuple[int, str] | None = None
    gidx = light.ep_group[i]
    for u in light.group_units[gidx] if gidx >= 0 else ():
        ci = light.unit_fact[u]
        if ci < 0:
            r = f"junk:{U.junk[u]}" if U.junk[u] else "junk:no_content"
        else:
            r = deep.reasons.get(ci, "too_few_evidence")
            if r in ("candidate", "reinforced"):
                contest = rem.contests.get(ci)
                contradicted = contest is not None and i in contest.contradict
                r = "contradicted" if contradicted else "deferred_merge"
        rank = _REASON_RANK.get(r, 6 if r.startswith("lifecycle") else 8)
        if best is None or (rank, r) < best:
            best = (rank, r)
    return best[1] if best else "junk:no_content"


def _summary(
    eps: Sequence[Ep],
    candidates: Sequence[CandidateDraft],
    conflicts: Sequence[ConflictDraft],
    stays: list[SetAside],
    themes: Sequence[Theme],
    counts: Counter[str],
    policy: Policy,
) -> str:
    """Write the human-readable summary; quote only short, unflagged, grounded snippets."""
    if not eps:
        return "Nothing to read: the sweep was empty, so nothing was proposed or set aside."
    first: date = eps[0].occurred_at.date()
    last: date = eps[-1].occurred_at.date()
    sources = len({e.source_id for e in eps})
    parts = [
        f"Read {len(eps)} episode{'s' * (len(eps) != 1)} from {first} to {last} "
        f"({sources} source{'s' * (sources != 1)})."
    ]
    if counts["duplicates_folded"]:
        parts.append(
            f"Folded {counts['duplicates_folded']} duplicates into the episodes they repeat."
        )
    parts.append(
        f"Grouped {counts['sentences'] - counts['junk_sentences']} usable sentences into "
        f"{counts['clusters']} facts on {counts['subjects']} subjects."
    )
    proposed = [d for d in candidates if d.status == "proposed"]
    line = f"Proposed {len(proposed)} candidate{'s' * (len(proposed) != 1)} for review"
    if counts["deferred_over_cap"]:
        line += f"; deferred {counts['deferred_over_cap']} over the cap of {policy.max_proposals}"
    if counts["deferred_snoozed"]:
        line += f"; deferred {counts['deferred_snoozed']} snoozed"
    blocked = [d for d in candidates if d.status == "blocked"]
    if blocked:
        line += f"; blocked {len(blocked)} ({blocked[0].blocked_reason})"
    parts.append(line + ".")
    quotable = [d for d in proposed if not d.flags and REDACTION_MARK not in d.text][:3]
    if quotable:
        parts.append(
            "Strongest: "
            + "; ".join(
                f"{snippet(d.text)} → {d.page_target} "
                f"({int(d.signals.get('evidence', 0))} episodes over "
                f"{int(d.signals.get('days', 0))} days, score {d.score:.2f})"
                for d in quotable
            )
            + "."
        )
    if counts["reinforced_claims"]:
        parts.append(
            f"Reinforced {counts['reinforced_claims']} approved claim"
            f"{'s' * (counts['reinforced_claims'] != 1)} with {counts['reinforced_episodes']} "
            "episodes instead of proposing them again."
        )
    if conflicts:
        kinds = Counter(c.kind for c in conflicts)
        flagged = {e.id for e in eps if e.risk_flags}
        subjects = [
            c.subject
            for c in conflicts[:3]
            if not any(i in flagged for side in c.sides for i in side.episode_ids)
        ]
        line = (
            f"Recorded {len(conflicts)} conflict{'s' * (len(conflicts) != 1)} ("
            + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
            + ")"
        )
        if subjects:
            line += ": " + "; ".join(snippet(s, SUBJECT_CHARS) for s in subjects)
        parts.append(line + ".")
    if counts["rehydrate_dropped"]:
        parts.append(
            f"Dropped {counts['rehydrate_dropped']} candidates whose evidence is no longer live."
        )
    if stays:
        total = sum(s.count for s in stays)
        top = ", ".join(f"{s.count} {_reason_words(s.reason)}" for s in stays[:5])
        parts.append(f"Left {total} episodes episodic: {top}.")
    if themes:
        parts.append(
            "Recurring: " + ", ".join(f"{t.label} ({t.days} days)" for t in themes[:5]) + "."
        )
    return " ".join(parts)


_REASON_WORDS = {
    "below_min_score": "below the minimum score",
    "too_few_evidence": "with too little evidence",
    "too_few_days": "seen on too few days",
    "too_few_contexts": "from too few sources",
    "handoff-only": "marked handoff-only",
    "secret_redacted": "carrying only redacted secrets",
    "contradicted": "contradicted by newer material",
    "deferred_merge": "merged into a stronger candidate",
    "rehydrate:evidence_gone": "no longer live",
    "not_claim_worthy": "not worded as a claim (a chat line, news of the day, a question …)",
    "dated": "told only as news of the day it was written (a log entry or a plan)",
    "junk:leans_on_context": "said once, and not readable without the sentences around it",
    "junk:not_a_claim": "a lead-in to what follows, or a record's field of names",
}


def _reason_words(reason: str) -> str:
    if reason in _REASON_WORDS:
        return _REASON_WORDS[reason]
    if reason.startswith("junk:"):
        return f"junk ({reason[5:].replace('_', ' ')})"
    if reason.startswith("lifecycle:"):
        return f"about {reason[10:]} work"
    return reason.replace("_", " ")
