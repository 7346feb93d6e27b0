"""Open conflicts as retrieval sees them, registered by the app that keeps them.

`llmwiki` sits below `dreaming`, which owns conflicts; dreaming registers a function that
lists a project's unresolved conflicts (as they stood at a moment, or now) as `Dispute`s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

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
    def claim_ids(self) -> list[int]:
        return sorted({s.claim_id for s in self.sides if s.claim_id is not None})

    @property
    def evidence_ids(self) -> list[int]:
        return sorted({i for s in self.sides for i in s.evidence_ids})


Lister = Callable[[int, datetime | None], list[Dispute]]
_listers: list[Lister] = []


def register(fn: Lister) -> Lister:
    """Add a source of disputes: fn(project_id, as_of) -> the unresolved ones then."""
    _listers.append(fn)
    return fn


def unresolved(project_id: int, as_of: datetime | None = None) -> list[Dispute]:
    return [d for fn in _listers for d in fn(project_id, as_of)]
