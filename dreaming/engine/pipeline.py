"""One dream sweep: Light (dedupe, cluster) → REM (themes, lifecycle, conflicts) → Deep.

``run_sweep`` is a pure function of its arguments: it reads plain dataclasses, writes
nothing, and returns the same ``SweepResult`` for the same input (every collection is
sorted before it is iterated; hashing is keyed, never Python's salted ``hash``). ``now``
defaults to the newest episode's time rather than the wall clock for the same reason.

Units of work
-------------
* **episode** — what the service stores; exact duplicates (same normalised text) and near
  duplicates (MinHash, identity-guarded) are folded into one group whose members all stay
  evidence.
* **unit** — one distinct sentence of a group's representative (identical sentences in
  different episodes are one unit with all their episodes), or one sentence of an approved
  claim. Claims are clustered with the new material, which is how "seen again" and
  "contradicts what was approved" are found without comparing against every claim.
* **fact cluster** — units with the same subject, identity and value; one candidate each.
  Sentences stating the same host + product + version are one fact outright (entity
  anchors, see ``cluster``), however much else each of them says.
* **procedure** — a numbered list of steps and the runs of it logged step by step, matched
  step by step (``procedure``): one RUNBOOKS candidate, every run its evidence.
* **recurring theme** — an identifier the logs keep calling a problem again ("flaky",
  "again", "still") on several days (``reflect.recurring_identifiers``): one candidate
  holding every mention, with the lifecycle of the ticket opened for it.

Tool output (``tool_call`` episodes, fenced blocks, the lines under a ``$ command``) is
never claim material, nor are attendee lists and sentences leaning on the one before.

Each phase is one method of ``_Sweep`` and is timed on its own (``SweepResult.timings``).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from itertools import chain

import numpy as np

from . import conflicts as conf
from . import disputes
from .cluster import (
    TICKET_RE,
    core_terms,
    fact_anchor,
    may_anchor,
    split_by_value,
    subject_groups,
)
from .consolidate import REDACTION_MARK, SUBJECT_CHARS, Choice, choose, snippet, text_key
from .dedupe import Identity, TokenHasher, exact_groups, near_duplicate_groups
from .policy import Policy
from .procedure import MIN_STEPS, Instance, chain_labelled, same_procedures, step_label
from .reflect import (
    BROAD,
    Event,
    TopicIndex,
    TopicState,
    combine,
    find_marker,
    fold,
    recurring_identifiers,
    term_themes,
)
from .route import Route, route, section_name
from .score import EvidenceView, recall_for, signals, weighted
from .similar import TermIndex, block_terms, neighbours, star_groups, stem, terms_of
from .text import (
    _EMPTY,
    DECIDE_CUE,
    LIFE_CUE,
    Features,
    analyse,
    blocks,
    dated,
    display_text,
    intern_set,
    junk_reason,
    sentences,
    standalone,
    trim_snippet,
)
from .types import (
    TERMINAL_LIFECYCLES,
    ApprovedClaim,
    CandidateDraft,
    ConflictDraft,
    ConflictSide,
    Ep,
    Evidence,
    RecallStats,
    SetAside,
    SweepResult,
    Theme,
)

_MAX_SENTENCES_PER_EPISODE = 40  # a pasted page must not dominate a sweep's cost
_MAX_CONTRADICT_IDS = 50
_Block = tuple[int, ...]  # the units of one block's sentences, in order
# Two sentences longer than this together are no longer one claim read at a glance.
_MAX_PAIR_CHARS = 320


def run_sweep(
    episodes: Iterable[Ep],
    *,
    approved_claims: Iterable[ApprovedClaim] = (),
    recall: dict[int, RecallStats] | None = None,
    policy: Policy | None = None,
    now: datetime | None = None,
    live_episode_ids: set[int] | None = None,
) -> SweepResult:
    """Consolidate a batch of episodes into candidates, conflicts and reinforcements."""
    sweep = _Sweep(episodes, approved_claims, recall or {}, policy or Policy(), now)
    return sweep.run(live_episode_ids)


@dataclass(slots=True)
class _Units:
    """Column store of sentence units (lists, not objects: there are hundreds of thousands)."""

    text: list[str] = field(default_factory=list)
    feat: list[Features] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)  # episode indices, sorted
    claim: list[int | None] = field(default_factory=list)
    junk: list[str | None] = field(default_factory=list)
    checkbox: list[str | None] = field(default_factory=list)

    def add(self, text: str, feat: Features, claim: int | None, junk: str | None, box) -> int:
        self.text.append(text)
        self.feat.append(feat)
        self.eps.append([])
        self.claim.append(claim)
        self.junk.append(junk)
        self.checkbox.append(box)
        return len(self.text) - 1


class _Cluster:
    """One fact: sentences with the same subject, identity and value."""

    __slots__ = (
        "blocks",
        "claim_opposed",
        "conflicts",
        "contested",
        "contradict",
        "group",
        "units",
        "values",
    )
    # What only a procedure or a theme sets (see _Special); plain class attributes, so
    # the hundred thousand ordinary facts of a big sweep carry none of them.
    kind = "fact"
    text_episode: int | None = None
    text_units: Sequence[int] = ()
    label: str | None = None
    aliases: frozenset[str] = frozenset()
    episodes: list[int] | None = None

    # A plain class: there are ~one per sentence, and a dataclass's default factories
    # cost more than the rest of the clustering bookkeeping.
    def __init__(self, units: list[int], group: int, values: frozenset[str]) -> None:
        self.units = units
        self.group = group
        self.values = values
        self.contradict: list[int] = []  # episode indices
        self.conflicts: list[int] = []
        self.contested: str | None = None
        self.claim_opposed = False  # an approved claim in this cluster is on the other side
        self.blocks: list[tuple[int, ...]] = []  # the blocks stating the fact, centre first


class _Special(_Cluster):
    """A procedure or a recurring theme: one candidate for many otherwise separate facts."""

    __slots__ = ("aliases", "episodes", "kind", "label", "text_episode", "text_units")

    def __init__(self, kind: str, units: list[int]) -> None:
        super().__init__(units, -1, frozenset())
        self.kind = kind  # "procedure" | "theme"
        # A procedure's text: the episode it is written out in, else its steps' sentences.
        self.text_episode: int | None = None
        self.text_units: Sequence[int] = ()
        self.label: str | None = None  # a theme's identifier, a procedure's step count
        self.aliases: frozenset[str] = frozenset()  # tickets naming a theme's work
        self.episodes: list[int] | None = None  # fixed evidence (a procedure's texts)


@dataclass(slots=True)
class _Passing:
    """A cluster that passed every gate, waiting for the per-sweep cap."""

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


class _Sweep:
    """The state one sweep builds up, phase by phase."""

    def __init__(
        self,
        episodes: Iterable[Ep],
        claims: Iterable[ApprovedClaim],
        recall: dict[int, RecallStats],
        policy: Policy,
        now: datetime | None,
    ) -> None:
        episodes = list(episodes)
        for e in episodes:
            if e.occurred_at.tzinfo is None:
                raise ValueError(f"episode {e.id}: occurred_at must be timezone-aware (UTC)")
        self.eps = sorted(episodes, key=lambda e: (e.occurred_at, e.id))
        ids = [e.id for e in self.eps]
        if len(set(ids)) != len(ids):
            dup = next(i for i, c in Counter(ids).items() if c > 1)
            raise ValueError(f"episode id {dup} appears more than once in the sweep input")
        self.claims = sorted(claims, key=lambda c: c.id)
        self.recall = recall
        self.policy = policy
        self.now = now or (self.eps[-1].occurred_at if self.eps else datetime.now(UTC))
        # Recency is measured from the newest material swept, not the wall clock: a month
        # of history imported today is not all stale, and its last week is its newest.
        self.recency_ref = min(self.now, self.eps[-1].occurred_at) if self.eps else self.now
        self.n = len(self.eps)
        self.ep_day = [e.occurred_at.date().toordinal() for e in self.eps]
        self.counts: Counter[str] = Counter(episodes_in=self.n, claims_in=len(self.claims))
        self.aside: dict[int, str] = {}  # episode index -> reason decided before clustering
        self.hasher = TokenHasher()
        self.timings: dict[str, float] = {}
        self.U = _Units()
        self.clusters: list[_Cluster] = []
        self.cluster_reason: dict[int, str] = {}
        self._core_half: dict[int, set[str] | frozenset[str]] = {}
        # The paraphrase step's blocks and their loose neighbours (see _wording_conflicts).
        self.para_items: list[_Block] = []
        self.para_near: list[list[tuple[int, float]]] = []

    def core_half(self, ci: int) -> set[str] | frozenset[str]:
        """Subject terms shared by half of a fact's sentences (computed when first asked)."""
        got = self._core_half.get(ci)
        if got is None:
            c = self.clusters[ci]
            units = c.units
            feat = self.U.feat
            if len(units) == 1:
                got = feat[units[0]].subject
            elif c.kind == "fact":
                got = core_terms(units, feat, 0.5)
            else:
                # A procedure's steps and a theme's mentions each say something different;
                # what a quarter of them share is already what they are about.
                got = core_terms(units, feat, 0.25)
            self._core_half[ci] = got
        return got

    def run(self, live: set[int] | None) -> SweepResult:
        """Run every phase in order and assemble the result."""
        phases = [
            ("light.normalise", self.normalise),
            ("light.dedupe", self.dedupe),
            ("light.units", self.build_units),
            ("light.cluster", self.cluster),
            ("rem.lifecycle", self.lifecycle),
            ("rem.conflicts", self.find_conflicts),
            ("rem.themes", self.find_themes),
            ("deep.score", lambda: self.score(live)),
            ("deep.cap", self.cap),
            ("settle", self.settle),
        ]
        for name, phase in phases:
            started = time.perf_counter()
            phase()
            self.timings[name] = round(time.perf_counter() - started, 4)
        self.timings["total"] = round(sum(self.timings.values()), 4)
        return SweepResult(
            candidates=self.candidates,
            reinforced=self.reinforced,
            conflicts=self.conflict_drafts,
            duplicates_folded=self.counts["duplicates_folded"],
            stays_episodic=self.stays,
            counts=dict(sorted(self.counts.items())),
            themes=self.themes,
            diary=self.diary,
            timings=self.timings,
        )

    # ---- Light -------------------------------------------------------------------------

    def _rep_order(self, i: int) -> tuple[float, int]:
        return (-self.eps[i].source_trust, i)  # most trusted, then earliest, represents

    def normalise(self) -> None:
        """Fold exact duplicates and analyse each distinct text's sentences once."""
        eps, aside = self.eps, self.aside
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
        self.counts["handoff_only"] = sum(1 for r in aside.values() if r == "handoff-only")
        exact = [sorted((live_idx[j] for j in g), key=self._rep_order) for g in exact_groups(keys)]
        del keys  # the normalised texts are the largest transient of the sweep
        exact.sort(key=lambda g: g[0])
        self.exact = exact
        self.counts["exact_duplicates"] = sum(len(g) - 1 for g in exact)

        # Each distinct sentence is analysed once; a text is the list of its sentences.
        index: dict[str, int] = {}
        feats: list[Features] = []
        self.sent_feats = feats
        # (sentence, sentence id, checkbox, heading, code) per sentence of each text
        # (sentence, sentence id, checkbox, heading, code, block number) per sentence
        self.rep_sents: list[list[tuple[str, int, str | None, bool, bool, int]]] = []
        members: list[int] = []  # sentence ids of every text, concatenated
        offsets = [0]
        limit = _MAX_SENTENCES_PER_EPISODE
        get = index.get
        # exact group -> (row, step number, numbered?) for texts holding procedure steps
        self.rep_steps: dict[int, list[tuple[int, int, bool]]] = {}
        for gi, g in enumerate(exact):
            rows: list[tuple[str, int, str | None, bool, bool, int]] = []
            for bno, (text, heading, box, code, number) in enumerate(blocks(eps[g[0]].content)):
                start = len(rows)
                # A heading or a block of tool output is one unit: splitting it into
                # "sentences" would only make more junk to carry around.
                for s in (text,) if heading or code else sentences(text):
                    si = get(s)
                    if si is None:
                        si = index[s] = len(feats)
                        feats.append(analyse(s))
                    rows.append((s, si, box, heading, code, bno))
                    box = None  # a checkbox marks its item's first sentence, not the rest
                # "tep " is in every "step N"/"Step N" label; most blocks skip the regex.
                if number or heading or code or text.find("tep ", 0, 18) < 0:
                    step = number
                else:
                    step = step_label(text)
                if step:  # every sentence of a procedure step belongs to that step
                    self.rep_steps.setdefault(gi, []).extend(
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
                rows.append(("", si, None, False, False, 0))
            self.rep_sents.append(rows)
            members.extend([r[1] for r in rows])
            offsets.append(len(members))
        self.rep_members = np.asarray(members, dtype=np.int64)
        self.rep_offsets = np.asarray(offsets, dtype=np.int64)

    def dedupe(self) -> None:
        """Fold near-duplicate texts (MinHash + LSH + identity guard)."""
        feats = self.sent_feats
        parts = [[feats[r[1]] for r in rows] for rows in self.rep_sents]
        contents = [
            p[0].content if len(p) == 1 else tuple(chain.from_iterable(f.content for f in p))
            for p in parts
        ]
        # Whole-text features are only needed for texts in a verified pair, so they are
        # built lazily; the identity codes for all texts come from a vectorised union.
        identity = Identity.of_unions(feats, self.rep_members, self.rep_offsets, self.hasher)
        near = near_duplicate_groups(
            contents,
            _LazyUnion(parts),
            self.policy.near_dup_jaccard,
            self.hasher,
            identity=identity,
        )
        del contents, parts
        self.groups: list[list[int]] = []  # episode indices, representative first
        self.group_rep: list[int] = []  # exact group whose text represents the group
        self.ep_group = [-1] * self.n
        exact = self.exact
        for ng in near:
            if len(ng) == 1:  # the common case: nothing folded into this text
                members, rep = exact[ng[0]], ng[0]
            else:
                members = sorted((i for gi in ng for i in exact[gi]), key=self._rep_order)
                rep = min(ng, key=lambda gi: self._rep_order(exact[gi][0]))
            gidx = len(self.groups)
            self.groups.append(members)
            self.group_rep.append(rep)
            for i in members:
                self.ep_group[i] = gidx
        self.counts["near_duplicates"] = sum(len(ng) - 1 for ng in near)
        self.counts["duplicates_folded"] = (
            self.counts["exact_duplicates"] + self.counts["near_duplicates"]
        )

    def build_units(self) -> None:
        """Turn each group's sentences into units (one per distinct sentence)."""
        U, eps = self.U, self.eps
        unit_of: dict[str, int] = {}
        self.group_units: list[list[int]] = []
        # Units that are items of a numbered list: a step in a procedure, whatever it says.
        self.step_units: set[int] = set()
        instances: list[Instance] = []
        fragments: list[tuple[int, int, float, int, list[int], list[int]]] = []
        rep_steps = self.rep_steps
        # Each distinct block (a bullet, a paragraph, a turn) as its sentences' units, in
        # order: a fact is usually stated across the sentences of one block.
        blocks_seen: dict[tuple[int, ...], None] = {}
        for gidx, members in enumerate(self.groups):
            mine: list[int] = []
            # Which unit each sentence became, kept only for the rare text holding steps.
            steps_at = rep_steps.get(self.group_rep[gidx]) if rep_steps else None
            row_unit: list[int] | None = [] if steps_at else None
            block_no, block = -1, []
            for s, si, box, heading, code, bno in self.rep_sents[self.group_rep[gidx]]:
                if bno != block_no:
                    if block:
                        blocks_seen.setdefault(tuple(block), None)
                    block_no, block = bno, []
                # Tool output shares no unit with prose that happens to read the same.
                key = "\x00" + s if code else s
                u = None if heading else unit_of.get(key)
                if u is None:
                    f = self.sent_feats[si]
                    u = U.add(s, f, None, junk_reason(s, f, heading, code), box)
                    if not heading:
                        unit_of[key] = u
                if row_unit is not None:
                    row_unit.append(u)
                if not heading and not code and u not in block:
                    block.append(u)
                if u in mine:
                    continue  # the same sentence twice in one text counts once
                U.eps[u].extend(members)
                mine.append(u)
            if block:
                blocks_seen.setdefault(tuple(block), None)
            self.group_units.append(mine)
            if steps_at and row_unit is not None:
                self._collect_steps(steps_at, row_unit, members, instances, fragments)
        for c in self.claims:
            steps: dict[int, list[int]] = {}
            claim_block: list[int] = []
            for b in blocks(c.text):
                for s in sentences(b.text):
                    f = analyse(s)
                    if f.subject:
                        u = U.add(s, f, c.id, None, None)
                        claim_block.append(u)
                        if b.number:
                            steps.setdefault(b.number, []).append(u)
            if claim_block:  # a claim is one statement, whatever blocks it spans
                blocks_seen.setdefault(tuple(claim_block), None)
            if len(steps) >= MIN_STEPS:  # an approved runbook: runs of it reinforce it
                instances.append(Instance(steps, [], 1.0))
        fragments.sort(key=lambda f: (f[1], min(f[5])))
        instances.extend(chain_labelled(fragments))
        self.instances = instances
        self.blocks = list(blocks_seen)
        for x in U.eps:
            if len(x) > 1:
                x[:] = sorted(set(x))
        del self.rep_sents, self.rep_steps, self.sent_feats, self.exact
        del self.rep_members, self.rep_offsets
        self.n_units = len(U.text)
        self.counts["sentences"] = self.n_units
        self.counts["junk_sentences"] = sum(1 for j in U.junk if j)
        # Episode indices follow time order, so a unit's sorted episode list starts at its
        # first occurrence and ends at its last.
        self.u_first = [eps[x[0]].occurred_at if x else None for x in U.eps]
        self.u_last = [eps[x[-1]].occurred_at if x else None for x in U.eps]
        trust = [e.source_trust for e in eps]
        self.u_trust = [max(map(trust.__getitem__, x)) if x else 1.0 for x in U.eps]
        self.u_weight = [len(x) for x in U.eps]

    def _collect_steps(
        self,
        steps_at: list[tuple[int, int, bool]],
        row_unit: list[int],
        members: list[int],
        instances: list[Instance],
        fragments: list[tuple[int, int, float, int, list[int], list[int]]],
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
                    self.step_units.add(row_unit[row])
        rep = members[0]
        trust = max(self.eps[i].source_trust for i in members)
        if len(numbered) >= MIN_STEPS:
            instances.append(Instance(steps, list(members), trust, rep))
        elif len(steps) == 1 and not numbered:
            ((step, units),) = steps.items()
            e = self.eps[rep]
            t = int(e.occurred_at.timestamp())
            fragments.append((e.source_id, t, trust, step, units, list(members)))

    def _procedures(self) -> list[_Special]:
        """One cluster per procedure written or run at least twice (see procedure.py)."""
        inst, U = self.instances, self.U
        if len(inst) < 2:
            return []
        out: list[_Special] = []
        taken: set[int] = set()
        for group in same_procedures(inst, U.feat):
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
            c = _Special("procedure", units)
            c.text_episode = canon.whole
            c.text_units = list(
                dict.fromkeys(u for k in sorted(canon.steps) for u in canon.steps[k])
            )
            # Its evidence is the texts it was written and run in, not every other text
            # that happens to share a step's sentence ("ok.", "smoke ok").
            c.episodes = sorted({i for m in members for i in m.episodes})
            c.label = f"{len(canon.steps)} steps"
            out.append(c)
        return out

    def _themes(self, active: list[int]) -> list[_Special]:
        """One cluster per identifier that keeps coming back (see reflect.py)."""
        U, ep_day = self.U, self.ep_day
        flagged = [bool(e.risk_flags) for e in self.eps]
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
            self.policy.theme_min_days,
        )
        out: list[_Special] = []
        for term, idx in found:
            units = sorted(cand[x] for x in idx)
            c = _Special("theme", units)
            c.label = term
            # A ticket opened for the problem names the same line of work: closing the
            # ticket closes the theme ("closed TW-1" after "opened TW-1: flaky test_x").
            c.aliases = frozenset(t.lower() for u in units for t in TICKET_RE.findall(U.text[u]))
            out.append(c)
        return out

    def _paraphrase_groups(self, active: list[int]) -> list[tuple[list[int], list[_Block]]]:
        """Group the blocks that state one fact (similar.py); return each group's units.

        A block (a bullet, a paragraph, a chat turn) is the unit of grouping: a fact is
        often spread over its sentences ("Decided: the app stays a PWA. No native builds
        this year."), and its terms together say what the block is about.
        """
        U = self.U
        feat = U.feat
        live = set(active)
        items: dict[tuple[int, ...], None] = {}
        box = U.checkbox
        for b in self.blocks:
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
        index = TermIndex(term_sets)
        factor = self.policy.paraphrase_factor
        # One pass finds the looser neighbours the conflicts phase compares (a statement
        # that replaces a choice shares less with the old one than a restatement does);
        # grouping keeps only the restatements.
        loose = neighbours(term_sets, index, factor * disputes.LOOSER)
        bar = index.threshold * factor
        near = [[(y, sim) for y, sim in ys if sim >= bar] for ys in loose]
        self.para_items, self.para_near = item_units, loose
        hosts = [frozenset().union(*(feat[u].hosts for u in it)) for it in item_units]
        envs = [frozenset().union(*(feat[u].envs for u in it)) for it in item_units]

        def compatible(a: int, b: int) -> bool:
            # Two hosts or two environments are two things, however alike the wording;
            # a block that also mentions another one in passing still shares the first.
            return (not hosts[a] or not hosts[b] or not hosts[a].isdisjoint(hosts[b])) and (
                not envs[a] or not envs[b] or not envs[a].isdisjoint(envs[b])
            )

        trust = self.u_trust
        prefer = [max(trust[u] for u in it) for it in item_units]
        groups: list[tuple[list[int], list[_Block]]] = []
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
        return groups

    def cluster(self) -> None:
        """Group units by subject under the identity guard, then split facts by value.

        Procedures (procedure.py) and recurring themes (reflect.py) are taken out first:
        each is one candidate however many facts its sentences would otherwise make.
        """
        U = self.U
        self.identity = Identity.of(U.feat, self.hasher)
        active = [u for u in range(self.n_units) if not U.junk[u] and U.feat[u].subject]
        special = self._procedures()
        if special:
            done = {u for c in special for u in c.units}
            active = [u for u in active if u not in done]
        themes = self._themes(active)
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
            self.policy.cluster_jaccard,
            self.hasher,
            self.identity.take(np.asarray(rest, dtype=np.int64)),
        )
        lexical = [[rest[m] for m in members] for members in sg if len(members) > 1]
        lexical += anchored
        done = {u for g in lexical for u in g}
        para = self._paraphrase_groups([u for u in active if u not in done])
        groups = [units for units, _ in para] + lexical
        block_of = {units[0]: blks for units, blks in para}
        groups += [c.units for c in special]
        groups.sort(key=lambda g: g[0])  # deterministic: by first member, as before
        special_by_first = {c.units[0]: c for c in special}
        self.special_clusters: list[int] = []  # cluster indices of procedures and themes
        self.group_parts: list[list[int]] = []  # subject group -> cluster indices
        for gi, members in enumerate(groups):
            idxs = []
            got = special_by_first.get(members[0])
            if got is not None and got.units is members:
                got.group = gi
                self.group_parts.append([len(self.clusters)])
                self.special_clusters.append(len(self.clusters))
                self.clusters.append(got)
                continue
            blks = block_of.get(members[0])
            if blks is not None and blks and members[0] not in done:
                # A restated fact is one fact whatever incidental numbers each wording
                # carries.
                idxs.append(len(self.clusters))
                fact = _Cluster(units=members, group=gi, values=_EMPTY)
                fact.blocks = blks
                self.clusters.append(fact)
                self.group_parts.append(idxs)
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
                idxs.append(len(self.clusters))
                self.clusters.append(_Cluster(units=part, group=gi, values=values))
            self.group_parts.append(idxs)
        self.unit_cluster = [-1] * self.n_units
        for ci, c in enumerate(self.clusters):
            for u in c.units:
                self.unit_cluster[u] = ci
        self.counts["subjects"] = len(groups)
        self.counts["anchored_subjects"] = len(anchored)
        self.counts["paraphrase_groups"] = sum(1 for units, _ in para if len(units) > 1)
        self.counts["procedures"] = sum(1 for c in special if c.kind == "procedure")
        self.counts["recurring_themes"] = sum(1 for c in special if c.kind == "theme")
        self.counts["clusters"] = len(self.clusters)

    # ---- REM ---------------------------------------------------------------------------

    def lifecycle(self) -> None:
        """Find lifecycle markers and the state each fact's topic is in."""
        U, eps, clusters = self.U, self.eps, self.clusters
        core_third = [
            U.feat[c.units[0]].subject if len(c.units) == 1 else core_terms(c.units, U.feat, 1 / 3)
            for c in clusters
        ]
        events: list[Event] = []
        for u in range(self.n_units):
            if not U.eps[u] or not (U.feat[u].cues & LIFE_CUE or U.checkbox[u]):
                continue
            marker = find_marker(U.text[u], U.checkbox[u])
            if marker is not None:
                last = eps[U.eps[u][-1]]
                events.append(Event(marker, last.occurred_at, last.id, u, U.feat[u]))
        self.counts["lifecycle_markers"] = len(events)
        # Events sharing a topic are folded once; a marker with no topic terms ("Done.")
        # speaks only for the cluster its own sentence landed in.
        topics: dict[object, list[Event]] = {}
        for ev in events:
            topics.setdefault(ev.marker.topic or ("own", ev.unit), []).append(ev)
        topic_terms = {t for key in topics if isinstance(key, frozenset) for t in key}
        tindex = TopicIndex(core_third, topic_terms)
        g_host, g_env = self.identity.hosts.tolist(), self.identity.envs.tolist()
        unit_cluster = self.unit_cluster
        applies: dict[int, list[TopicState]] = {}
        folded: dict[object, TopicState] = {}
        for key, evs in topics.items():
            state = folded[key] = fold(evs)
            own = {unit_cluster[e.unit] for e in evs if unit_cluster[e.unit] >= 0}
            targets = set(own)
            if isinstance(key, frozenset):
                # The topic terms pin the subject; the guard only has to stop a marker
                # about one host or environment landing on another (cheap int checks).
                eh, ee = g_host[evs[0].unit], g_env[evs[0].unit]
                matched = tindex.clusters_for(key)
                if matched is None or len(matched) > BROAD:
                    self.counts["lifecycle_topics_too_broad"] += 1
                    matched = set()
                for ci in sorted(matched - own):
                    first = clusters[ci].units[0]
                    ch, ce = g_host[first], g_env[first]
                    if (not eh or not ch or eh == ch) and (not ee or not ce or ee == ce):
                        targets.add(ci)
            for ci in targets:
                applies.setdefault(ci, []).append(state)
        for ci in self.special_clusters:
            aliases = clusters[ci].aliases
            if aliases:
                # A theme also follows the tickets opened for it (see _themes).
                for key, state in folded.items():
                    if isinstance(key, frozenset) and key & aliases:
                        applies.setdefault(ci, []).append(state)
        now = self.now
        self.lifecycles: list[tuple[str, Event | None]] = [
            combine(applies[ci], now) if ci in applies else ("active", None)
            for ci in range(len(clusters))
        ]

    def find_conflicts(self) -> None:
        """Find reversals, negations and value conflicts; mark the clusters they touch."""
        U, clusters = self.U, self.clusters
        found: list[conf.Found] = []
        stmts: list[tuple[int, conf.Statement]] = []
        for u in range(self.n_units):
            if (U.junk[u] and U.claim[u] is None) or not U.feat[u].cues & DECIDE_CUE:
                continue
            stmts.extend((u, st) for st in conf.statements(U.text[u]))
        found.extend(conf.decision_conflicts(stmts, self.u_first, self.u_last, U.claim))
        # A contradiction the wording already lined up is not reported twice.
        seen = {u for fc in found for side in fc.sides for u in side}
        found.extend(
            fc
            for fc in self._wording_conflicts()
            if all(seen.isdisjoint(side) for side in fc.sides)
        )
        for idxs in self.group_parts:
            if sum(1 for ci in idxs if clusters[ci].values) < 2:
                continue  # one value (or none): nothing to disagree about
            # Only a subject with a real core can be disagreed about, and only the facts
            # that are about that core take part (single-link grouping can drag in a
            # sentence that merely shares a word or two).
            core = core_terms([u for ci in idxs for u in clusters[ci].units], U.feat, 0.5)
            if len(core) < 2:
                continue
            idxs = [
                ci
                for ci in idxs
                if len(core_terms(clusters[ci].units, U.feat, 0.5) & core) * 2 >= len(core)
            ]
            if sum(1 for ci in idxs if clusters[ci].values) < 2:
                continue
            parts = [clusters[ci].units for ci in idxs]
            values = [clusters[ci].values for ci in idxs]
            state = [
                sum(1 for u in p[:50] if conf.is_state(U.text[u], U.feat[u].content)) * 2
                > len(p[:50])
                for p in parts
            ]
            has_eps = [any(U.eps[u] for u in p) for p in parts]
            fc = conf.value_conflict(parts, values, state, has_eps, U.claim, "")
            if fc:
                members = [u for p in parts for u in p]
                fc.subject = _label(core_terms(members, U.feat, 0.5), U, parts)
                found.append(fc)
        self.conflict_drafts = [self._conflict_draft(k, fc) for k, fc in enumerate(found)]
        self.counts["conflicts"] = len(self.conflict_drafts)
        for kind in ("value", "reversal", "negation"):
            self.counts[f"conflicts_{kind}"] = sum(
                1 for d in self.conflict_drafts if d.kind == kind
            )

    def _wording_conflicts(self) -> list[conf.Found]:
        """Disagreements between paraphrase neighbours (disputes.py), one per dispute."""
        U, items, near = self.U, self.para_items, self.para_near
        feat, text, u_first = U.feat, U.text, self.u_first
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
        # block with their name ("Teodor: …").
        people = {e.actor.split(":", 1)[-1].lower() for e in self.eps}
        people.update(n for it in items if (n := disputes.speaker(text[it[0]])))
        people_set = frozenset(people)

        def said(x: int) -> disputes.Said:
            got = read.get(x)
            if got is None:
                units = items[x]
                got = read[x] = disputes.said(
                    [text[u] for u in units],
                    [feat[u] for u in units],
                    u_first[units[0]],
                    people_set,
                )
            return got

        # Sentences are compared term by term, so rarity is counted per stemmed word.
        index = TermIndex([frozenset(stem(t) for u in it for t in feat[u].subject) for it in items])
        tested = sum(1 for x in cued if said(x).switches or said(x).denials)
        bar = disputes.sentence_bar(index.n, tested) * self.policy.paraphrase_factor
        ops: list[disputes.Opposition] = []
        for x in cued:
            closest = sorted(near[x], key=lambda ys: (-ys[1], ys[0]))
            others = [(y, said(y)) for y, _ in closest]
            ops.extend(disputes.oppositions(x, said(x), others, index.idf, bar))
        out: list[conf.Found] = []
        for d in disputes.disputes(ops, read):
            sides = [sorted({u for b in bs for u in items[b]}) for bs, _ in d.sides]
            shared = frozenset.intersection(
                *(frozenset(t for u in side for t in feat[u].subject) for side in sides)
            )
            reps = [items[b][k] for _, (b, k) in d.sides]
            out.append(
                conf.Found(d.kind, _label(shared, U, sides), sides, [None] * len(sides), reps)
            )
        self.counts["conflicts_across_wordings"] = len(out)
        return out

    def _conflict_draft(self, k: int, fc: conf.Found) -> ConflictDraft:
        U, eps, unit_cluster = self.U, self.eps, self.unit_cluster
        sides = []
        for n, (side, claim_id) in enumerate(zip(fc.sides, fc.claims, strict=True)):
            if fc.reps:
                rep = fc.reps[n]  # the sentence that states this side's position
            else:
                rep = min(side, key=lambda u: (U.junk[u] is not None, -self.u_weight[u], u))
            side_eps = sorted({eps[i].id for u in side for i in U.eps[u]})
            text = trim_snippet(display_text(U.text[rep]), self.policy.snippet_max_chars)
            sides.append(ConflictSide(text, tuple(side_eps), claim_id))
        side_keys = [s.text if s.claim_id is None else f"claim:{s.claim_id}" for s in sides]
        draft = ConflictDraft(
            fc.subject, fc.kind, sides, conf.conflict_key(fc.kind, fc.subject, side_keys)
        )
        # Tell every cluster on a side which episodes contradict it; its own side is the
        # newest side it has sentences on.
        side_clusters = [
            {unit_cluster[u] for u in side if unit_cluster[u] >= 0} for side in fc.sides
        ]
        floor = datetime.min.replace(tzinfo=UTC)
        side_time = [
            max((self.u_last[u] or floor for u in side), default=floor) for side in fc.sides
        ]
        for ci in sorted(set().union(*side_clusters)):
            mine = [s for s, cl in enumerate(side_clusters) if ci in cl]
            own = max(mine, key=lambda s: (side_time[s], s))
            c = self.clusters[ci]
            c.conflicts.append(k)
            c.contested = c.contested if c.contested in ("value", "negation") else fc.kind
            for s, side in enumerate(fc.sides):
                if s == own:
                    continue
                for u in side:
                    c.contradict.extend(U.eps[u])
                    if U.claim[u] is not None and unit_cluster[u] == ci:
                        c.claim_opposed = True
        return draft

    def find_themes(self) -> None:
        """Find subjects and terms that recur across days (risk-flagged material excluded)."""
        U, policy, ep_day = self.U, self.policy, self.ep_day
        flagged = [bool(e.risk_flags) for e in self.eps]
        subject_themes = []
        need = policy.theme_min_days
        for ci, c in enumerate(self.clusters):
            if sum(len(U.eps[u]) for u in c.units) < need:
                continue  # too few episodes to span enough days
            eps_c = {i for u in c.units for i in U.eps[u]}
            if not eps_c or any(map(flagged.__getitem__, eps_c)):
                continue
            days = len({ep_day[i] for i in eps_c})
            if days >= policy.theme_min_days and (c.label or self.core_half(ci)):
                label = c.label if c.kind == "theme" else _label(self.core_half(ci), U, [c.units])
                subject_themes.append((days, len(eps_c), label))
        subject_themes.sort(key=lambda t: (-t[0], -t[1], t[2]))
        self.themes = [
            Theme(lbl, "subject", d, m) for d, m, lbl in subject_themes[: policy.max_themes]
        ]
        room = policy.max_themes - len(self.themes)
        if room > 0:
            units = [
                u
                for u in range(self.n_units)
                if U.eps[u] and not U.junk[u] and not any(map(flagged.__getitem__, U.eps[u]))
            ]
            self.themes.extend(
                term_themes(
                    [tuple(U.feat[u].subject) for u in units],
                    [sorted({ep_day[i] for i in U.eps[u]}) for u in units],
                    [len(U.eps[u]) for u in units],
                    policy.theme_min_days,
                    room,
                )
            )

    # ---- Deep --------------------------------------------------------------------------

    def score(self, live: set[int] | None) -> None:
        """Gate, rehydrate and score every fact; reinforce approved claims seen again."""
        U, eps, policy, counts = self.U, self.eps, self.policy, self.counts
        reinforced: dict[int, set[int]] = {}
        self.passing: list[_Passing] = []
        has_claims = bool(self.claims)
        min_evidence = policy.min_evidence
        for ci, c in enumerate(self.clusters):
            if len(c.units) == 1 and not c.contradict:
                # Fast path for the commonest fact: one sentence, nobody contradicting it.
                support = U.eps[c.units[0]]  # already sorted, never mutated below
                if not support:
                    continue
                if (
                    len(support) < min_evidence
                    and U.claim[c.units[0]] is None
                    and not self._authoritative(support)
                ):
                    self.cluster_reason[ci] = "too_few_evidence"
                    continue
                contradict: set[int] = set()
            else:
                contradict = set(c.contradict)
                if c.episodes is not None:
                    support = sorted(set(c.episodes) - contradict)
                else:
                    support = sorted({i for u in c.units for i in U.eps[u]} - contradict)
                if not support:
                    continue
            claim_units = [u for u in c.units if U.claim[u] is not None] if has_claims else []
            if claim_units and not c.claim_opposed:
                best = max(
                    claim_units,
                    key=lambda u: (_jac(U.feat[u].subject, self.core_half(ci)), -(U.claim[u] or 0)),
                )
                reinforced.setdefault(U.claim[best], set()).update(eps[i].id for i in support)
                self.cluster_reason[ci] = "reinforced"
                continue
            state, decided = self.lifecycles[ci]
            # A procedure and a recurring theme are records in their own right: a closed
            # theme is proposed as done work (never as an open problem), and "done" in
            # one step of a runbook does not retire the runbook.
            if (
                state in TERMINAL_LIFECYCLES
                and c.kind == "fact"
                and not (decided and self.unit_cluster[decided.unit] == ci)
            ):
                self.cluster_reason[ci] = f"lifecycle:{state}"
                continue
            # The count gates are cheap and reject most clusters; text choice and scoring
            # only run for what is left.
            reason = self._gate(support)
            if reason:
                self.cluster_reason[ci] = reason
                continue
            pruned = 0
            if live is not None:
                # Rehydrate: evidence erased or superseded since it was read must not
                # ground a candidate (OpenClaw re-reads the live file for the same reason).
                live_support = [i for i in support if eps[i].id in live]
                pruned = len(support) - len(live_support)
                if pruned:
                    counts["rehydrate_pruned_evidence"] += pruned
                    support = live_support
                    contradict = {i for i in contradict if eps[i].id in live}
                    if not support or self._gate(support):
                        counts["rehydrate_dropped"] += 1
                        self.cluster_reason[ci] = "rehydrate:evidence_gone"
                        continue
            support_set = set(support)
            text_units = [u for u in c.units if U.eps[u] and not support_set.isdisjoint(U.eps[u])]
            if c.kind == "procedure":
                got = self._procedure_text(c, support_set)
            elif c.blocks:
                got = self._block_text(c, support_set)
            else:
                got = None
            if got is not None:
                choice = got
            else:
                choice = choose(
                    text_units,
                    U.text,
                    U.feat,
                    U.junk,
                    self.u_trust,
                    self.u_weight,
                    self.core_half(ci),
                    policy.snippet_max_chars,
                )
            if choice.unit is None:
                redacted = "redacted" in (choice.reason or "")
                self.cluster_reason[ci] = "secret_redacted" if redacted else "junk:fragments"
                continue
            score, raw, stats = self._evaluate(support, choice.unit)
            # Said once, a statement scores low on frequency and days; written once in a
            # reference source it is still the reference, when it stands on its own.
            # choose() prefers a wording that outlives its day: if the best one is still
            # tied to it, every wording is a log entry or a plan, not a durable fact. A
            # contested fact, a procedure and a theme are records in their own right.
            if c.kind == "fact" and not c.contested and dated(choice.text):
                self.cluster_reason[ci] = "dated"
                continue
            # The evidence gate let it through on authority alone (see _gate).
            alone = len(support) < policy.min_evidence and U.claim[choice.unit] is None
            if alone and not standalone(choice.text):
                self.cluster_reason[ci] = "junk:leans_on_context"
                continue
            if alone:
                stats["authority"] = max(eps[i].source_trust for i in support)
            elif score < policy.min_score:
                if pruned:
                    counts["rehydrate_dropped"] += 1
                    self.cluster_reason[ci] = "rehydrate:below_min_score"
                else:
                    self.cluster_reason[ci] = "below_min_score"
                continue
            flags = tuple(sorted({f for i in support for f in eps[i].risk_flags}))
            self.passing.append(
                _Passing(
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
                )
            )
        self.reinforced = {cid: sorted(v) for cid, v in sorted(reinforced.items())}

    def _block_text(self, c: _Cluster, support: set[int]) -> Choice | None:
        """The fact in its best-supported wording: one or two adjacent sentences of a block.

        The window covering most of the terms the group's blocks share wins (then the more
        trusted source, a well-formed sentence, the shorter text): extractive, so every
        candidate is a sentence someone wrote, and the adjacent sentence is added only when
        it carries shared terms the first lacks ("Decided: the app stays a PWA. No native
        builds this year.").
        """
        U, limit = self.U, self.policy.snippet_max_chars
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
                    text = " ".join(display_text(U.text[x]) for x in w)
                    if len(w) > 1 and len(text) > _MAX_PAIR_CHARS:
                        continue
                    got = frozenset().union(*(terms[x] for x in w)) & core
                    if len(w) > 1 and got == (terms[w[0]] & core):
                        continue  # the second sentence adds nothing the group shares
                    well_formed = text[:1].isupper() and text[-1:] in ".!?"
                    key = (dated(text), -len(got), -self.u_trust[u], not well_formed, len(text), w)
                    if best is None or key < best[0]:
                        best = (key, w, text)
        if best is None:
            return None
        return Choice(best[1][0], trim_snippet(best[2], limit))

    def _procedure_text(self, c: _Cluster, support: set[int]) -> Choice | None:
        """A procedure's text from its live evidence: the written form, else its steps."""
        U, limit = self.U, self.policy.snippet_max_chars
        steps = [u for u in c.text_units if not support.isdisjoint(U.eps[u])]
        if not steps:
            return None
        if c.text_episode is not None and c.text_episode in support:
            text = trim_snippet(self.eps[c.text_episode].content, limit)
        else:
            text = trim_snippet(" ".join(U.text[u] for u in steps), limit)
        if REDACTION_MARK in text:
            return None  # choose() knows how to avoid a redacted sentence
        return Choice(steps[0], text)

    def _authoritative(self, support: list[int]) -> bool:
        """Is the fact written down in a source trusted to be the reference?"""
        floor = self.policy.authority_trust
        return any(self.eps[i].source_trust >= floor for i in support)

    def _gate(self, support: list[int]) -> str | None:
        """Apply the count gates (evidence, days, contexts); return the failing one."""
        policy = self.policy
        if len(support) < policy.min_evidence and not self._authoritative(support):
            return "too_few_evidence"
        days = policy.min_distinct_days
        if days > 1 and len({self.ep_day[i] for i in support}) < days:
            return "too_few_days"
        if policy.min_distinct_contexts > 1:
            contexts = len({self.eps[i].source_id for i in support})
            if contexts < policy.min_distinct_contexts:
                return "too_few_contexts"
        return None

    def _evaluate(
        self, support: list[int], rep_unit: int
    ) -> tuple[float, dict[str, float], dict[str, float]]:
        """Score one fact's support; return the score, raw signals and evidence counts."""
        eps, ep_day, ep_group = self.eps, self.ep_day, self.ep_group
        days = {ep_day[i] for i in support}
        # The same content (or a near-duplicate of it) twice on one day is one occurrence,
        # not two: repeated filler scoring like a durable fact was an OpenClaw complaint.
        occurrences = len({ep_group[i] * 1_000_000 + ep_day[i] for i in support})
        f = self.U.feat[rep_unit]
        view = EvidenceView(
            n_support=occurrences,
            days=len(days),
            newest=eps[support[-1]].occurred_at,  # support is in time order
            trust=[eps[i].source_trust for i in support],
            recall=recall_for((eps[i].id for i in support), self.recall),
            key_terms=len(f.subject | f.values),
        )
        raw = signals(view, self.recency_ref, self.policy)
        weights = self.policy.weights.as_dict()
        score = round(sum(weights[k] * v for k, v in raw.items()), 6)
        stats = {
            "evidence": float(len(support)),
            "occurrences": float(occurrences),
            "days": float(len(days)),
            "contexts": float(len({eps[i].source_id for i in support})),
        }
        return score, raw, stats

    def cap(self) -> None:
        """Keep the strongest and riskiest proposals; defer (and bound) the rest."""
        policy, counts = self.policy, self.counts
        # Riskiest first (a human must see those), then strongest; identical texts from
        # two clusters keep the stronger one. Only what the cap can show becomes a draft.
        self.passing.sort(key=lambda p: (not p.flags, -p.score, p.key))
        seen: set[str] = set()
        keep: list[_Passing] = []
        for p in self.passing:
            if p.key in seen:
                self.cluster_reason[p.ci] = "merged_duplicate_text"
                continue
            seen.add(p.key)
            keep.append(p)
        limit = policy.max_proposals + policy.max_deferred
        for p in keep[limit:]:
            self.cluster_reason[p.ci] = "deferred_not_returned"
        counts["deferred_not_returned"] = max(len(keep) - limit, 0)
        drafts = [self._draft(p) for p in keep[:limit]]
        for p in keep[:limit]:
            self.cluster_reason[p.ci] = "candidate"
        self.candidates = _cap(drafts, policy, counts)
        counts["deferred_over_cap"] += counts["deferred_not_returned"]

    def _draft(self, p: _Passing) -> CandidateDraft:
        eps, U, policy = self.eps, self.U, self.policy
        c = self.clusters[p.ci]
        support = p.support
        newest = eps[support[-1]].occurred_at
        procedural = sum(1 for i in support if eps[i].memory_type == "procedural-candidate")
        r = route(
            p.choice.text,
            contested=c.contested,
            procedural_votes=procedural / len(support),
            subject_label=section_name(p.choice.text, self.core_half(p.ci))
            or _label(self.core_half(p.ci), U, [c.units]),
            day_label=newest.date().isoformat(),
            restatements=(U.text[u] for u in c.units),
            steps=sum(1 for u in set(c.units) if u in self.step_units),
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
        f = U.feat[p.choice.unit]
        subject_terms = sorted(self.core_half(p.ci) | f.values)
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
            conflict_keys=tuple(sorted({self.conflict_drafts[k].dedupe_key for k in c.conflicts})),
        )

    # ---- Settle ------------------------------------------------------------------------

    def settle(self) -> None:
        """Say what stays episodic and why, count everything, write the diary."""
        eps, counts = self.eps, self.counts
        in_candidate = {
            ev.episode_id for d in self.candidates for ev in d.evidence if ev.role == "support"
        }
        in_reinforced = {i for v in self.reinforced.values() for i in v}
        by_reason: dict[str, list[int]] = {}
        for i in range(self.n):
            eid = eps[i].id
            if eid in in_candidate or eid in in_reinforced:
                continue
            reason = self.aside.get(i) or self._episode_reason(i)
            by_reason.setdefault(reason, []).append(eid)
        self.stays = [
            SetAside(r, len(v), tuple(sorted(v)[: self.policy.sample_ids]))
            for r, v in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        ]
        for d in self.candidates:
            counts[d.status] += 1
        counts["reinforced_claims"] = len(self.reinforced)
        counts["reinforced_episodes"] = len(in_reinforced)
        counts["stays_episodic"] = sum(s.count for s in self.stays)
        for key in ("proposed", "deferred", "blocked", "rehydrate_dropped"):
            counts.setdefault(key, 0)
        counts.setdefault("rehydrate_pruned_evidence", 0)
        self.diary = _diary(
            eps,
            self.candidates,
            self.conflict_drafts,
            self.stays,
            self.themes,
            counts,
            self.policy,
        )

    _REASON_RANK = {
        "below_min_score": 1,
        "too_few_days": 2,
        "too_few_contexts": 3,
        "too_few_evidence": 4,
        "rehydrate:evidence_gone": 5,
        "secret_redacted": 7,
    }

    def _episode_reason(self, i: int) -> str:
        # An episode holds several sentences; report the reason of the one that came
        # closest to being proposed.
        U = self.U
        best: tuple[int, str] | None = None
        gidx = self.ep_group[i]
        for u in self.group_units[gidx] if gidx >= 0 else ():
            ci = self.unit_cluster[u]
            if ci < 0:
                r = f"junk:{U.junk[u]}" if U.junk[u] else "junk:no_content"
            else:
                r = self.cluster_reason.get(ci, "too_few_evidence")
                if r in ("candidate", "reinforced"):
                    r = "contradicted" if i in self.clusters[ci].contradict else "deferred_merge"
            rank = self._REASON_RANK.get(r, 6 if r.startswith("lifecycle") else 8)
            if best is None or (rank, r) < best:
                best = (rank, r)
        return best[1] if best else "junk:no_content"


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


def _same_things(units: tuple[int, ...], feat: Sequence[Features]) -> list[tuple[int, ...]]:
    """Split a block where its sentences turn to another host or environment.

    "Staging runs on Postgres 16, box is db-staging-2. Prod DB is db-prod-1." states two
    facts about two things; grouped as one block it would join restatements of both.
    """
    runs: list[tuple[int, ...]] = []
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


def _jac(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _label(core: set[str] | frozenset[str], U: _Units, parts: Sequence[Sequence[int]]) -> str:
    # Order core terms by how many sentences use them, so the label leads with the subject.
    freq: Counter[str] = Counter()
    for p in parts:
        for u in p[:50]:  # the first sentences are representative enough for a label
            freq.update(t for t in U.feat[u].subject if t in core)
    ranked = sorted(core, key=lambda t: (-freq[t], t))
    return " ".join(ranked[:4]) if ranked else "(unnamed subject)"


def _blocked_by(flag: str, rules: Sequence[str]) -> bool:
    return any(flag == r or (r.endswith(":") and flag.startswith(r)) for r in rules)


def _cap(
    drafts: list[CandidateDraft], policy: Policy, counts: Counter[str]
) -> list[CandidateDraft]:
    """Keep ``max_proposals`` proposals, riskiest then strongest first; defer the rest."""
    drafts.sort(key=lambda d: (not d.flags, -d.score, d.dedupe_key))
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
    out.sort(key=lambda d: (order[d.status], not d.flags, -d.score, d.dedupe_key))
    return out


def _diary(
    eps: Sequence[Ep],
    candidates: list[CandidateDraft],
    conflicts: list[ConflictDraft],
    stays: list[SetAside],
    themes: list[Theme],
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
    "dated": "told only as news of the day it was written (a log entry or a plan)",
    "junk:leans_on_context": "said once, and not readable without the sentences around it",
}


def _reason_words(reason: str) -> str:
    if reason in _REASON_WORDS:
        return _REASON_WORDS[reason]
    if reason.startswith("junk:"):
        return f"junk ({reason[5:].replace('_', ' ')})"
    if reason.startswith("lifecycle:"):
        return f"about {reason[10:]} work"
    return reason.replace("_", " ")
