"""Light: read the texts, fold duplicates, cut them into sentence units, group facts.

Exact duplicates (same normalised text) and near duplicates (MinHash, identity-guarded)
fold into one group whose members all stay evidence; each distinct sentence of a
group's representative becomes one unit, and so does each sentence of an approved
claim. Grouping the units into facts is the second half of Light (``grouping``).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from . import grouping
from .blocks import blocks, sentences
from .clauses import statements
from .dedupe import Identity, TokenHasher, exact_groups, near_duplicate_groups
from .facts import Block, Clock, CoreTerms, Fact, Inputs, Units
from .procedure import MIN_STEPS, Instance, chain_labelled, step_label
from .text import _EMPTY, Features, analyse, intern_set
from .types import Ep
from .wording import junk_reason
from .worth import place_code, plan_episodes, plan_sections

_MAX_SENTENCES_PER_EPISODE = 40  # a pasted page must not dominate a sweep's cost


@dataclass(frozen=True, slots=True)
class LightResult:
    """What Light hands on to REM, Deep and the diary."""

    units: Units
    facts: Sequence[Fact]
    core: CoreTerms  # each fact's core subject terms, on demand
    group_parts: Sequence[Sequence[int]]  # subject group -> its facts (one per value)
    special: Sequence[int]  # the facts that are procedures or recurring themes
    unit_fact: Sequence[int]  # unit -> its fact, -1 when it is in none (junk)
    identity: Identity  # per unit: hashes of its hosts, environments, values …
    # The paraphrase step's blocks and their loose neighbours (see rem's conflicts).
    para_items: Sequence[Block]
    para_near: Sequence[Sequence[tuple[int, float]]]
    ep_group: Sequence[int]  # episode -> its duplicate group, -1 when set aside
    group_units: Sequence[Sequence[int]]  # duplicate group -> the units it says
    aside: Mapping[int, str]  # episode -> why it was set aside before any unit was made
    counts: Mapping[str, int]


def run(inp: Inputs, clock: Clock) -> LightResult:
    counts: Counter[str] = Counter()
    hasher = TokenHasher()
    with clock("light.normalise"):
        read = _normalise(inp, counts)
    with clock("light.dedupe"):
        dup = _dedupe(inp, read, hasher, counts)
    with clock("light.units"):
        built = _build_units(inp, read, dup, counts)
        del read  # the texts' sentences are the largest transient of the sweep
    with clock("light.cluster"):
        got = grouping.group(inp, built.units, built.instances, built.blocks, hasher, counts)
    return LightResult(
        units=built.units,
        facts=got.facts,
        core=CoreTerms(got.facts, built.units.feat),
        group_parts=got.group_parts,
        special=got.special,
        unit_fact=got.unit_fact,
        identity=got.identity,
        para_items=got.para_items,
        para_near=got.para_near,
        ep_group=dup.ep_group,
        group_units=built.group_units,
        aside=dup.aside,
        counts=counts,
    )


# (sentence, sentence id, checkbox, heading, code, run number, place code): a run is
# the sentences of one block that state one fact (see ``clauses.statements``)
_Row = tuple[str, int, str | None, bool, bool, int, int]


@dataclass(frozen=True, slots=True)
class _Read:
    """Every distinct text, cut into sentences (each distinct sentence analysed once)."""

    aside: dict[int, str]
    exact: list[list[int]]  # exact-duplicate groups of episode indices, best first
    sent_feats: list[Features]
    rep_sents: list[list[_Row]]  # exact group -> its text's sentences
    rep_steps: dict[int, list[tuple[int, int, bool]]]  # exact group -> (row, step, numbered?)
    rep_members: np.ndarray  # sentence ids of every text, concatenated
    rep_offsets: np.ndarray


@dataclass(frozen=True, slots=True)
class _Dups:
    """Episodes folded into duplicate groups (exact, then near)."""

    aside: dict[int, str]
    groups: list[list[int]]  # episode indices, representative first
    group_rep: list[int]  # the exact group whose text represents each group
    ep_group: list[int]


def _rep_order(eps: Sequence[Ep]) -> Callable[[int], tuple[float, int]]:
    def key(i: int) -> tuple[float, int]:
        return (-eps[i].source_trust, i)  # most trusted, then earliest, represents

    return key


def _normalise(inp: Inputs, counts: Counter[str]) -> _Read:
    """Fold exact duplicates and analyse each distinct text's sentences once."""
    aside, exact = _exact_duplicates(inp.eps, counts)
    return _analyse_texts(inp.eps, aside, exact)


def _exact_duplicates(
    eps: Sequence[Ep], counts: Counter[str]
) -> tuple[dict[int, str], list[list[int]]]:
    """The episodes set aside unread (with why), and the rest in groups of the same text,
    each group led by its representative."""
    aside: dict[int, str] = {}
    keys: list[str] = []
    live_idx: list[int] = []
    for i, e in enumerate(eps):
        if e.memory_type == "handoff-only":
            aside[i] = "handoff-only"
            continue
        if e.kind == "tool_call":
            # What a command printed is a record of one run, never a claim about the
            # project; the prose around it is a log entry of its own.
            aside[i] = "junk:tool_output"
            continue
        # Whitespace and case only: cheap, and anything subtler (a different timestamp
        # prefix, a bullet) is the near-duplicate pass's job.
        key = " ".join(e.content.lower().split())
        if not key:
            aside[i] = "junk:empty"
            continue
        keys.append(key)
        live_idx.append(i)
    counts["handoff_only"] = sum(1 for r in aside.values() if r == "handoff-only")
    rep_order = _rep_order(eps)
    exact = [sorted((live_idx[j] for j in g), key=rep_order) for g in exact_groups(keys)]
    del keys  # the normalised texts are the largest transient of the sweep
    exact.sort(key=lambda g: g[0])
    counts["exact_duplicates"] = sum(len(g) - 1 for g in exact)
    return aside, exact


def _analyse_texts(eps: Sequence[Ep], aside: dict[int, str], exact: list[list[int]]) -> _Read:
    """Each distinct sentence is analysed once; a text is the list of its sentences."""
    index: dict[str, int] = {}
    feats: list[Features] = []
    rep_sents: list[list[_Row]] = []
    members: list[int] = []  # sentence ids of every text, concatenated
    offsets = [0]
    limit = _MAX_SENTENCES_PER_EPISODE
    get = index.get
    rep_steps: dict[int, list[tuple[int, int, bool]]] = {}
    planned = plan_episodes(eps)
    for gi, g in enumerate(exact):
        rows: list[_Row] = []
        kind = eps[g[0]].kind
        parts = blocks(eps[g[0]].content)
        prose = sum(1 for b in parts if not b.heading and not b.code)
        plans = plan_sections(parts)
        in_plan = g[0] in planned
        # the nearest heading above, in its text or else where its source put it
        above: str | None = eps[g[0]].section.rpartition(" > ")[2] or None
        seen_prose = False
        part = -1
        for bno, (text, heading, box, code, number, item) in enumerate(parts):
            start = len(rows)
            # "tep " is in every "step N"/"Step N" label; most blocks skip the regex.
            if number or heading or code or text.find("tep ", 0, 18) < 0:
                step = number
            else:
                step = step_label(text)
            # A heading or a block of tool output is one unit: splitting it into
            # "sentences" would only make more junk to carry around. A procedure's step
            # is matched against other runs of it as written, so its clauses stay whole.
            if heading or code:
                said = [[text]]
            elif step:
                said = [sentences(text)]
            else:
                said = statements(text)
            k = 0
            for run in said:
                part += 1  # the sentences of one run are grouped as one block
                for s in run:
                    si = get(s)
                    if si is None:
                        si = index[s] = len(feats)
                        feats.append(analyse(s))
                    at = place_code(
                        kind=kind,
                        item=item,
                        number=number,
                        checkbox=box,
                        heading=above,
                        first_sentence=k == 0,
                        first_block=not seen_prose,
                        one_block=prose == 1,
                        plan=plans[bno] or in_plan,
                    )
                    rows.append((s, si, box, heading, code, part, at))
                    k += 1
                    box = None  # a checkbox marks its item's first sentence, not the rest
            if heading:
                above = text
            elif not code:
                seen_prose = True
            if step:  # every sentence of a procedure step belongs to that step
                rep_steps.setdefault(gi, []).extend(
                    (r, step, number > 0) for r in range(start, min(len(rows), limit))
                )
            if len(rows) >= limit:
                del rows[limit:]
                break
        if not rows:  # nothing readable at all: one empty sentence stands in
            si = index.get("")
            if si is None:
                si = index[""] = len(feats)
                feats.append(analyse(""))
            rows.append(("", si, None, False, False, 0, 0))
        rep_sents.append(rows)
        members.extend([r[1] for r in rows])
        offsets.append(len(members))
    return _Read(
        aside=aside,
        exact=exact,
        sent_feats=feats,
        rep_sents=rep_sents,
        rep_steps=rep_steps,
        rep_members=np.asarray(members, dtype=np.int64),
        rep_offsets=np.asarray(offsets, dtype=np.int64),
    )


def _dedupe(inp: Inputs, read: _Read, hasher: TokenHasher, counts: Counter[str]) -> _Dups:
    """Fold near-duplicate texts (MinHash + LSH + identity guard)."""
    feats = read.sent_feats
    parts = [[feats[r[1]] for r in rows] for rows in read.rep_sents]
    contents = [
        p[0].content if len(p) == 1 else tuple(chain.from_iterable(f.content for f in p))
        for p in parts
    ]
    # Whole-text features are only needed for texts in a verified pair, so they are
    # built lazily; the identity codes for all texts come from a vectorised union.
    identity = Identity.of_unions(feats, read.rep_members, read.rep_offsets, hasher)
    near = near_duplicate_groups(
        contents,
        _LazyUnion(parts),
        inp.policy.near_dup_jaccard,
        hasher,
        identity=identity,
    )
    del contents, parts
    groups: list[list[int]] = []
    group_rep: list[int] = []
    ep_group = [-1] * len(inp.eps)
    exact = read.exact
    rep_order = _rep_order(inp.eps)
    for ng in near:
        if len(ng) == 1:  # the common case: nothing folded into this text
            members, rep = exact[ng[0]], ng[0]
        else:
            members = sorted((i for gi in ng for i in exact[gi]), key=rep_order)
            rep = min(ng, key=lambda gi: rep_order(exact[gi][0]))
        gidx = len(groups)
        groups.append(members)
        group_rep.append(rep)
        for i in members:
            ep_group[i] = gidx
    counts["near_duplicates"] = sum(len(ng) - 1 for ng in near)
    counts["duplicates_folded"] = counts["exact_duplicates"] + counts["near_duplicates"]
    return _Dups(read.aside, groups, group_rep, ep_group)


@dataclass(frozen=True, slots=True)
class _Built:
    """The units, and what grouping needs to know about where they were written."""

    units: Units
    group_units: list[list[int]]  # duplicate group -> its units
    instances: list[Instance]  # procedures written or run, step by step
    blocks: list[Block]  # each distinct block (a bullet, a paragraph, a turn) as units


def _build_units(inp: Inputs, read: _Read, dup: _Dups, counts: Counter[str]) -> _Built:
    """Turn each group's sentences into units (one per distinct sentence)."""
    eps = inp.eps
    text: list[str] = []
    feat: list[Features] = []
    u_eps: list[list[int]] = []
    claim: list[int | None] = []
    junk: list[str | None] = []
    checkbox: list[str | None] = []
    place = array("H")

    def add(
        s: str, f: Features, claim_id: int | None, why: str | None, box: str | None, at: int = 0
    ) -> int:
        text.append(s)
        feat.append(f)
        u_eps.append([])
        claim.append(claim_id)
        junk.append(why)
        checkbox.append(box)
        place.append(at)
        return len(text) - 1

    unit_of: dict[str, int] = {}
    group_units: list[list[int]] = []
    step_units: set[int] = set()
    instances: list[Instance] = []
    fragments: list[tuple[int, int, float, int, list[int], list[int]]] = []
    rep_steps = read.rep_steps
    # Each distinct block (a bullet, a paragraph, a turn) as its sentences' units, in
    # order: a fact is usually stated across the sentences of one block.
    blocks_seen: dict[Block, None] = {}
    for gidx, members in enumerate(dup.groups):
        mine: list[int] = []
        # Which unit each sentence became, kept only for the rare text holding steps.
        steps_at = rep_steps.get(dup.group_rep[gidx]) if rep_steps else None
        row_unit: list[int] | None = [] if steps_at else None
        block_no, block = -1, []
        for s, si, box, heading, code, run, at in read.rep_sents[dup.group_rep[gidx]]:
            if run != block_no:
                if block:
                    blocks_seen.setdefault(tuple(block), None)
                block_no, block = run, []
            # Tool output shares no unit with prose that happens to read the same.
            key = "\x00" + s if code else s
            u = None if heading else unit_of.get(key)
            if u is None:
                f = read.sent_feats[si]
                u = add(s, f, None, junk_reason(s, f, heading, code), box, at)
                if not heading:
                    unit_of[key] = u
            if row_unit is not None:
                row_unit.append(u)
            if not heading and not code and u not in block:
                block.append(u)
            if u in mine:
                continue  # the same sentence twice in one text counts once
            u_eps[u].extend(members)
            mine.append(u)
        if block:
            blocks_seen.setdefault(tuple(block), None)
        group_units.append(mine)
        if steps_at and row_unit is not None:
            _collect_steps(inp, steps_at, row_unit, members, instances, fragments, step_units)
    _add_claims(inp, add, blocks_seen, instances)
    fragments.sort(key=lambda f: (f[1], min(f[5])))
    instances.extend(chain_labelled(fragments))
    counts["sentences"] = len(text)
    counts["junk_sentences"] = sum(1 for j in junk if j)
    units = _as_units(eps, text, feat, u_eps, claim, junk, checkbox, place, step_units)
    return _Built(units, group_units, instances, list(blocks_seen))


def _add_claims(
    inp: Inputs,
    add: Callable[..., int],
    blocks_seen: dict[Block, None],
    instances: list[Instance],
) -> None:
    """The approved claims' sentences as units of their own, so a fact seen again can
    reinforce the claim that states it."""
    for c in inp.claims:
        steps: dict[int, list[int]] = {}
        claim_block: list[int] = []
        for b in blocks(c.text):
            # Cut as the material is, so a clause seen again reinforces the claim.
            said = [sentences(b.text)] if b.number else statements(b.text)
            for s in (s for run in said for s in run):
                f = analyse(s)
                if f.subject:
                    u = add(s, f, c.id, None, None)
                    claim_block.append(u)
                    if b.number:
                        steps.setdefault(b.number, []).append(u)
        if claim_block:  # a claim is one statement, whatever blocks it spans
            blocks_seen.setdefault(tuple(claim_block), None)
        if len(steps) >= MIN_STEPS:  # an approved runbook: runs of it reinforce it
            instances.append(Instance(steps, [], 1.0))


def _as_units(
    eps: Sequence[Ep],
    text: list[str],
    feat: list[Features],
    u_eps: list[list[int]],
    claim: list[int | None],
    junk: list[str | None],
    checkbox: list[str | None],
    place: array,
    step_units: set[int],
) -> Units:
    for x in u_eps:
        if len(x) > 1:
            x[:] = sorted(set(x))
    trust = [e.source_trust for e in eps]
    return Units(
        text=text,
        feat=feat,
        eps=u_eps,
        claim=claim,
        junk=junk,
        checkbox=checkbox,
        place=place,
        # Episode indices follow time order, so a unit's sorted episode list starts at
        # its first occurrence and ends at its last.
        first=[eps[x[0]].occurred_at if x else None for x in u_eps],
        last=[eps[x[-1]].occurred_at if x else None for x in u_eps],
        trust=[max(map(trust.__getitem__, x)) if x else 1.0 for x in u_eps],
        weight=[len(x) for x in u_eps],
        steps=frozenset(step_units),
    )


def _collect_steps(
    inp: Inputs,
    steps_at: list[tuple[int, int, bool]],
    row_unit: list[int],
    members: list[int],
    instances: list[Instance],
    fragments: list[tuple[int, int, float, int, list[int], list[int]]],
    step_units: set[int],
) -> None:
    """Turn one text's numbered items into an instance, or its "step N" into a fragment."""
    steps: dict[int, list[int]] = {}
    numbered: set[int] = set()
    for row, step, is_number in steps_at:
        if row < len(row_unit) and row_unit[row] not in steps.get(step, ()):
            steps.setdefault(step, []).append(row_unit[row])
        if is_number:
            numbered.add(step)
            if row < len(row_unit):
                step_units.add(row_unit[row])
    rep = members[0]
    trust = max(inp.eps[i].source_trust for i in members)
    if len(numbered) >= MIN_STEPS:
        instances.append(Instance(steps, list(members), trust, rep))
    elif len(steps) == 1 and not numbered:
        ((step, units),) = steps.items()
        e = inp.eps[rep]
        t = int(e.occurred_at.timestamp())
        fragments.append((e.source_id, t, trust, step, units, list(members)))


class _LazyUnion(Sequence[Features]):
    """Whole-text features, each combined from its sentences only when first read."""

    def __init__(self, parts: list[list[Features]]) -> None:
        self._parts = parts
        self._done: dict[int, Features] = {}

    def __len__(self) -> int:
        return len(self._parts)

    def __getitem__(self, i):  # type: ignore[override]
        got = self._done.get(i)
        if got is None:
            part = self._parts[i]
            got = self._done[i] = part[0] if len(part) == 1 else _aggregate(part)
        return got


def _aggregate(feats: Sequence[Features]) -> Features:
    """Combine sentence features into whole-episode features for the near-duplicate pass.

    Only what that pass reads is combined (content and identity); the subject union is
    left empty because episodes are never clustered by subject, sentences are.
    """
    content: list[str] = []
    words = 0
    stops = 0.0
    sets: list[set[str] | None] = [None] * 5
    cues = 0
    for f in feats:
        content.extend(f.content)
        words += f.words
        stops += f.stop_ratio * f.words
        cues |= f.cues
        for k, part in enumerate((f.values, f.hosts, f.envs, f.idents, f.names)):
            if part:
                got = sets[k]
                if got is None:
                    sets[k] = set(part)
                else:
                    got |= part
    values, hosts, envs, idents, names = (intern_set(x) if x else _EMPTY for x in sets)
    return Features(
        words=words,
        content=tuple(content),
        subject=_EMPTY,
        values=values,
        hosts=hosts,
        envs=envs,
        idents=idents,
        names=names,
        stop_ratio=stops / words if words else 0.0,
        cues=cues,
    )
