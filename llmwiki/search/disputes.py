"""Open conflicts as retrieval sees them, registered by the app that keeps them.

`llmwiki` sits below `dreaming`, which owns conflicts; dreaming registers a function that
lists a project's unresolved conflicts (as they stood at a moment, or now) as `Dispute`s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from llmwiki.access import Labels


@dataclass(frozen=True)
class Side:
    text: str
    claim_id: int | None
    evidence_ids: tuple[int, ...]
    labels: Labels  # what clearance reads for this side's text


@dataclass(frozen=True)
class Dispute:
    conflict_id: int
    status: str  # "open" or "escalated" (an open question with an owner)
    sides: tuple[Side, ...]

    @property
    def text(self) -> str:
        """ "disputed: A (evidence #1, #2) vs B (evidence #3)" """
        parts = []
        for side in self.sides:
            cited = ", ".join(f"#{i}" for i in side.evidence_ids)
            words = " ".join(side.text.split())
            parts.append(f"{words} (evidence {cited})" if cited else words)
        prefix = "open question" if self.status == "escalated" else "disputed"
        return f"{prefix}: " + " vs ".join(parts)

    @property
    def words(self) -> str:
        """What a query's words are matched against: the sides' texts."""
        return " ".join(side.text for side in self.sides)

    @property
    def claim_ids(self) -> list[int]:
        return sorted({s.claim_id for s in self.sides if s.claim_id is not None})

    @property
    def evidence_ids(self) -> list[int]:
        return sorted({i for s in self.sides for i in s.evidence_ids})


Lister = Callable[[int, datetime | None, Sequence[int] | None, Sequence[int]], list[Dispute]]
# (project id, as_of, lexemes) -> SQL and parameters: (conflict id, its sides' tsvector)
Vectors = Callable[[int, datetime | None, Sequence[str]], tuple[str, list[Any]]]
_listers: list[Lister] = []
_vectors: list[Vectors] = []


def register(fn: Lister) -> Lister:
    """Add a source of disputes: fn(project_id, as_of, ids, claims) -> the unresolved ones
    then, as `unresolved` narrows them."""
    _listers.append(fn)
    return fn


def register_vectors(fn: Vectors) -> Vectors:
    """Add the source `vectors` reads (there is one: dreaming's conflicts)."""
    _vectors.append(fn)
    return fn


def unresolved(
    project_id: int,
    as_of: datetime | None = None,
    *,
    ids: Sequence[int] | None = None,
    claims: Sequence[int] = (),
) -> list[Dispute]:
    """The project's unresolved conflicts (at `as_of`, or now); with `ids`, only those among
    them and those one of `claims` is a side of."""
    return [d for fn in _listers for d in fn(project_id, as_of, ids, claims)]


def vectors(project_id: int, as_of: datetime | None, lexemes: Sequence[str]) -> tuple[str, list]:
    """The SQL (and its parameters) of the unresolved conflicts a side of which holds one of
    `lexemes` (words as the PostgreSQL search configuration parses them): each conflict's id
    and the tsvector of its `words`, for the search backend to rank where they are. On
    PostgreSQL only."""
    (fn,) = _vectors
    return fn(project_id, as_of, lexemes)
