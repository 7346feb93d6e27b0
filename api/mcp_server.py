"""The MCP server: agents' read/record tools over stdio, with the JSON API's permission checks.

Every tool call authenticates the token again and checks its scope, so a token revoked
while a session is open stops working at the next call, as it does on the API.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from importlib import metadata
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from api import operations, reading, recall
from api import schemas as out
from api.core import OFFSET_MAX, PAGE_MAX
from api.models import ApiToken
from api.services import Caller, NotFound, Unauthorized, caller_for, token_authenticate
from llmwiki.errors import InputError, Refused
from llmwiki.record import (
    EVENT_MAX_AGENT_CHARS,
    EVENT_MAX_CONTENT_BYTES,
    EVENT_MAX_LOCATOR_BYTES,
    EVENT_MAX_TAG_CHARS,
    EVENT_MAX_TAGS,
    EventKind,
)
from llmwiki.search.retrieval import MAX_LIMIT, MAX_QUERY
from reviews.exports.documents import DEFAULT_BUDGET, MIN_BUDGET

Scope = ApiToken.Scope

INSTRUCTIONS = (
    "Governed project memory. memory_retrieve answers with one ranked list of reviewed "
    "claims, wiki page sections, open conflicts and episodes, each with citations (as_of: "
    "as the memory stood on a date); memory_record_event adds what you did or learned as an "
    "episode (a human reviews before it becomes memory); memory_open_questions lists "
    "unresolved conflicts; memory_provenance shows where a claim, candidate or episode came "
    "from; memory_startup_packet is the project's reviewed briefing. Every budget is in "
    "tokens (about four characters each)."
)
# Read tools change nothing the agent can see (a retrieval's recall trace is bookkeeping).
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
# Recording adds an episode and removes nothing.
RECORD = ToolAnnotations(
    readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
)
CHARS_PER_TOKEN = 4  # the estimate retrieval counts tokens with

Query = Annotated[
    str,
    Field(description=f"what to look for, in plain words; 1 to {MAX_QUERY} characters"),
]
Limit = Annotated[
    int, Field(ge=1, le=MAX_LIMIT, description=f"at most this many hits, 1 to {MAX_LIMIT}")
]
AsOf = Annotated[
    str | None,
    Field(
        description="answer as the reviewed memory stood then: YYYY-MM-DD (the end of that "
        "day, UTC) or an ISO 8601 date and time; omit for now"
    ),
]
RetrieveBudget = Annotated[
    int | None,
    Field(
        ge=1,
        description="tokens the context may take (about four characters each); omit for no limit",
    ),
]
PacketBudget = Annotated[
    int | None,
    Field(
        ge=MIN_BUDGET // CHARS_PER_TOKEN,
        description="tokens the packet may take (about four characters each), at least "
        f"{MIN_BUDGET // CHARS_PER_TOKEN}; default {DEFAULT_BUDGET // CHARS_PER_TOKEN}",
    ),
]
EventContent = Annotated[
    str,
    Field(description=f"what happened, 1 to {EVENT_MAX_CONTENT_BYTES:,} bytes as UTF-8"),
]
Kind = Annotated[EventKind, Field(description="the episode kind")]
OccurredAt = Annotated[
    datetime | None,
    Field(description="when it happened, ISO 8601 (UTC unless an offset is given); omit for now"),
]
Tags = Annotated[
    list[str] | None,
    Field(
        description=f"up to {EVENT_MAX_TAGS} tags of up to {EVENT_MAX_TAG_CHARS} characters each"
    ),
]
Locator = Annotated[
    dict[str, Any] | None,
    Field(
        description="where it happened (file, line, turn…), up to "
        f"{EVENT_MAX_LOCATOR_BYTES:,} bytes as JSON"
    ),
]
Agent = Annotated[
    str, Field(description=f"your agent name, up to {EVENT_MAX_AGENT_CHARS} characters")
]
PageLimit = Annotated[
    int, Field(ge=1, le=PAGE_MAX, description=f"at most this many conflicts, 1 to {PAGE_MAX}")
]
PageOffset = Annotated[
    int,
    Field(
        ge=0,
        le=OFFSET_MAX,
        description="skip this many first (0 to start; the next page is offset + limit, "
        "until offset reaches `count`)",
    ),
]
ObjectKind = Annotated[
    Literal["claim", "candidate", "episode"], Field(description="what object_id names")
]
ObjectId = Annotated[int, Field(ge=1, description="the claim's, candidate's or episode's id")]

RECORD_EVENT = (
    "Record one event (what happened, what you decided or learned) as an episode. It goes "
    "through the ingest gate (secrets redacted, PII and injections flagged, in the agent "
    "name, tags and locator too) and becomes memory only after dreaming and a human review. "
    f"Limits, as on the JSON API: content up to {EVENT_MAX_CONTENT_BYTES:,} bytes, "
    f"{EVENT_MAX_TAGS} tags of up to {EVENT_MAX_TAG_CHARS} characters, a locator up to "
    f"{EVENT_MAX_LOCATOR_BYTES:,} bytes as JSON, an agent name up to "
    f"{EVENT_MAX_AGENT_CHARS} characters."
)


class ToolRefused(Exception):
    """What the API would answer as an error, said in one line for the agent."""


def _checked(slug: str, token: str, scope: str, work: Callable[[Caller], Any]) -> Any:
    try:
        return work(caller_for(token_authenticate(token), slug, scope))
    except Unauthorized as exc:
        raise ToolRefused(f"401 unauthorized: {exc}") from None
    except NotFound as exc:
        raise ToolRefused(f"404 not found: {exc}") from None
    except Refused as exc:
        raise ToolRefused(f"{exc.status} refused: {exc}") from None
    except InputError as exc:
        raise ToolRefused(f"400 bad input: {exc}") from None


class Server(FastMCP):
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Arguments the tool's schema refuses are answered in one line naming each."""
        try:
            return await super().call_tool(name, arguments)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"400 bad input: {one_line(exc.__cause__)}") from None
            raise


def one_line(error: ValidationError) -> str:
    """ "k: Input should be less than or equal to 100; as_of: Input should be …" """
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}"
        for e in error.errors()
    )


def build_server(slug: str, token: str) -> FastMCP:
    server = Server("llmwiki", instructions=INSTRUCTIONS)
    # FastMCP has no version argument; without this the SDK reports its own version.
    server._mcp_server.version = product_version()

    async def call(scope: str, work: Callable[[Caller], Any]) -> Any:
        # The ORM is synchronous; one worker thread keeps one database connection.
        return await sync_to_async(_checked, thread_sensitive=True)(slug, token, scope, work)

    @server.tool(annotations=READ_ONLY)
    async def memory_retrieve(
        query: Query, k: Limit = 10, budget: RetrieveBudget = None, as_of: AsOf = None
    ) -> out.ContextPack:
        """Search the project's memory: one ranked list of reviewed claims, wiki page
        sections, open conflicts ("disputed: A vs B") and episodes, best first.

        Each item names its layer, trust label and citations (claim ids, evidence episode
        ids, locators); a claim that is a side of an open conflict lists it in `disputed`.
        `context` is the list rendered a line per item, within `budget` tokens if given.
        """
        return await call(
            Scope.READ,
            lambda c: recall.recall(c, query=query, k=k, budget=budget, as_of=as_of),
        )

    @server.tool(description=RECORD_EVENT, annotations=RECORD)
    async def memory_record_event(
        content: EventContent,
        kind: Kind = "event",
        occurred_at: OccurredAt = None,
        tags: Tags = None,
        locator: Locator = None,
        agent: Agent = "",
    ) -> out.RecordedEvent:
        return await call(
            Scope.WRITE_EVENTS,
            lambda c: operations.record_event(
                c,
                kind=kind,
                content=content,
                occurred_at=occurred_at,
                locator=locator,
                tags=tags,
                agent=agent,
            ),
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_open_questions(
        limit: PageLimit = 20, offset: PageOffset = 0
    ) -> out.ConflictPage:
        """Unresolved conflicts between sources, escalated ones (with owner, due date) first,
        a page at a time: `count` says how many there are in all."""
        return await call(
            Scope.READ, lambda c: reading.open_questions(c, limit=limit, offset=offset)
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_provenance(kind: ObjectKind, object_id: ObjectId) -> out.Provenance:
        """Where a claim, candidate or episode came from: evidence, sources, sha256, reviewer."""
        return await call(Scope.READ, lambda c: reading.provenance(c, kind, object_id))

    @server.tool(annotations=READ_ONLY)
    async def memory_startup_packet(budget: PacketBudget = None) -> out.StartupPacket:
        """The project's startup packet: what an agent should know before it starts work,
        built from approved claims and open questions only (internal audience)."""
        chars = budget * CHARS_PER_TOKEN if budget is not None else None
        return await call(Scope.READ, lambda c: recall.startup_packet(c, budget=chars))

    return server


def product_version() -> str:
    """llmwiki's version as installed from pyproject.toml."""
    try:
        return metadata.version("llmwiki")
    except metadata.PackageNotFoundError:
        return "unknown"


def check_token(slug: str, token: str) -> Caller:
    """Fail fast at start-up: the token must be valid for the project (any scope)."""
    return caller_for(token_authenticate(token), slug, None)
