"""What the phases of a sweep share: its input, the sentence units and the facts.

Light (``light``, ``grouping``) builds the ``Units`` and the ``Fact`` list; REM, Deep and
the diary only read them. Every type here is frozen: a later phase that has something
to say about a fact says it in its own result (``rem.Contest``, ``deep.DeepResult``),
never by writing on the fact. The lists inside are left as lists (there are hundreds
of thousands of units) and, by the same rule, nobody changes them after Light returns.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from .cluster import core_terms
from .policy import Policy
from .text import Features
from .types import ApprovedClaim, Ep, RecallStats
from .wording import people_in

Block = tuple[int, ...]  # the units of one block's sentences, in order


@dataclass(frozen=True, slots=True)
class Inputs:
    """The sweep's input, validated and in time order."""

    eps: Sequence[Ep]  # by (occurred_at, id): an episode's index is its place in time
    claims: Sequence[ApprovedClaim]  # by id
    recall: Mapping[int, RecallStats]
    policy: Policy
    now: datetime
    # Recency is measured from the newest material swept, not the wall clock: a month
    # of history imported today is not all stale, and its last week is its newest.
    recency_ref: datetime
    ep_day: Sequence[int]  # each episode's day (date ordinal)
    # Who wrote or said the material: a line opening with one of them names its speaker.
    people: frozenset[str] = frozenset()
    # Whether the project keeps any note (not only logs and chat): where it keeps none,
    # where a line is written cannot tell a kept fact from the day's news (worth.noted).
    # The project's, not the batch's: a batch of logs alone says nothing of it.
    keeps_notes: bool = True

    @classmethod
    def of(
        cls,
        episodes: Iterable[Ep],
        claims: Iterable[ApprovedClaim],
        recall: Mapping[int, RecallStats],
        policy: Policy,
        now: datetime | None,
        keeps_notes: bool = True,
    ) -> Inputs:
        episodes = list(episodes)
        for e in episodes:
            if e.occurred_at.tzinfo is None:
                raise ValueError(f"episode {e.id}: occurred_at must be timezone-aware (UTC)")
        eps = sorted(episodes, key=lambda e: (e.occurred_at, e.id))
        ids = [e.id for e in eps]
        if len(set(ids)) != len(ids):
            dup = next(i for i, c in Counter(ids).items() if c > 1)
            raise ValueError(f"episode id {dup} appears more than once in the sweep input")
        now = now or (eps[-1].occurred_at if eps else datetime.now(UTC))
        return cls(
            eps=eps,
            claims=sorted(claims, key=lambda c: c.id),
            recall=recall,
            policy=policy,
            now=now,
            recency_ref=min(now, _newest(eps)) if eps else now,
            ep_day=[e.occurred_at.date().toordinal() for e in eps],
            people=people_in({e.actor for e in eps}),
            keeps_notes=keeps_notes,
        )


def _newest(eps: Sequence[Ep]) -> datetime:
    """The newest time the material was written at, read from dated episodes only: one
    undated note stamped on import would make a month of history look months old."""
    dated = [e.occurred_at for e in eps if e.dated]
    return max(dated) if dated else eps[-1].occurred_at


@dataclass(frozen=True, slots=True)
class Units:
    """Column store of sentence units (lists, not objects: there are hundreds of thousands).

    A unit is one distinct sentence of the swept texts, or one sentence of an approved
    claim (``claim`` is then its id and ``eps`` is empty).
    """

    text: list[str]
    feat: list[Features]
    eps: list[list[int]]  # episode indices, sorted: first and last occurrence at the ends
    claim: list[int | None]
    junk: list[str | None]  # why the sentence is no claim material, if it is not
    checkbox: list[str | None]
    place: Sequence[int]  # where its first occurrence was written (worth.place_code)
    first: list[datetime | None]  # when the sentence was first and last written
    last: list[datetime | None]
    trust: list[float]  # the most trusted source it is written in
    weight: list[int]  # how many episodes say it
    steps: frozenset[int]  # items of a numbered list: a step, whatever it says

    def __len__(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: sentences with the same subject, identity and value."""

    units: list[int]  # sorted
    values: frozenset[str]
    blocks: tuple[Block, ...] = ()  # the blocks restating the fact (paraphrase groups)
    # What only a procedure or a theme has (see Special); class attributes, so the
    # hundred thousand ordinary facts of a big sweep carry none of them.
    kind: ClassVar[str] = "fact"
    text_episode: ClassVar[int | None] = None
    text_units: ClassVar[Sequence[int]] = ()
    label: ClassVar[str | None] = None
    aliases: ClassVar[frozenset[str]] = frozenset()
    episodes: ClassVar[Sequence[int] | None] = None


@dataclass(frozen=True, slots=True)
class Special(Fact):
    """A procedure or a recurring theme: one candidate for many otherwise separate facts."""

    kind: str = "procedure"  # "procedure" | "theme"
    # A procedure's text: the episode it is written out in, else its steps' sentences.
    text_episode: int | None = None
    text_units: Sequence[int] = ()
    label: str | None = None  # a theme's identifier, a procedure's step count
    aliases: frozenset[str] = frozenset()  # tickets naming a theme's work
    episodes: Sequence[int] | None = None  # fixed evidence (a procedure's texts)


class CoreTerms:
    """Subject terms shared by half of a fact's sentences, computed when first asked.

    REM and Deep each need them for a few facts out of many; the memo only saves the
    work twice over, and since facts do not change it never changes an answer.
    """

    __slots__ = ("_facts", "_feat", "_memo")

    def __init__(self, facts: Sequence[Fact], feat: Sequence[Features]) -> None:
        self._facts = facts
        self._feat = feat
        self._memo: dict[int, set[str] | frozenset[str]] = {}

    def __call__(self, ci: int) -> set[str] | frozenset[str]:
        got = self._memo.get(ci)
        if got is None:
            c = self._facts[ci]
            units = c.units
            if len(units) == 1:
                got = self._feat[units[0]].subject
            elif c.kind == "fact":
                got = core_terms(units, self._feat, 0.5)
            else:
                # A procedure's steps and a theme's mentions each say something different;
                # what a quarter of them share is already what they are about.
                got = core_terms(units, self._feat, 0.25)
            self._memo[ci] = got
        return got


def label(core: set[str] | frozenset[str], U: Units, parts: Sequence[Sequence[int]]) -> str:
    """Name a subject by its core terms, the ones most sentences use first."""
    freq: Counter[str] = Counter()
    for p in parts:
        for u in p[:50]:  # the first sentences are representative enough for a label
            freq.update(t for t in U.feat[u].subject if t in core)
    ranked = sorted(core, key=lambda t: (-freq[t], t))
    return " ".join(ranked[:4]) if ranked else "(unnamed subject)"


class Clock:
    """Times each step of a sweep on its own (``SweepResult.timings``)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.timings[name] = round(time.perf_counter() - started, 4)
