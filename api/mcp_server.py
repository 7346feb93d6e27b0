"""The MCP server: agents' read/record tools over stdio, with the JSON API's permission checks.

Every tool call authenticates the token again and checks its scope, so a token revoked
while a session is open stops working at the next call, as it does on the API.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from asgiref.sync import sync_to_async
from mcp.server.fastmcp import FastMCP

from api import operations, reading, recall
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

Scope = ApiToken.Scope

INSTRUCTIONS = (
    "Governed project memory. memory_retrieve answers from reviewed claims first, then wiki "
    "pages and episodes, each with citations; memory_record_event adds what you did or "
    "learned as an episode (a human reviews before it becomes memory); memory_open_questions "
    "lists unresolved conflicts; memory_provenance shows where a claim, candidate or episode "
    "came from; memory_startup_packet is the project's reviewed briefing."
)

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


def build_server(slug: str, token: str) -> FastMCP:
    server = FastMCP("llmwiki", instructions=INSTRUCTIONS)

    async def call(scope: str, work: Callable[[Caller], Any]) -> Any:
        # The ORM is synchronous; one worker thread keeps one database connection.
        return await sync_to_async(_checked, thread_sensitive=True)(slug, token, scope, work)

    @server.tool()
    async def memory_retrieve(query: str, k: int = 10, budget: int | None = None) -> dict:
        """Search the project's memory: reviewed claims first, then wiki pages and episodes.

        Each item names its layer, trust label and citations (claim id, evidence episode ids,
        locators); `context` is the pack rendered with a header per layer, within `budget`
        tokens if given.
        """
        return await call(Scope.READ, lambda c: recall.recall(c, query=query, k=k, budget=budget))

    @server.tool(description=RECORD_EVENT)
    async def memory_record_event(
        content: str,
        kind: EventKind = "event",
        occurred_at: datetime | None = None,
        tags: list[str] | None = None,
        locator: dict[str, Any] | None = None,
        agent: str = "",
    ) -> dict:
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

    @server.tool()
    async def memory_open_questions(limit: int = 20) -> dict:
        """Unresolved conflicts between sources, escalated ones (with owner, due date) first."""
        return await call(
            Scope.READ, lambda c: reading.open_questions(c, limit=min(max(limit, 1), 200), offset=0)
        )

    @server.tool()
    async def memory_provenance(
        kind: Literal["claim", "candidate", "episode"], object_id: int
    ) -> dict:
        """Where a claim, candidate or episode came from: evidence, sources, sha256, reviewer."""
        return await call(Scope.READ, lambda c: reading.provenance(c, kind, object_id))

    @server.tool()
    async def memory_startup_packet(budget: int | None = None) -> dict:
        """The project's startup packet: what an agent should know before it starts work,
        built from approved claims and open questions only (internal audience)."""
        return await call(Scope.READ, lambda c: recall.startup_packet(c, budget=budget))

    return server


def check_token(slug: str, token: str) -> Caller:
    """Fail fast at start-up: the token must be valid for the project (any scope)."""
    return caller_for(token_authenticate(token), slug, None)
