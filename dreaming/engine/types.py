"""Plain-data boundary of the dream-sweep engine.

The service loads rows into the input dataclasses, calls ``run_sweep`` and persists the
output dataclasses. Nothing here knows about Django; every field is a builtin, a tuple, a
list or a dict so the service can store it as JSON without adapters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple, NewType

from llmwiki.vocabulary import IMPORTED_KINDS, STANDARD_PAGES

# The four integer index spaces of the engine (docs/ARCHITECTURE.md §4). Inside a sweep an
# episode is named by its place in time (`EpisodeIndex`, into `Inputs.eps`); its database
# id (`EpisodeId`) appears only where episodes come in and evidence goes out. A `UnitIndex`
# is a sentence unit (into `facts.Units`), a `FactIndex` a fact (into `LightResult.facts`).
EpisodeIndex = NewType("EpisodeIndex", int)
EpisodeId = NewType("EpisodeId", int)
UnitIndex = NewType("UnitIndex", int)
FactIndex = NewType("FactIndex", int)

MEMORY_TYPES = ("working", "episodic", "semantic-candidate", "procedural-candidate", "handoff-only")
LIFECYCLES = ("active", "waiting", "done", "archived", "closed", "snoozed")
TERMINAL_LIFECYCLES = frozenset({"done", "archived", "closed"})
STATUSES = ("proposed", "deferred", "blocked")
# The episode kinds a sweep reads and the pages it routes to are the app's vocabulary.
KINDS = IMPORTED_KINDS
# Kinds written as the day goes (a log, a chat, an event, a tool call), not kept as notes.
DATED_KINDS = frozenset(("log_entry", "chat_turn", "event", "tool_call"))
PAGES = STANDARD_PAGES


@dataclass(frozen=True, slots=True)
class Ep:
    """One episode, as the service loads it (content already normalised and redacted)."""

    id: EpisodeId
    occurred_at: datetime  # tz-aware UTC
    content: str
    kind: str
    memory_type: str
    actor: str
    source_id: int
    source_trust: float  # 0..1, decided by the service
    risk_flags: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    # False when the material carried no time of its own and was stamped with the time it
    # was recorded (an undated note): that says nothing of when it was written.
    dated: bool = True
    # The headings above it in its source, as the importer located it ("Plan > Next"):
    # a note cut into one episode per item keeps the shape of the list it was in.
    section: str = ""

    @property
    def heading(self) -> str:
        """The heading it was written under ("" when none): a heading that names a state
        ("Completed") gives that state to what stands under it."""
        return self.section.rsplit(" > ", 1)[-1].strip()


@dataclass(frozen=True, slots=True)
class ApprovedClaim:
    """A reviewed claim already in the semantic layer."""

    id: int
    text: str
    page: str
    subject_key: str | None = None


@dataclass(frozen=True, slots=True)
class RecallStats:
    """Retrieval-trace statistics for one episode id."""

    hits: int
    distinct_queries: int
    distinct_days: int
    mean_score: float


class Evidence(NamedTuple):
    """One evidence link of a candidate: ``role`` is ``"support"`` or ``"contradict"``."""

    episode_id: EpisodeId
    role: str


class ConflictSide(NamedTuple):
    """One side of a conflict: grounded text, its episodes, and the claim it comes from."""

    text: str
    episode_ids: tuple[int, ...]
    claim_id: int | None


@dataclass(frozen=True, slots=True)
class CandidateDraft:
    """A proposed claim for human review; never written anywhere by the engine.

    ``signals`` holds each raw signal in [0, 1] (``relevance``, ``frequency``, …), its
    weighted contribution (``relevance.w``, … — they sum to ``score``) and the evidence
    counts behind them (``evidence``, ``occurrences``, ``days``, ``contexts``).
    ``dedupe_key`` is derived from the normalised text, so a re-run yields the same key;
    ``conflict_keys`` point at the ``ConflictDraft``s this candidate takes part in.
    """

    text: str
    page_target: str
    section: str
    route_reason: str
    memory_type: str
    score: float
    signals: dict[str, float]
    evidence: list[Evidence]
    lifecycle: str
    flags: tuple[str, ...]
    dedupe_key: str
    subject_key: str
    status: str
    blocked_reason: str | None = None
    conflict_keys: tuple[str, ...] = ()
    # The decided candidates whose wording moved its claim-worthiness (``learn``).
    similar_approved: tuple[int, ...] = ()
    similar_rejected: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ConflictDraft:
    """Two or more sides that cannot all be true; becomes an open question."""

    subject: str
    kind: str  # "value" | "reversal" | "negation"
    sides: list[ConflictSide]
    dedupe_key: str


@dataclass(frozen=True, slots=True)
class SetAside:
    """Episodes that stay episodic for one reason: a count plus the first few ids."""

    reason: str
    count: int
    episode_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Theme:
    """A term or subject recurring across distinct days."""

    label: str
    kind: str  # "term" | "subject"
    days: int
    episodes: int


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Everything one sweep computed; ``timings`` is excluded from equality on purpose.

    ``candidates`` are ordered proposed → deferred → blocked, riskiest then strongest
    first; ``reinforced`` maps an approved claim id to the episode ids that restate it;
    ``stays_episodic`` summarises, per reason, the episodes no candidate or claim took up.
    """

    candidates: list[CandidateDraft]
    reinforced: dict[int, list[int]]
    conflicts: list[ConflictDraft]
    duplicates_folded: int
    stays_episodic: list[SetAside]
    counts: dict[str, int]
    themes: list[Theme]
    diary: str
    # Wall-clock varies run to run; keeping it out of __eq__ keeps "same input, same
    # output" checkable with a plain ==.
    timings: dict[str, float] = field(default_factory=dict, compare=False)
