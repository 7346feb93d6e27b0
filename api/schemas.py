"""The documents the JSON API and the MCP tools answer with, as typed schemas.

Written from what `api.operations`, `api.reading` and `api.recall` return; the API validates
each answer against them and the OpenAPI schema (and MCP's output schemas) publish them. A
field missing here would be dropped from the answer, so `tests/test_api_schema.py` checks
that every document the operations build is answered whole.

Enumerations are the models' own choices, so a new value is listed where it is declared.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema

from dreaming.models import Candidate, CandidateEvidence, Conflict, DreamRun
from llmwiki.models import Claim, Episode, Export, SecurityClass


def choices(values: list[str]) -> Any:
    """A Literal of a model's choices: an `enum` in the schema."""
    return Literal[tuple(values)]


SecurityClassName = choices(SecurityClass.values)
EpisodeKind = choices(Episode.Kind.values)
EpisodeStatus = choices(Episode.Status.values)
Trust = choices(Episode.Trust.values)
MemoryType = choices(Episode.MemoryType.values)
CandidateStatus = choices(Candidate.Status.values)
Lifecycle = choices(Candidate.Lifecycle.values)
EvidenceRole = choices(CandidateEvidence.Role.values)
ConflictStatus = choices(Conflict.Status.values)
ConflictKind = choices(Conflict.Kind.values)
Resolution = choices(Conflict.Resolution.values)
ClaimStatus = choices(Claim.Status.values)
RunTrigger = choices(DreamRun.Trigger.values)
RunStatus = choices(DreamRun.Status.values)
ExportKind = choices(Export.Kind.values)

Withheld = Annotated[
    str | None,
    Field(description='why `text` is null ("Text withheld: …"); null when the text is given'),
]
MaskedText = Annotated[
    str | None, Field(description="the text, or null when withheld from this token")
]
Locator = Annotated[dict[str, Any], Field(description="where in its source the episode is")]


class ErrorOut(Schema):
    message: str = Field(..., description="what was wrong, in one line")
    field: str | None = Field(None, description="the parameter or body field at fault")


class BusyOut(ErrorOut):
    """503: the database was busy with another write; nothing was written."""


# --- Events and review --------------------------------------------------------------------


class RecordedEvent(Schema):
    episode_id: int
    status: EpisodeStatus
    memory_type: MemoryType
    security_class: SecurityClassName
    flags: list[str] = Field(..., description="what the gate found: pii, injection, secret…")
    source_sha256: str


class ReviewOut(Schema):
    candidate_id: int
    status: CandidateStatus = Field(..., description="the candidate's status after the action")
    claim_id: int | None = Field(..., description="the claim it became or merged into")


# --- Candidates ---------------------------------------------------------------------------


class EvidenceRef(Schema):
    episode_id: int
    locator: Locator
    source_sha256: str | None


class CandidateEvidenceRef(EvidenceRef):
    role: EvidenceRole


class CandidateOut(Schema):
    id: int
    text: MaskedText
    withheld: Withheld
    page_target: str
    score: float
    signals: dict[str, Any] = Field(..., description="each signal's value and weight")
    status: CandidateStatus
    lifecycle: Lifecycle
    flags: list[str]
    security_class: SecurityClassName
    version: int = Field(..., description="send it back as `candidate_version` to review")
    evidence: list[CandidateEvidenceRef]


class CandidateDetail(CandidateOut):
    page_revision_id: int | None = Field(
        ..., description="the target page's current revision; send it back to review"
    )


class Paged(Schema):
    count: int = Field(..., description="how many there are in all")
    limit: int
    offset: int


class CandidatePage(Paged):
    items: list[CandidateOut]


# --- Dream runs ---------------------------------------------------------------------------


class PreviewCandidate(Schema):
    text: MaskedText
    withheld: Withheld
    page_target: str
    route_reason: str
    score: float
    status: str
    blocked_reason: str | None
    evidence: int = Field(..., description="how many episodes it rests on")
    flags: list[str]
    security_class: SecurityClassName
    adds_evidence_to: int | None = Field(..., description="the candidate it would only add to")


class PreviewConflict(Schema):
    subject: str
    kind: ConflictKind
    sides: list[str] | None = Field(..., description="null when withheld from this token")
    security_class: SecurityClassName


class Preview(Schema):
    candidates: list[PreviewCandidate]
    conflicts: list[PreviewConflict]
    duplicates_folded: int
    reinforced: dict[str, int] = Field(..., description="candidate id: new evidence it gains")


class RunOut(Schema):
    run_id: int
    trigger: RunTrigger
    status: RunStatus
    phases: dict[str, dict[str, Any]] = Field(..., description="phase: {status, ms, …}")
    selected: int
    proposed: int
    duplicates: int
    conflicts: int
    blocked: int
    watermark_before: int | None
    watermark_after: int | None
    error: str | None
    preview: Preview | None = Field(..., description="what a preview run would do, once done")


# --- Pages --------------------------------------------------------------------------------


class PageSummary(Schema):
    key: str
    title: str
    revision: int | None
    updated_at: datetime | None


class PageList(Schema):
    items: list[PageSummary]


class PageClaim(Schema):
    claim_id: int
    section: str
    text: MaskedText
    withheld: Withheld
    evidence_ids: list[int]


class PageOut(Schema):
    key: str
    title: str
    revision: int | None
    markdown: str
    created_at: datetime | None
    claims: list[PageClaim] | None = Field(
        ..., description="the approved claims; null for a revision that is not current"
    )


# --- Provenance ---------------------------------------------------------------------------


class SourceOut(Schema):
    sha256: str
    path: str
    importer: str
    retrieved_at: datetime | None


class EpisodeOut(Schema):
    episode_id: int
    kind: EpisodeKind
    actor: str
    occurred_at: datetime | None
    locator: Locator
    status: EpisodeStatus
    trust: Trust
    memory_type: MemoryType
    security_class: SecurityClassName
    flags: list[str]
    source: SourceOut | None
    text: MaskedText
    withheld: Withheld


class EvidenceEpisode(EpisodeOut):
    role: EvidenceRole


class ClaimProvenance(Schema):
    object: Literal["claim"]
    claim_id: int
    text: MaskedText
    withheld: Withheld
    status: ClaimStatus
    version: int
    page: str
    section: str
    security_class: SecurityClassName
    flags: list[str]
    approved_at: datetime
    reviewer: str
    supersedes: int | None
    superseded_by: int | None
    source_refs: list[dict[str, Any]]
    candidates: list[int]
    evidence: list[EpisodeOut]


class CandidateProvenance(CandidateOut):
    object: Literal["candidate"]
    run_id: int | None
    claim_id: int | None
    route_reason: str
    evidence: list[EvidenceEpisode]


class CitedBy(Schema):
    claims: list[int]
    candidates: list[int]
    conflicts: list[int]


class EpisodeProvenance(EpisodeOut):
    object: Literal["episode"]
    cited_by: CitedBy


Provenance = Annotated[
    ClaimProvenance | CandidateProvenance | EpisodeProvenance, Field(discriminator="object")
]


# --- Conflicts ----------------------------------------------------------------------------


class ConflictSideOut(Schema):
    position: int
    claim_id: int | None
    candidate_id: int | None
    scope_note: str
    text: MaskedText
    withheld: Withheld
    evidence: list[EvidenceRef]


class ConflictOut(Schema):
    id: int
    status: ConflictStatus
    kind: ConflictKind
    subject: str | None = Field(..., description="null when any side is withheld")
    detected_at: datetime
    owner: str | None = Field(..., description="who answers an escalated question")
    due: date | None
    resolution: Resolution | None
    accepted_claim_id: int | None
    accepted_candidate_id: int | None
    reopens: int | None = Field(..., description="the resolved conflict this one reopens")
    sides: list[ConflictSideOut]


class ConflictPage(Paged):
    items: list[ConflictOut]


# --- Retrieval ----------------------------------------------------------------------------


class Citations(Schema):
    claim_ids: list[int]
    episode_ids: list[int]


class HitBase(Schema):
    id: int | str = Field(..., description="the claim, conflict or episode id; a page's key")
    text: str
    score: float = Field(..., description="comparable across layers; higher is better")
    trust_label: Literal[tuple([*Episode.Trust.values, "disputed"])]
    security_class: SecurityClassName
    page_target: str
    actor: str
    occurred_at: str | None = Field(..., description="ISO 8601")
    citations: Citations
    locators: list[dict[str, Any]] = Field(..., description="each evidence episode's locator")


class Validity(Schema):
    """A claim's two time axes (ISO 8601): when memory recorded it, when it held."""

    recorded_from: str
    recorded_until: str | None
    held_from: str | None
    held_until: str | None


class ClaimHit(HitBase):
    kind: Literal["claim"]
    layer: Literal["claim"]
    section: str
    context: str = Field(..., description="its page section, when that matched too")
    disputed: list[int] = Field(..., description="open conflicts it is a side of")
    status: ClaimStatus = Field(..., description="its status now (with as_of, maybe retired)")
    valid: Validity


class ConflictHit(HitBase):
    kind: Literal["conflict"]
    layer: Literal["conflict"]
    status: ConflictStatus


class PageHit(HitBase):
    kind: Literal["page"]
    layer: Literal["page"]


class EpisodeHit(HitBase):
    kind: Literal["episode"]
    layer: Literal["episode"]


Hit = Annotated[ClaimHit | ConflictHit | PageHit | EpisodeHit, Field(discriminator="kind")]


class ContextPack(Schema):
    query: str
    as_of: str | None = Field(..., description="the moment answered for (ISO 8601), or null")
    budget: int | None = Field(..., description="tokens the context could take")
    tokens: int = Field(..., description="tokens the context takes (about 4 characters each)")
    dropped: int = Field(..., description="hits left out to stay within the budget")
    items: list[Hit]
    context: str = Field(..., description="the hits, a line each, best first")


class LeftOut(Schema):
    budget: int = Field(..., description="characters the packet could take")
    chars: int = Field(..., description="characters it takes")
    claims: dict[str, list[int]] = Field(..., description="page key: claims that did not fit")
    open_questions: list[int] = Field(..., description="conflicts that did not fit")


class StartupPacket(Schema):
    markdown: str
    claim_ids: list[int] = Field(..., description="the claims the packet cites")
    withheld: dict[str, int] = Field(..., description="what the audience may not see, by reason")
    left_out: LeftOut


# --- Exports ------------------------------------------------------------------------------


class ExportFile(Schema):
    name: str
    sha256: str
    size: int


class ExportOut(Schema):
    id: int
    kind: ExportKind
    audience: SecurityClassName
    generated_at: datetime
    manifest_sha256: str
    files: list[ExportFile]
    status: str | None = Field(..., description="ok, erased, or what differs on disk")
    stale: bool | None = Field(..., description="whether the current state would differ")


class ExportList(Schema):
    items: list[ExportOut]
