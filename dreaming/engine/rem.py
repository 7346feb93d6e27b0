"""REM: the state each fact's topic is in, the conflicts between facts, recurring themes.

REM reads Light's facts and writes nothing on them: what it learns about one (which
episodes contradict it, which conflicts it is in) is a ``Contest`` in its own result.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from . import conflicts as conf
from . import disputes, slots
from .cluster import core_terms
from .facts import Clock, Inputs, Units, label
from .light import LightResult
from .morph import term
from .reflect import (
    BROAD,
    REPORT_SHARED,
    Event,
    Marker,
    TopicIndex,
    TopicState,
    combine,
    done_report,
    find_marker,
    fold,
    heading_state,
    item_actions,
    past_forms,
    status_field,
    term_themes,
)
from .route import section_name
from .similar import TermIndex
from .text import DECIDE_CUE, LIFE_CUE, subject_terms
from .types import TERMINAL_LIFECYCLES, ConflictDraft, ConflictSide, Ep, Theme
from .wording import display_text, trim_snippet
from .worth import imperative

_CODE_SPAN_RE = re.compile(r"`([^`\n]{1,120})`")


@dataclass(frozen=True, slots=True)
class Contest:
    """What the conflicts found say about one fact."""

    contradict: frozenset[int]  # episode indices on the other side of its conflicts
    conflicts: tuple[int, ...]  # indices into ``RemResult.conflicts``
    kind: str | None  # the strongest kind of conflict it is in (value/negation first)
    claim_opposed: bool  # an approved claim in this fact is on the other side


@dataclass(frozen=True, slots=True)
class RemResult:
    """What REM hands on to Deep and the diary."""

    # Per fact: its topic's state ("active", "done", …) and the marker that decided it.
    lifecycles: Sequence[tuple[str, Event | None]]
    conflicts: Sequence[ConflictDraft]
    contests: Mapping[int, Contest]  # fact -> its part in conflicts (only facts in one)
    themes: Sequence[Theme]
    counts: Mapping[str, int]


def run(inp: Inputs, light: LightResult, clock: Clock) -> RemResult:
    counts: Counter[str] = Counter()
    with clock("rem.lifecycle"):
        lifecycles = _lifecycle(inp, light, counts)
    with clock("rem.conflicts"):
        drafts, contests = _conflicts(inp, light, counts)
    with clock("rem.themes"):
        themes = _themes(inp, light)
    return RemResult(lifecycles, drafts, contests, themes, counts)


def _lifecycle(
    inp: Inputs, light: LightResult, counts: Counter[str]
) -> list[tuple[str, Event | None]]:
    """Find lifecycle markers and the state each fact's topic is in."""
    U, eps, facts = light.units, inp.eps, light.facts
    core_third = [
        U.feat[c.units[0]].subject if len(c.units) == 1 else core_terms(c.units, U.feat, 1 / 3)
        for c in facts
    ]
    events: list[Event] = []
    closed_docs = _closed_documents(eps)
    for u in range(len(U)):
        if not U.eps[u]:
            continue
        last = eps[U.eps[u][-1]]
        marker = None
        if U.feat[u].cues & LIFE_CUE or U.checkbox[u]:
            marker = find_marker(U.text[u], U.checkbox[u])
        if marker is None:
            # What the sentence does not say of itself, its place may: an item under a
            # "Completed" heading, or any line of a document whose status field says it
            # is done. Such a state speaks only for the sentence's own fact: the item
            # names its work in its own words, which need not be another line's.
            state = heading_state(last.heading)
            decided = last
            if state is None:
                decided = closed_docs.get(last.source_id)
                state = decided and status_field(decided.content)
            if state is not None and decided is not None:
                marker = Marker(state, frozenset())
                last = max(last, decided, key=lambda e: e.occurred_at)
        if marker is not None:
            events.append(Event(marker, last.occurred_at, last.id, u, U.feat[u]))
    counts["lifecycle_markers"] = len(events)
    # Events sharing a topic are folded once; a marker with no topic terms ("Done.")
    # speaks only for the fact its own sentence landed in.
    topics: dict[object, list[Event]] = {}
    for ev in events:
        topics.setdefault(ev.marker.topic or ("own", ev.unit), []).append(ev)
    topic_terms = {t for key in topics if isinstance(key, frozenset) for t in key}
    tindex = TopicIndex(core_third, topic_terms)
    g_host, g_env = light.identity.hosts.tolist(), light.identity.envs.tolist()
    unit_fact = light.unit_fact
    applies: dict[int, list[TopicState]] = {}
    folded: dict[object, TopicState] = {}
    for key, evs in topics.items():
        state = folded[key] = fold(evs)
        own = {unit_fact[e.unit] for e in evs if unit_fact[e.unit] >= 0}
        targets = set(own)
        if isinstance(key, frozenset):
            # The topic terms pin the subject; the guard only has to stop a marker
            # about one host or environment landing on another (cheap int checks).
            eh, ee = g_host[evs[0].unit], g_env[evs[0].unit]
            matched = tindex.clusters_for(key)
            if matched is None or len(matched) > BROAD:
                counts["lifecycle_topics_too_broad"] += 1
                matched = set()
            for ci in sorted(matched - own):
                first = facts[ci].units[0]
                ch, ce = g_host[first], g_env[first]
                if (not eh or not ch or eh == ch) and (not ee or not ce or ee == ce):
                    targets.add(ci)
        for ci in targets:
            applies.setdefault(ci, []).append(state)
    for ci in light.special:
        aliases = facts[ci].aliases
        if aliases:
            # A theme also follows the tickets opened for it (see grouping._recurring).
            for key, state in folded.items():
                if isinstance(key, frozenset) and key & aliases:
                    applies.setdefault(ci, []).append(state)
    now = inp.now
    out = [
        combine(applies[ci], now) if ci in applies else ("active", None) for ci in range(len(facts))
    ]
    for ci, event in _reported_done(
        inp, light, [ci for ci, (st, _) in enumerate(out) if st == "active"]
    ):
        out[ci] = ("done", event)
        counts["lifecycle_reported_done"] += 1
    return out


def _reported_done(
    inp: Inputs, light: LightResult, open_facts: Sequence[int]
) -> list[tuple[int, Event]]:
    """Open items whose work a log reports done, on the item's day or later (see
    ``reflect.done_report``): "Decide whether to prune the stale cache keys" is closed
    by "Cache: pruned stale keys"."""
    U, eps = light.units, inp.eps
    reports: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for u in range(len(U)):
        if U.eps[u] and (got := done_report(U.text[u])):
            reports.setdefault(got[0], []).append((u, got[1]))
    if not reports:
        return []
    out: list[tuple[int, Event]] = []
    for ci in open_facts:
        if light.facts[ci].kind != "fact":
            continue  # a procedure is done again each time it is followed: never closed
        found = None
        for u in light.facts[ci].units:
            first = U.first[u]
            if first is None or u in U.steps:
                continue  # a step of a numbered procedure is followed, not finished
            verbs = item_actions(U.text[u])
            if not any(past in reports for verb in verbs for past in past_forms(verb)):
                continue  # no report of this work: the cheap test first
            if not imperative(U.text[u]) or done_report(U.text[u]):
                continue  # an open item is an order, not a report of work done
            terms = subject_terms(U.text[u]) - set(verbs)
            # Code an item names pins which work it is: the report must name some of it.
            code = [c.strip().lower() for c in _CODE_SPAN_RE.findall(U.text[u])]
            for verb in verbs:
                for past in past_forms(verb):
                    for r, said in reports.get(past, ()):
                        when = U.last[r]
                        if (
                            when is not None
                            and (not code or any(c in U.text[r].lower() for c in code))
                            and when.date() >= first.date()
                            and len(terms & said) >= max(REPORT_SHARED, len(said) / 2)
                            and (found is None or when > found[1])
                        ):
                            found = (r, when)
        if found is not None:
            r, when = found
            event = Event(Marker("done", frozenset()), when, eps[U.eps[r][-1]].id, r, U.feat[r])
            out.append((ci, event))
    return out


def _closed_documents(eps: Sequence[Ep]) -> dict[int, Ep]:
    """Per source, the episode holding its status field when that says it is closed."""
    out: dict[int, Ep] = {}
    for e in eps:
        if e.source_id not in out and status_field(e.content) in TERMINAL_LIFECYCLES:
            out[e.source_id] = e
    return out


def _conflicts(
    inp: Inputs, light: LightResult, counts: Counter[str]
) -> tuple[list[ConflictDraft], dict[int, Contest]]:
    """Find reversals, negations and value conflicts, and the facts each one touches."""
    U = light.units
    stmts: list[tuple[int, conf.Statement]] = []
    for u in range(len(U)):
        if (U.junk[u] and U.claim[u] is None) or not U.feat[u].cues & DECIDE_CUE:
            continue
        stmts.extend((u, st) for st in conf.statements(U.text[u]))
    found = conf.decision_conflicts(stmts, U.first, U.last, U.claim)
    # A change already lined up as a decision ("moved from X to Y" against "use X") is not
    # reported again as the slots it sets.
    decided = [{u for side in fc.sides for u in side} for fc in found]
    found.extend(
        fc
        for fc in _slot_conflicts(light)
        if not any({u for side in fc.sides for u in side} <= d for d in decided)
    )
    # A contradiction already lined up by its slots or its wording is not reported twice.
    seen = {u for fc in found for side in fc.sides for u in side}
    found.extend(
        fc
        for fc in _wording_conflicts(inp, light, counts)
        if all(seen.isdisjoint(side) for side in fc.sides)
    )
    marks = _Marks()
    drafts = [_draft(inp, light, k, fc, marks) for k, fc in enumerate(found)]
    counts["conflicts"] = len(drafts)
    for kind in ("value", "reversal", "negation"):
        counts[f"conflicts_{kind}"] = sum(1 for d in drafts if d.kind == kind)
    return drafts, marks.freeze()


def _slot_conflicts(light: LightResult) -> list[conf.Found]:
    """Statements setting one subject's attribute to values that cannot both hold."""
    U = light.units
    units: list[int] = []
    read: list[list[slots.Slot]] = []
    for u in range(len(U)):
        text = U.text[u]
        if U.junk[u] and U.claim[u] is None:
            continue
        if not slots.may_set(text, U.feat[u]):
            continue
        units.append(u)
        read.append(slots.slots(display_text(text)))
    # A replacement ("replaced X with Y in P") is against what other sentences say P holds.
    left = slots.replaced_in(read)
    if left:
        for n, u in enumerate(units):
            if "/" in U.text[u] and not any(s.was for s in read[n]):
                read[n] += slots.mentions(display_text(U.text[u]), left)
    items = [u for u, got in zip(units, read, strict=True) if got]
    read = [got for got in read if got]
    out: list[conf.Found] = []
    facts, unit_fact = light.facts, light.unit_fact
    for clash in slots.clashes(read):
        stated = [{items[i] for i in side} for side in clash.sides]
        taken = set().union(*stated)
        sides: list[list[int]] = []
        reps: list[int] = []
        for units in stated:
            # A side is every restatement of its fact, also the wordings that name the
            # value without the slot's grammar ("db-2 is our staging DB, Postgres 16"),
            # but never a sentence another side already holds.
            more = {v for u in units if unit_fact[u] >= 0 for v in facts[unit_fact[u]].units}
            more -= taken
            taken |= more
            for side in conf.split_claims(sorted(units | more), U.claim):
                sides.append(side)
                # The side is shown in a sentence that states its value in the slot.
                reps.append(min(units.intersection(side) or side, key=lambda u: (-U.weight[u], u)))
        if not any(U.eps[u] for side in sides for u in side):
            continue  # approved claims alone: nothing new was said
        order = sorted(range(len(sides)), key=lambda n: (_said_first(U, sides[n]), sides[n]))
        sides, reps = [sides[n] for n in order], [reps[n] for n in order]
        shared = frozenset.intersection(
            *(frozenset(t for u in side for t in U.feat[u].subject) for side in sides)
        )
        subject = label(shared, U, sides) if shared else clash.attribute
        claims = [conf.claim_of(side, U.claim) for side in sides]
        out.append(conf.Found("value", subject, sides, claims, reps))
    return out


def _wording_conflicts(inp: Inputs, light: LightResult, counts: Counter[str]) -> list[conf.Found]:
    """Disagreements between paraphrase neighbours (disputes.py), one per dispute."""
    U, items, near = light.units, light.para_items, light.para_near
    feat, text, u_first = U.feat, U.text, U.first
    # Only a block with a number, a denial or a change cue can take a side that
    # differs; the cheap tests skip the rest without reading them.
    cued = [
        x
        for x in range(len(items))
        if near[x] and any(feat[u].negated or disputes.may_disagree(text[u]) for u in items[x])
    ]
    if not cued:
        return []
    read: dict[int, disputes.Said] = {}
    # People are not choices: the authors of episodes and the speakers who open a
    # block with their name ("Ann: …").
    people = {e.actor.split(":", 1)[-1].lower() for e in inp.eps}
    people.update(n for it in items if (n := disputes.speaker(text[it[0]])))
    people_set = frozenset(people)
    # Names seen where a capital is evidence (mid-sentence, CamelCase): the same word
    # opening a clause elsewhere is that name too.
    known = frozenset().union(*(f.names for f in feat)) - people_set

    def said(x: int) -> disputes.Said:
        got = read.get(x)
        if got is None:
            units = items[x]
            got = read[x] = disputes.said(
                [text[u] for u in units],
                [feat[u] for u in units],
                u_first[units[0]],
                people_set,
                known,
            )
        return got

    # Sentences are compared term by term (as ``disputes`` reads them), so rarity is
    # counted per term.
    index = TermIndex.of([frozenset(term(t) for u in it for t in feat[u].subject) for it in items])
    tested = sum(1 for x in cued if said(x).switches or said(x).denials)
    bar = disputes.sentence_bar(index.n, tested) * inp.policy.paraphrase_factor
    ops: list[disputes.Opposition] = []
    for x in cued:
        closest = sorted(near[x], key=lambda ys: (-ys[1], ys[0]))
        others = [(y, said(y)) for y, _ in closest]
        ops.extend(disputes.oppositions(x, said(x), others, index.idf, bar))
    ops.extend(disputes.same_slot_changes([(x, a) for x in cued if (a := said(x)).quantities]))
    out: list[conf.Found] = []
    for d in disputes.disputes(ops, read):
        sides = [sorted({u for b in bs for u in items[b]}) for bs, _ in d.sides]
        shared = frozenset.intersection(
            *(frozenset(t for u in side for t in feat[u].subject) for side in sides)
        )
        reps = [items[b][k] for _, (b, k) in d.sides]
        out.append(conf.Found(d.kind, label(shared, U, sides), sides, [None] * len(sides), reps))
    counts["conflicts_across_wordings"] = len(out)
    return out


# An approved claim has no date of its own: it sorts before everything said since.
_FAR = datetime.min.replace(tzinfo=UTC)


def _said_first(U: Units, side: list[int]) -> datetime:
    return min((t for u in side if (t := U.first[u]) is not None), default=_FAR)


class _Marks:
    """The contests being collected, conflict by conflict (frozen when REM is done)."""

    def __init__(self) -> None:
        self.contradict: dict[int, list[int]] = {}
        self.conflicts: dict[int, list[int]] = {}
        self.kind: dict[int, str] = {}
        self.claim_opposed: set[int] = set()

    def freeze(self) -> dict[int, Contest]:
        return {
            ci: Contest(
                frozenset(self.contradict.get(ci, ())),
                tuple(ks),
                self.kind.get(ci),
                ci in self.claim_opposed,
            )
            for ci, ks in self.conflicts.items()
        }


def _draft(inp: Inputs, light: LightResult, k: int, fc: conf.Found, marks: _Marks) -> ConflictDraft:
    """Write conflict ``k`` as a draft, and mark the facts on its sides."""
    U, eps, unit_fact = light.units, inp.eps, light.unit_fact
    sides = []
    for n, (side, claim_id) in enumerate(zip(fc.sides, fc.claims, strict=True)):
        if fc.reps:
            rep = fc.reps[n]  # the sentence that states this side's position
        else:
            rep = min(side, key=lambda u: (U.junk[u] is not None, -U.weight[u], u))
        side_eps = sorted({eps[i].id for u in side for i in U.eps[u]})
        text = trim_snippet(display_text(U.text[rep], inp.people), inp.policy.snippet_max_chars)
        sides.append(ConflictSide(text, tuple(side_eps), claim_id))
    side_keys = [s.text if s.claim_id is None else f"claim:{s.claim_id}" for s in sides]
    # A reader gets the subject in the sides' own words ("Sync interval"), not a term
    # label; a decision's reversal already names its scope ("for the order queue"). The
    # key stays on the label, so a recorded conflict is recognised on the next sweep.
    shown = None
    if fc.kind != "reversal" or fc.reps:
        shared = frozenset.intersection(
            *(frozenset(t for u in side for t in U.feat[u].subject) for side in fc.sides)
        )
        shown = next(filter(None, (section_name(s.text, shared) for s in sides)), None)
    draft = ConflictDraft(
        shown or fc.subject, fc.kind, sides, conf.conflict_key(fc.kind, fc.subject, side_keys)
    )
    # Tell every fact on a side which episodes contradict it; its own side is the
    # newest side it has sentences on.
    side_facts = [{unit_fact[u] for u in side if unit_fact[u] >= 0} for side in fc.sides]
    floor = datetime.min.replace(tzinfo=UTC)
    side_time = [max((U.last[u] or floor for u in side), default=floor) for side in fc.sides]
    for ci in sorted(set().union(*side_facts)):
        mine = [s for s, cl in enumerate(side_facts) if ci in cl]
        own = max(mine, key=lambda s: (side_time[s], s))
        marks.conflicts.setdefault(ci, []).append(k)
        if marks.kind.get(ci) not in ("value", "negation"):
            marks.kind[ci] = fc.kind
        contradict = marks.contradict.setdefault(ci, [])
        for s, side in enumerate(fc.sides):
            if s == own:
                continue
            for u in side:
                contradict.extend(U.eps[u])
                if U.claim[u] is not None and unit_fact[u] == ci:
                    marks.claim_opposed.add(ci)
    return draft


def _themes(inp: Inputs, light: LightResult) -> list[Theme]:
    """Find subjects and terms that recur across days (risk-flagged material excluded)."""
    U, policy, ep_day = light.units, inp.policy, inp.ep_day
    flagged = [bool(e.risk_flags) for e in inp.eps]
    subject_themes = []
    need = policy.theme_min_days
    for ci, c in enumerate(light.facts):
        if sum(len(U.eps[u]) for u in c.units) < need:
            continue  # too few episodes to span enough days
        eps_c = {i for u in c.units for i in U.eps[u]}
        if not eps_c or any(map(flagged.__getitem__, eps_c)):
            continue
        days = len({ep_day[i] for i in eps_c})
        if days >= policy.theme_min_days and (c.label or light.core(ci)):
            name = c.label if c.kind == "theme" else label(light.core(ci), U, [c.units])
            subject_themes.append((days, len(eps_c), name))
    subject_themes.sort(key=lambda t: (-t[0], -t[1], t[2]))
    themes = [Theme(lbl, "subject", d, m) for d, m, lbl in subject_themes[: policy.max_themes]]
    room = policy.max_themes - len(themes)
    if room > 0:
        units = [
            u
            for u in range(len(U))
            if U.eps[u] and not U.junk[u] and not any(map(flagged.__getitem__, U.eps[u]))
        ]
        themes.extend(
            term_themes(
                [tuple(U.feat[u].subject) for u in units],
                [sorted({ep_day[i] for i in U.eps[u]}) for u in units],
                [len(U.eps[u]) for u in units],
                policy.theme_min_days,
                room,
            )
        )
    return themes
