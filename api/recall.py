"""Retrieval, exports and the startup packet for the JSON API and the MCP server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from api.operations import Scope
from api.services import Caller, NotFound, write_allowed
from llmwiki.access import has_role
from llmwiki.errors import InputError, Refused, refuse_unstorable
from llmwiki.models import Export, SecurityClass
from llmwiki.search import Caller as Reader
from llmwiki.search import RetrievalError, parse_as_of, retrieve
from reviews.exports import ExportOptions, documents, export_create, export_folder
from reviews.exports.selection import select_state
from reviews.exports.service import exports_for_list

STARTUP_PACKET = "STARTUP_PACKET.md"


def recall(
    caller: Caller,
    *,
    query: str,
    k: int = 10,
    budget: int | None = None,
    as_of: str | None = None,
    query_name="query",
) -> dict:
    """One ranked list of claims, sections, open conflicts and episodes as the caller may
    read them; with `as_of` (a date or ISO moment), as the reviewed memory stood then.

    Records a recall trace, which feeds the next sweep's relevance signals. A refusal
    names the argument as the caller sent it: `query_name` for the query, `k`, `budget`,
    `as_of`.
    """
    refuse_unstorable(query_name, query)
    reader = Reader.for_role(caller.actor(), caller.project, caller.role)
    try:
        moment = parse_as_of(as_of) if as_of else None
        pack = retrieve(caller.project, query, caller=reader, limit=k, budget=budget, as_of=moment)
    except RetrievalError as exc:
        sent = {"query": query_name, "limit": "k"}.get(exc.argument, exc.argument)
        raise InputError(sent, str(exc)) from None
    return {**pack.as_json(), "context": pack.as_text()}


def _needs_review(caller: Caller) -> None:
    # The web's Exports page is for reviewers; a token reaches it with the review scope.
    if not caller.token.allows(Scope.REVIEW):
        raise Refused("exports need an API token with the review scope", 403)


def export_out(export: Export) -> dict[str, Any]:
    return {
        "id": export.pk,
        "kind": export.kind,
        "audience": export.audience,
        "generated_at": export.generated_at,
        "manifest_sha256": export.manifest_sha256,
        "files": export.files,
        "status": getattr(export, "status", None),
        "stale": getattr(export, "stale", None),
    }


def export_generate(caller: Caller, *, kind: str, audience: str, budget: int | None) -> dict:
    """Build and store an export through the exports service (its gates decide)."""
    _needs_review(caller)
    write_allowed(caller.token)
    options = ExportOptions(kind, audience, **({"budget": budget} if budget else {}))
    return export_out(export_create(project=caller.project, options=options, actor=caller.user))


def export_list(caller: Caller) -> dict:
    _needs_review(caller)
    return {"items": [export_out(e) for e in exports_for_list(caller.project)]}


def export_file(caller: Caller, export_id: int, name: str) -> Path:
    """The stored file `name` of an export; restricted ones need the restricted clearance."""
    _needs_review(caller)
    export = Export.objects.filter(project=caller.project, pk=export_id).first()
    if export is None:
        raise NotFound(f"no export #{export_id} in {caller.project.slug}")
    if export.audience == SecurityClass.RESTRICTED and not has_role(
        caller.user, caller.project, caller.project.restricted_clearance
    ):
        raise Refused(
            f"a restricted export needs the {caller.project.restricted_clearance} role", 403
        )
    if name not in {entry["name"] for entry in export.files}:
        raise NotFound(f"export #{export_id} has no file {name!r}")
    path = export_folder(export) / name
    if not path.is_file():
        raise NotFound(f"file {name!r} is gone from the export store")
    return path


def startup_packet(caller: Caller, *, budget: int | None = None) -> dict:
    """The startup packet on the current state, for the internal audience; stores nothing.

    Internal leaves out restricted, PII- and secret-flagged material, so it holds nothing
    a read token could not read on the wiki. It points the agent to the API and MCP tools,
    not to files an export would come with.
    """
    state = select_state(caller.project, SecurityClass.INTERNAL)
    ledger = documents.Ledger()
    try:
        files, left_out = documents.startup_packet(
            state, ledger, budget or documents.DEFAULT_BUDGET, reader="api"
        )
    except ValueError as exc:
        raise InputError("budget", str(exc)) from None
    cited = {s["claim_id"] for s in ledger.statements if s["kind"] == "claim"}
    return {
        "markdown": files[STARTUP_PACKET],
        "claim_ids": [pk for pk in state.claim_ids if pk in cited],
        "withheld": dict(sorted(state.withheld.items())),
        "left_out": left_out,
    }
