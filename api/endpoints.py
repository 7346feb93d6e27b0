"""The JSON API under /api/projects/{slug}/ (docs/ARCHITECTURE.md §7), schema /api/openapi.json."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from django.http import FileResponse, HttpRequest
from ninja import Field, Query, Schema, Status
from pydantic import field_validator

from api import operations, reading, recall
from api import schemas as out
from api.core import OFFSET_MAX, PAGE_DEFAULT, PAGE_MAX, api, caller
from api.models import ApiToken
from dreaming import review_actions
from llmwiki.errors import InputError
from llmwiki.record import (
    EVENT_MAX_AGENT_CHARS,
    EVENT_MAX_CONTENT_BYTES,
    EVENT_MAX_LOCATOR_BYTES,
    EVENT_MAX_TAG_CHARS,
    EVENT_MAX_TAGS,
    EventKind,
)
from llmwiki.search.retrieval import MAX_LIMIT
from llmwiki.vocabulary import export_kind, export_kind_names
from reviews.exports.documents import DEFAULT_BUDGET, MIN_BUDGET

Scope = ApiToken.Scope


E = out.ErrorOut
# Every route may meet a busy database: even a read stamps its token's last use.
ERRORS = {400: E, 401: E, 403: E, 404: E, 422: E, 503: out.BusyOut}
WRITE_ERRORS = {**ERRORS, 409: E, 413: E, 429: E}
P = "/projects/{slug}"


class Paging(Schema):
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX, description="at most this many items")
    offset: int = Field(0, ge=0, le=OFFSET_MAX, description="skip this many items first")


# --- Events -------------------------------------------------------------------------------


class EventIn(Schema):
    kind: EventKind = Field("event", description="episode kind: event, note, decision, …")
    content: str = Field(
        ...,
        description=f"the event's text, at most {EVENT_MAX_CONTENT_BYTES:,} bytes as UTF-8; "
        "it goes through the ingest gate",
    )
    occurred_at: datetime | None = None
    locator: dict[str, Any] = Field(
        default_factory=dict,
        description=f"where it happened, at most {EVENT_MAX_LOCATOR_BYTES:,} bytes as JSON",
    )
    tags: list[Annotated[str, Field(max_length=EVENT_MAX_TAG_CHARS)]] = Field(
        default_factory=list, max_length=EVENT_MAX_TAGS
    )
    agent: str = Field(
        "", max_length=EVENT_MAX_AGENT_CHARS, description="the agent's own name, for provenance"
    )


@api.post(f"{P}/events", response={201: out.RecordedEvent, **WRITE_ERRORS}, tags=["events"])
def record_event(request: HttpRequest, slug: str, payload: EventIn):
    """Record one event as an episode, through the same gate as file imports (write-events)."""
    who = caller(request, slug, Scope.WRITE_EVENTS)
    return Status(201, operations.record_event(who, **payload.dict()))


# --- Candidates and review ----------------------------------------------------------------


class CandidateFilter(Paging):
    status: out.CandidateStatus | None = Field(None, description="only candidates in this status")


@api.get(f"{P}/candidates", response={200: out.CandidatePage, **ERRORS}, tags=["review"])
def candidates(request: HttpRequest, slug: str, paging: Query[CandidateFilter] = None):
    """Candidates by score, with evidence and signals; `status` filters (read)."""
    who = caller(request, slug, Scope.READ)
    return operations.candidate_list(
        who, status=paging.status or "", limit=paging.limit, offset=paging.offset
    )


@api.get(
    f"{P}/candidates/{{candidate_id}}",
    response={200: out.CandidateDetail, **ERRORS},
    tags=["review"],
)
def candidate(request: HttpRequest, slug: str, candidate_id: int):
    """One candidate, with the `version` and `page_revision_id` a review action sends (read)."""
    return operations.candidate_get(caller(request, slug, Scope.READ), candidate_id)


class ReviewIn(Schema):
    candidate_version: int = Field(..., description="`version` of the candidate you read")
    page_revision_id: int | None = Field(None, description="`page_revision_id` you read")
    note: str = Field("", max_length=2000, description="why; required to reject")
    edited_text: str | None = Field(None, max_length=20000, description="approve as edited")
    section: str | None = Field(None, max_length=200)
    sensitive_confirmed: bool = False
    claim: int | None = Field(None, description="merge: the approved claim to merge into")


REVIEW_PATH = f"{P}/candidates/{{candidate_id}}/{{action}}"


@api.post(REVIEW_PATH, response={200: out.ReviewOut, **WRITE_ERRORS}, tags=["review"])
def review(request: HttpRequest, slug: str, candidate_id: int, action: str, payload: ReviewIn):
    """A review action through the review gates, as the token's creator (review).

    `action` is one of the review actions (the schema lists them). A candidate or page that
    changed since you read it is refused with 409, as on the web.
    """
    who = caller(request, slug, None)
    return operations.review(who, candidate_id, action, payload.dict())


def _review_actions_in_schema(schema: dict) -> None:
    """The `action` parameter lists the review actions registered now, each described."""
    operation = schema["paths"]["/api" + REVIEW_PATH]["post"]
    listed = review_actions.all_actions(everywhere_only=True)
    for parameter in operation["parameters"]:
        if parameter["name"] == "action":
            parameter["schema"]["enum"] = [a.name for a in listed]
    operation["description"] += "\n\n" + "\n".join(f"- `{a.name}`: {a.help}" for a in listed)


api.schema_hooks.append(_review_actions_in_schema)


# --- Dreaming -----------------------------------------------------------------------------


class DreamIn(Schema):
    preview: bool = Field(False, description="compute what a sweep would do; write nothing")
    backfill_from: date | None = None
    backfill_to: date | None = None


@api.post(f"{P}/dream", response={202: out.RunOut, **WRITE_ERRORS}, tags=["dreaming"])
def dream(request: HttpRequest, slug: str, payload: DreamIn):
    """Queue a sweep (or a preview, or a backfill) for the worker; poll the run (review)."""
    who = caller(request, slug, Scope.REVIEW)
    window = None
    if payload.backfill_from or payload.backfill_to:
        if not (payload.backfill_from and payload.backfill_to):
            raise InputError("backfill", "give both backfill_from and backfill_to")
        window = (payload.backfill_from, payload.backfill_to)
    return Status(202, operations.dream_trigger(who, preview=payload.preview, backfill=window))


@api.get(f"{P}/dream/runs/{{run_id}}", response={200: out.RunOut, **ERRORS}, tags=["dreaming"])
def dream_run(request: HttpRequest, slug: str, run_id: int):
    """A run's status, phases and counts; a preview's result once it has finished (read)."""
    return operations.run_get(caller(request, slug, Scope.READ), run_id)


# --- Pages --------------------------------------------------------------------------------


@api.get(f"{P}/pages", response={200: out.PageList, **ERRORS}, tags=["wiki"])
def pages(request: HttpRequest, slug: str):
    """The project's wiki pages and their current revisions (read)."""
    return reading.page_list(caller(request, slug, Scope.READ))


@api.get(f"{P}/pages/{{key}}", response={200: out.PageOut, **ERRORS}, tags=["wiki"])
def page(
    request: HttpRequest,
    slug: str,
    key: str,
    revision: int | None = Query(None, ge=1, description="a revision number; default current"),
):
    """A page's markdown (current revision unless `revision`) and its approved claims (read)."""
    return reading.page_read(caller(request, slug, Scope.READ), key, revision)


# --- Provenance ---------------------------------------------------------------------------


@api.get(
    f"{P}/provenance/{{kind}}/{{object_id}}",
    response={200: out.Provenance, **ERRORS},
    tags=["provenance"],
)
def provenance(
    request: HttpRequest,
    slug: str,
    kind: Literal["claim", "candidate", "episode"],
    object_id: int,
):
    """Where a claim, candidate or episode came from: evidence, sources, sha256, reviews (read)."""
    return reading.provenance(caller(request, slug, Scope.READ), kind, object_id)


# --- Conflicts ----------------------------------------------------------------------------


@api.get(f"{P}/conflicts", response={200: out.ConflictPage, **ERRORS}, tags=["conflicts"])
def conflicts(
    request: HttpRequest,
    slug: str,
    show: Literal["open", "resolved", "all"] = "open",
    paging: Query[Paging] = None,
):
    """Contradictions with both sides and their evidence (read)."""
    who = caller(request, slug, Scope.READ)
    return reading.conflict_list(who, show=show, limit=paging.limit, offset=paging.offset)


@api.get(f"{P}/open-questions", response={200: out.ConflictPage, **ERRORS}, tags=["conflicts"])
def open_questions(request: HttpRequest, slug: str, paging: Query[Paging] = None):
    """Unresolved conflicts, escalated ones (with owner and due date) first (read)."""
    who = caller(request, slug, Scope.READ)
    return reading.open_questions(who, limit=paging.limit, offset=paging.offset)


# --- Retrieval, exports, startup packet ---------------------------------------------------


@api.get(f"{P}/retrieve", response={200: out.ContextPack, **ERRORS}, tags=["retrieval"])
def retrieve(
    request: HttpRequest,
    slug: str,
    q: str = Query(..., max_length=1000, description="what to look for"),
    k: int = Query(10, ge=1, le=MAX_LIMIT, description="at most this many hits"),
    budget: int | None = Query(
        None,
        ge=1,
        description="tokens the context may take (about four characters each); none: no limit",
    ),
    as_of: str | None = Query(
        None,
        max_length=40,
        description="answer as the reviewed memory stood then: YYYY-MM-DD (the end of that "
        "day, UTC) or an ISO 8601 date and time",
    ),
):
    """One ranked list of reviewed claims, page sections, open conflicts and episodes, with
    citations (read). A claim of an open conflict says so (`disputed`).

    Each retrieval is recorded as a recall trace, which feeds dreaming's relevance signals.
    """
    return recall.recall(
        caller(request, slug, Scope.READ), query=q, k=k, budget=budget, as_of=as_of, query_name="q"
    )


@api.get(f"{P}/startup-packet", response={200: out.StartupPacket, **ERRORS}, tags=["exports"])
def startup_packet(
    request: HttpRequest,
    slug: str,
    budget: int | None = Query(
        None,
        ge=MIN_BUDGET,
        description=f"characters the packet may take; default {DEFAULT_BUDGET:,}",
    ),
):
    """The startup packet for an agent on the current reviewed state, internal audience (read)."""
    return recall.startup_packet(caller(request, slug, Scope.READ), budget=budget)


class ExportIn(Schema):
    kind: str = Field(..., description="the export kind (the schema lists them)")
    audience: out.SecurityClassName = "internal"
    budget: int | None = Field(
        None,
        ge=MIN_BUDGET,
        description=f"characters a startup packet may take; default {DEFAULT_BUDGET:,}",
    )

    @field_validator("kind")
    @classmethod
    def _declared(cls, kind: str) -> str:
        if export_kind(kind) is None:
            raise ValueError(f"unknown kind {kind!r}; one of {', '.join(_export_kind_names())}")
        return kind


def _export_kind_names() -> list[str]:
    return export_kind_names(aliases=True)


def _export_kinds_in_schema(schema: dict) -> None:
    """`ExportIn.kind` lists the export kinds declared now."""
    schema["components"]["schemas"]["ExportIn"]["properties"]["kind"]["enum"] = _export_kind_names()


api.schema_hooks.append(_export_kinds_in_schema)


@api.post(f"{P}/exports", response={201: out.ExportOut, **WRITE_ERRORS}, tags=["exports"])
def export_create(request: HttpRequest, slug: str, payload: ExportIn):
    """Build and store an export from approved claims; restricted needs clearance (review)."""
    who = caller(request, slug, Scope.REVIEW)
    return Status(201, recall.export_generate(who, **payload.dict()))


@api.get(f"{P}/exports", response={200: out.ExportList, **ERRORS}, tags=["exports"])
def exports(request: HttpRequest, slug: str):
    """Stored exports with their files, manifest hash, verify status and staleness (review)."""
    return recall.export_list(caller(request, slug, Scope.REVIEW))


@api.get(
    f"{P}/exports/{{export_id}}/files/{{name}}",
    response={200: None, **ERRORS},
    tags=["exports"],
)
def export_download(request: HttpRequest, slug: str, export_id: int, name: str):
    """Download one file of a stored export (review)."""
    path = recall.export_file(caller(request, slug, Scope.REVIEW), export_id, name)
    return FileResponse(path.open("rb"), as_attachment=True, filename=name)
