"""Episodes written one at a time: an event an agent posts, and the app's own bookkeeping.

Files arrive through `llmwiki.ingest`; both paths put outside text through the same gate.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from llmwiki.blobs import blob_discard, blob_write
from llmwiki.errors import InputError, refuse_unstorable
from llmwiki.gate import Scanned, Screened, gate, screen
from llmwiki.importers import registry
from llmwiki.importers.base import EpisodeDraft
from llmwiki.models import AuditEvent, Episode, Project, Source, sha256_hex
from llmwiki.security.raw import redact_texts
from llmwiki.vocabulary import IMPORTED_KINDS

# What one posted event may hold, the same over the JSON API and the MCP server. An event
# says what happened in a few paragraphs; a document is imported as a file.
EVENT_MAX_CONTENT_BYTES = 256 * 1024
EVENT_MAX_TAGS = 50
EVENT_MAX_TAG_CHARS = 100
EVENT_MAX_LOCATOR_BYTES = 4096
EVENT_MAX_AGENT_CHARS = 60
# The kinds an agent may post, as a type both front ends declare in their schemas.
EventKind = Literal[tuple(str(kind) for kind in Episode.AGENT_KINDS)]


def event_check(*, kind: str, content: str, agent: str, tags: list[Any], locator: Any) -> None:
    """InputError naming the first field of a posted event that is not allowed as sent."""
    if kind not in Episode.AGENT_KINDS:
        raise InputError(
            "kind", f"{kind!r} cannot be posted; choose one of {', '.join(Episode.AGENT_KINDS)}"
        )
    if not content or not content.strip():
        raise InputError("content", "is empty")
    refuse_unstorable("content", content)
    size = len(content.encode())
    if size > EVENT_MAX_CONTENT_BYTES:
        raise InputError(
            "content", f"is {size:,} bytes; an event holds at most {EVENT_MAX_CONTENT_BYTES:,}"
        )
    refuse_unstorable("agent", agent)
    if len(agent) > EVENT_MAX_AGENT_CHARS:
        raise InputError(
            "agent", f"is {len(agent):,} characters; at most {EVENT_MAX_AGENT_CHARS} allowed"
        )
    if len(tags) > EVENT_MAX_TAGS:
        raise InputError("tags", f"has {len(tags):,} tags; at most {EVENT_MAX_TAGS} allowed")
    for index, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise InputError(f"tags[{index}]", "is not a string")
        if len(tag) > EVENT_MAX_TAG_CHARS:
            raise InputError(
                f"tags[{index}]",
                f"is {len(tag):,} characters; at most {EVENT_MAX_TAG_CHARS} allowed",
            )
    refuse_unstorable("tags", tags)
    if not isinstance(locator, dict):
        raise InputError("locator", "must be a JSON object")
    refuse_unstorable("locator", locator)
    size = len(json.dumps(locator, ensure_ascii=False).encode())
    if size > EVENT_MAX_LOCATOR_BYTES:
        raise InputError(
            "locator",
            f"is {size:,} bytes as JSON; at most {EVENT_MAX_LOCATOR_BYTES:,} allowed",
        )


def episode_record(
    *,
    project: Project,
    actor: str | Callable[[str], str],
    kind: str,
    content: str,
    occurred_at: datetime | None = None,
    locator: dict | None = None,
    tags: Iterable[str] = (),
    agent: str = "",
) -> Episode:
    """Record one event posted by an agent, through the same gate as file imports.

    Its metadata is outside text as much as its content: `agent` (the name the poster
    gave itself), `tags` and `locator` have their secrets redacted, and their secrets and
    PII flag the episode. `actor` names the poster; a callable is given the screened
    agent name.
    """
    from llmwiki.importers.classify import classify

    tags = list(tags)
    locator = {} if locator is None else locator
    event_check(kind=kind, content=content, agent=agent, tags=tags, locator=locator)
    meta = screen({"agent": agent, "tags": tags, "locator": locator})
    clean = meta.value
    name = (actor(clean["agent"]) if callable(actor) else actor)[:200]
    draft = classify(
        EpisodeDraft(
            content=content.strip(),
            kind=kind if kind in IMPORTED_KINDS else "event",
            actor=name,
            locator=clean["locator"],
            occurred_at=occurred_at,
            tags=tuple(clean["tags"]),
        )
    )
    # The raw event is kept as a source, so an episode posted by an agent has the same
    # provenance as an imported file; with its secrets redacted, under the original's hash.
    event = {
        "actor": actor(agent) if callable(actor) else actor,
        "kind": kind,
        "content": content,
        "occurred_at": occurred_at.isoformat() if occurred_at else None,
        "locator": locator,
        "tags": tags,
    }
    scanned = Scanned.of(draft)
    raw, stored = _raw_event(event, scanned, meta, name)
    scanned = scanned.including(meta)
    sha, written = blob_write(stored, sha256_hex(raw))
    try:
        with transaction.atomic():
            now = timezone.now()
            (row,), summary = gate(project, [scanned], Episode.Trust.DRAFT, now, set())
            summary["raw"] = "redacted" if stored is not raw else "as received"
            source, _ = Source.objects.get_or_create(
                project=project,
                sha256=sha,
                defaults={
                    "size": len(raw),
                    "media_type": "application/json",
                    "original_name": f"{sha[:12]}.json",
                    "path": f"api/{name}/{sha[:12]}.json",
                    "importer": registry.EVENT_IMPORTER,
                    "retrieved_at": now,
                    "security_summary": summary,
                },
            )
            episode = Episode.objects.create(**{**row, "kind": kind, "source": source})
            AuditEvent.record(
                actor=name, action="episode.record", obj=episode, after={"kind": kind}
            )
    except BaseException:
        if written:
            blob_discard(sha)
        raise
    return episode


def _raw_event(event: dict, scanned: Scanned, meta: Screened, name: str) -> tuple[bytes, bytes]:
    """The event's bytes as received, and as stored: redacted when the gate found a secret
    in its content or metadata (the metadata as screened, `name` the screened poster)."""
    raw = json.dumps(event, sort_keys=True, ensure_ascii=False).encode()
    expected = {fp for _, fp in scanned.secrets}
    if not (expected or meta.secrets):
        return raw, raw
    clean = meta.value
    stored = {**event, "actor": name, "locator": clean["locator"], "tags": clean["tags"]}
    if expected:
        [(_, stored["content"])] = redact_texts([("content", event["content"])], expected)
    return raw, json.dumps(stored, sort_keys=True, ensure_ascii=False).encode()


def episode_record_system(
    *, project: Project, actor: str, kind: str, content: str, locator: dict | None = None
) -> Episode:
    """Log a line the app writes about its own work, such as an approval.

    Its text is built by our code from ids and keys, so the ingest gate (classification,
    secret scan, raw blob) has nothing to find in it. Bookkeeping kinds only: sweeps skip
    them, and anything from outside goes through `episode_record`.
    """
    if kind not in Episode.BOOKKEEPING_KINDS:
        raise ValueError(f"{kind!r} is not a bookkeeping kind; record it through the ingest gate")
    now = timezone.now()
    return Episode.objects.create(
        project=project,
        occurred_at=now,
        recorded_at=now,
        actor=actor[:200],
        kind=kind,
        content=content,
        locator=locator or {},
        content_hash=sha256_hex(content),
    )
