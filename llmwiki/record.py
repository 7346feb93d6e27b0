"""Episodes written one at a time: an event an agent posts, and the app's own bookkeeping.

Files arrive through `llmwiki.ingest`; both paths put outside text through the same gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from llmwiki.blobs import blob_discard, blob_write
from llmwiki.errors import InputError, refuse_unstorable
from llmwiki.gate import Scanned, gate, mb
from llmwiki.importers.base import KINDS, EpisodeDraft
from llmwiki.models import AuditEvent, Episode, Project, Source, sha256_hex
from llmwiki.security.raw import redact_texts


def episode_record(
    *,
    project: Project,
    actor: str,
    kind: str,
    content: str,
    occurred_at: datetime | None = None,
    locator: dict | None = None,
    tags: Iterable[str] = (),
) -> Episode:
    """Record one event posted by an agent, through the same gate as file imports."""
    from llmwiki.importers.classify import classify

    if kind not in Episode.Kind.values:
        raise InputError(
            "kind", f"unknown kind {kind!r}; choose one of {', '.join(Episode.Kind.values)}"
        )
    if not content or not content.strip():
        raise InputError("content", "is empty")
    refuse_unstorable("content", content)
    tags = list(tags)
    refuse_unstorable("tags", tags)
    refuse_unstorable("locator", locator)
    if len(content.encode()) > settings.LLMWIKI_MAX_FILE_BYTES:
        raise InputError("content", f"over the {mb(settings.LLMWIKI_MAX_FILE_BYTES)} limit")
    draft = classify(
        EpisodeDraft(
            content=content.strip(),
            kind=kind if kind in KINDS else "event",
            actor=actor,
            locator=locator or {},
            occurred_at=occurred_at,
            tags=tuple(tags),
        )
    )
    # The raw event is kept as a source, so an episode posted by an agent has the same
    # provenance as an imported file; with its secrets redacted, under the original's hash.
    event = {
        "actor": actor,
        "kind": kind,
        "content": content,
        "occurred_at": occurred_at.isoformat() if occurred_at else None,
        "locator": locator or {},
        "tags": list(tags),
    }
    raw = json.dumps(event, sort_keys=True, ensure_ascii=False).encode()
    scanned = Scanned.of(draft)
    expected = {fp for _, fp in scanned.secrets}
    stored = raw
    if expected:
        [(_, event["content"])] = redact_texts([("content", content)], expected)
        stored = json.dumps(event, sort_keys=True, ensure_ascii=False).encode()
    sha, written = blob_write(stored, sha256_hex(raw))
    try:
        with transaction.atomic():
            now = timezone.now()
            (row,), summary = gate(project, [scanned], Episode.Trust.DRAFT, now, set())
            summary["raw"] = "redacted" if expected else "as received"
            source, _ = Source.objects.get_or_create(
                project=project,
                sha256=sha,
                defaults={
                    "size": len(raw),
                    "media_type": "application/json",
                    "original_name": f"{sha[:12]}.json",
                    "path": f"api/{actor}/{sha[:12]}.json",
                    "importer": "api",
                    "retrieved_at": now,
                    "security_summary": summary,
                },
            )
            episode = Episode.objects.create(**{**row, "kind": kind, "source": source})
            AuditEvent.record(
                actor=actor, action="episode.record", obj=episode, after={"kind": kind}
            )
    except BaseException:
        if written:
            blob_discard(sha)
        raise
    return episode


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
