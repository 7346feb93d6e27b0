"""Light, second half: group the sentence units into facts.

* **fact** — units with the same subject, identity and value; one candidate each.
  Sentences stating the same host + product + version are one fact outright (entity
  anchors, see ``cluster``), however much else each of them says; near-identical
  wordings group by subject (``cluster.subject_groups``); what they leave alone is
  grouped by paraphrase, block by block (``similar``).
* **procedure** — a numbered list of steps and the runs of it logged step by step, matched
  step by step (``procedure``): one RUNBOOKS candidate, every run its evidence.
* **recurring theme** — an identifier the logs keep calling a problem again ("flaky",
  "again", "still") on several days (``reflect.recurring_identifiers``): one candidate
  holding every mention, with the lifecycle of the ticket opened for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import disputes
from .cluster import TICKET_RE, fact_anchor, may_anchor, split_by_value, subject_groups
from .dedupe import Identity, TokenHasher
from .facts import Block, Fact, Inputs, Special, Units
from .procedure import Instance, same_procedures
from .reflect import recurring_identifiers
from .similar import TermIndex, block_terms, neighbours, star_groups
from .text import _EMPTY, Features


@dataclass(frozen=True, slots=True)
class Grouped:
    """The facts, and what REM needs to know about how they were found."""

    facts: list[Fact]
    group_parts: list[list[int]]  # subject group -> its facts
    special: list[int]  # the facts that are procedures or recurring themes
    unit_fact: list[int]
    identity: Identity
    para_items: list[Block]
    para_near: list[list[tuple[int, float]]]


def group(
    inp: Inputs,
    U: Units,
    instances: Sequence[Instance],
    blocks: Sequence[Block],
    hasher: TokenHasher,
    counts: Counter[str],
) -> Grouped:
    """Group units by subject under the identity guard, then split facts by value.

    Procedures (procedure.py) and recurring themes (reflect.py) are taken out first:
    each is one candidate however many facts its sentences would otherwise make.
    """
    identity = Identity.of(U.feat, hasher)
    active = [u for u in range(len(U)) if not U.junk[u] and U.feat[u].subject]
    special = _procedures(instances, U, inp.policy.authority_trust)
    if special:
        done = {u for c in special for u in c.units}
        active = [u for u in active if u not in done]
    themes = _recurring(inp, U, active)
    if themes:
        done = {u for c in themes for u in c.units}
        active = [u for u in active if u not in done]
        special += themes
    # Near-identical wordings first: entity anchors (see cluster.py) and subject
    # groups at Jaccard >= cluster_jaccard, split by value as before. What they
    # leave alone is grouped by paraphrase (similar.py), block by block.
    by_subject: dict[tuple[str, str, frozenset[str]], list[int]] = {}
    anchor_values: dict[int, frozenset[str]] = {}
    for u in active:
        if may_anchor(U.feat[u]):
            a = fact_anchor(U.text[u])
            if a is not None:
                anchor_values[u] = a.values
                by_subject.setdefault(a.subject, []).append(u)
    anchored = [units for units in by_subject.values() if len(units) > 1]
    taken = {u for units in anchored for u in units}
    rest = [u for u in active if u not in taken] if taken else active
    sg = subject_groups(
        [U.feat[u] for u in rest],
        inp.policy.cluster_jaccard,
        hasher,
        identity.take(np.asarray(rest, dtype=np.int64)),
    )
    lexical = [[rest[m] for m in members] for members in sg if len(members) > 1]
    lexical += anchored
    done = {u for g in lexical for u in g}
    para, para_items, para_near = _paraphrase_groups(
        inp, U, blocks, [u for u in active if u not in done]
    )
    groups = [units for units, _ in para] + lexical
    block_of = {units[0]: blks for units, blks in para}
    groups += [c.units for c in special]
    groups.sort(key=lambda g: g[0])  # deterministic: by first member, as before
    special_by_first = {c.units[0]: c for c in special}
    facts: list[Fact] = []
    special_facts: list[int] = []
    group_parts: list[list[int]] = []
    for members in groups:
        idxs = []
        got = special_by_first.get(members[0])
        if got is not None and got.units is members:
            group_parts.append([len(facts)])
            special_facts.append(len(facts))
            facts.append(got)
            continue
        blks = block_of.get(members[0])
        if blks is not None and blks and members[0] not in done:
            # A restated fact is one fact whatever incidental numbers each wording
            # carries.
            idxs.append(len(facts))
            facts.append(Fact(members, _EMPTY, tuple(blks)))
            group_parts.append(idxs)
            continue
        if members[0] in taken:
            # The anchor's own value and polarity split the facts; a "don't" or a
            # second number elsewhere in a long sentence is not about it.
            parts: dict[frozenset[str], list[int]] = {}
            for u in members:
                parts.setdefault(anchor_values[u], []).append(u)
            split = sorted(parts.items(), key=lambda vp: vp[1][0])
        else:
            split = split_by_value(members, U.feat)
        for values, part in split:
            idxs.append(len(facts))
            facts.append(Fact(part, values))
        group_parts.append(idxs)
    unit_fact = [-1] * len(U)
    for ci, c in enumerate(facts):
        for u in c.units:
            unit_fact[u] = ci
    counts["subjects"] = len(groups)
    counts["anchored_subjects"] = len(anchored)
    counts["paraphrase_groups"] = sum(1 for units, _ in para if len(units) > 1)
    counts["procedures"] = sum(1 for c in special if c.kind == "procedure")
    counts["recurring_themes"] = sum(1 for c in special if c.kind == "theme")
    counts["clusters"] = len(facts)
    return Grouped(facts, group_parts, special_facts, unit_fact, identity, para_items, para_near)


def _procedures(inst: Sequence[Instance], U: Units, authority: float) -> list[Special]:
    """One fact per procedure written out in a reference source, or run at least twice
    (see procedure.py)."""
    out: list[Special] = []
    taken: set[int] = set()
    for group in same_procedures(inst, U.feat, U.text, authority):
        members = [inst[x] for x in group]
        units = sorted(
            {
                u
                for m in members
                for us in m.steps.values()
                for u in us
                if u not in taken and not U.junk[u] and (U.eps[u] or U.claim[u] is not None)
            }
        )
        if not units:
            continue
        taken.update(units)
        # The written procedure (a whole text, most trusted, most steps) speaks for it;
        # the candidate text is that text, so it stays grounded in one episode.
        canon = max(members, key=lambda m: (m.whole is not None, m.trust, len(m.steps)))
        out.append(
            Special(
                units,
                frozenset(),
                kind="procedure",
                text_episode=canon.whole,
                text_units=list(
                    dict.fromkeys(u for k in sorted(canon.steps) for u in canon.steps[k])
                ),
                label=f"{len(canon.steps)} steps",
                # Its evidence is the texts it was written and run in, not every other
                # text that happens to share a step's sentence ("ok.", "smoke ok").
                episodes=sorted({i for m in members for i in m.episodes}),
            )
        )
    return out


def _recurring(inp: Inputs, U: Units, active: list[int]) -> list[Special]:
    """One fact per identifier that keeps coming back (see reflect.py)."""
    ep_day = inp.ep_day
    flagged = [bool(e.risk_flags) for e in inp.eps]
    cand = [
        u
        for u in active
        if U.feat[u].idents and U.eps[u] and not any(map(flagged.__getitem__, U.eps[u]))
    ]
    if not cand:
        return []
    found = recurring_identifiers(
        [U.feat[u].idents for u in cand],
        [U.text[u] for u in cand],
        lambda x: {ep_day[i] for i in U.eps[cand[x]]},
        inp.policy.theme_min_days,
    )
    out: list[Special] = []
    for term, idx in found:
        units = sorted(cand[x] for x in idx)
        # A ticket opened for the problem names the same line of work: closing the
        # ticket closes the theme ("closed OPS-7" after "opened OPS-7: flaky test_login").
        aliases = frozenset(t.lower() for u in units for t in TICKET_RE.findall(U.text[u]))
        out.append(Special(units, frozenset(), kind="theme", label=term, aliases=aliases))
    return out


def _paraphrase_groups(
    inp: Inputs, U: Units, blocks: Sequence[Block], active: list[int]
) -> tuple[list[tuple[list[int], list[Block]]], list[Block], list[list[tuple[int, float]]]]:
    """Group the blocks that state one fact (similar.py); return each group's units.

    A block (a bullet, a paragraph, a chat turn) is the unit of grouping: a fact is
    often spread over its sentences ("Decided: reports stay weekly. No daily digest
    this year."), and its terms together say what the block is about. Also returns the
    blocks and each one's looser neighbours, which REM compares for conflicts.
    """
    feat = U.feat
    live = set(active)
    items: dict[Block, None] = {}
    box = U.checkbox
    for b in blocks:
        for run in _same_things(tuple(u for u in b if u in live), feat):
            if len(run) > 1 and any(box[u] for u in run):
                # A checkbox ticks its own item, not the sentences after it.
                for u in run:
                    items.setdefault((u,), None)
            else:
                items.setdefault(run, None)
    seen = {u for it in items for u in it}
    for u in active:
        if u not in seen:
            items.setdefault((u,), None)
    item_units = list(items)
    term_sets = block_terms([[feat[u] for u in it] for it in item_units])
    index = TermIndex.of(term_sets)
    factor = inp.policy.paraphrase_factor
    # One pass finds the looser neighbours the conflicts phase compares (a statement
    # that replaces a choice shares less with the old one than a restatement does);
    # grouping keeps only the restatements.
    loose = neighbours(term_sets, index, factor * disputes.LOOSER)
    bar = index.threshold * factor
    near = [[(y, sim) for y, sim in ys if sim >= bar] for ys in loose]
    hosts = [frozenset().union(*(feat[u].hosts for u in it)) for it in item_units]
    envs = [frozenset().union(*(feat[u].envs for u in it)) for it in item_units]

    def compatible(a: int, b: int) -> bool:
        # Two hosts or two environments are two things, however alike the wording;
        # a block that also mentions another one in passing still shares the first.
        return (not hosts[a] or not hosts[b] or not hosts[a].isdisjoint(hosts[b])) and (
            not envs[a] or not envs[b] or not envs[a].isdisjoint(envs[b])
        )

    trust = U.trust
    prefer = [max(trust[u] for u in it) for it in item_units]
    groups: list[tuple[list[int], list[Block]]] = []
    taken: set[int] = set()
    for members in star_groups(len(item_units), near, compatible, prefer):
        units = [u for m in members for u in item_units[m] if u not in taken]
        units = list(dict.fromkeys(units))
        if len(members) == 1:
            # A block nothing restates: its sentences stay the separate facts they
            # were, so one sentence's marker or value does not speak for the others.
            groups.extend(([u], []) for u in units)
        elif units:
            groups.append((sorted(units), [item_units[m] for m in members]))
        taken.update(units)
    return groups, item_units, loose


def _same_things(units: Block, feat: Sequence[Features]) -> list[Block]:
    """Split a block where its sentences turn to another host or environment.

    "Staging runs on Engine 16, box is ledger-stg-2. Prod DB is ledger-prod-1." states two
    facts about two things; grouped as one block it would join restatements of both.
    """
    runs: list[Block] = []
    cur: list[int] = []
    hosts: frozenset[str] = frozenset()
    envs: frozenset[str] = frozenset()
    for u in units:
        f = feat[u]
        clash = (f.hosts and hosts and f.hosts != hosts) or (f.envs and envs and f.envs != envs)
        if clash and cur:
            runs.append(tuple(cur))
            cur, hosts, envs = [], frozenset(), frozenset()
        cur.append(u)
        hosts = hosts or f.hosts
        envs = envs or f.envs
    if cur:
        runs.append(tuple(cur))
    return runs
