"""The ingest gate: every episode passes it before it is stored, from a file or an agent.

A draft is scanned (secrets redacted, injection and PII flagged, a security class set);
an agent's event metadata is screened for secrets and PII the same way (`screen`);
`gate` turns scanned drafts into episode rows and a summary that names no secret value.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, NamedTuple

from llmwiki import security
from llmwiki.importers.base import EpisodeDraft
from llmwiki.models import Episode, Project, sha256_hex


class Scanned(NamedTuple):
    """A draft after the gate, as plain values: cheap to send back from a worker process."""

    text: str  # redacted
    kind: str
    actor: str
    locator: dict
    occurred_at: datetime | None
    memory_type: str
    memory_type_reason: str
    tags: tuple[str, ...]
    flags: tuple[str, ...]
    secrets: tuple[tuple[str, str], ...]  # (kind, fingerprint), never the value
    security_class: str
    high_risk: bool

    @classmethod
    def of(cls, draft: EpisodeDraft) -> Scanned:
        result = security.scan(draft.content)
        return cls(
            result.text,
            draft.kind,
            draft.actor,
            draft.locator,
            draft.occurred_at,
            draft.memory_type,
            draft.memory_type_reason,
            draft.tags,
            result.flags,
            tuple((f.kind, f.fingerprint) for f in result.secrets),
            result.security_class,
            result.high_risk,
        )

    def including(self, found: Screened) -> Scanned:
        """This draft with the findings of its screened metadata added."""
        if not found.flags:
            return self
        return self._replace(
            flags=tuple(sorted(set(self.flags) | found.flags)),
            secrets=tuple(sorted(set(self.secrets) | found.secrets)),
            security_class="restricted",
        )


class Screened(NamedTuple):
    """Metadata after the gate: its secrets redacted, and what was found in it."""

    value: Any
    flags: frozenset[str]  # secret:<kind> and pii:<kind>, as on content
    secrets: frozenset[tuple[str, str]]  # (kind, fingerprint), never the value


def screen(value: Any) -> Screened:
    """Screen every string of a JSON value (keys too) with the content's secret and PII scan."""
    flags: set[str] = set()
    secrets: set[tuple[str, str]] = set()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            result = security.scan(item)
            flags.update(f.flag for f in result.secrets)
            flags.update(result.pii)
            secrets.update((f.kind, f.fingerprint) for f in result.secrets)
            return result.text
        if isinstance(item, dict):
            return {walk(key): walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [walk(inner) for inner in item]
        return item

    clean = walk(value)
    return Screened(clean, frozenset(flags), frozenset(secrets))


def gate(
    project: Project,
    analysed: list[Scanned],
    trust: str,
    now: datetime,
    known_hashes: set[str],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Build episode rows ({attname: value}) from scanned drafts, and a value-free summary."""
    rows: list[dict[str, Any]] = []
    flag_counts: Counter[str] = Counter()
    fingerprints: set[tuple[str, str]] = set()
    seen = set(known_hashes)
    for item in analysed:
        content_hash = sha256_hex(item.text)
        if content_hash in seen:
            continue  # unchanged paragraph of a new version, or a verbatim repeat in the file
        seen.add(content_hash)
        flag_counts.update(item.flags)
        fingerprints.update(item.secrets)
        rows.append(
            {
                "project_id": project.pk,
                "occurred_at": item.occurred_at or now,
                "recorded_at": now,
                "actor": item.actor,
                "kind": item.kind,
                "content": item.text,
                "locator": item.locator,
                "memory_type": item.memory_type,
                "memory_type_reason": item.memory_type_reason,
                "trust": trust,
                "security_class": item.security_class,
                "flags": list(item.flags),
                "tags": list(item.tags),
                "content_hash": content_hash,
                "status": Episode.Status.QUARANTINED if item.high_risk else Episode.Status.ACTIVE,
            }
        )
    summary = {
        "flags": dict(flag_counts),
        "secrets": [{"kind": k, "fingerprint": f} for k, f in sorted(fingerprints)],
        "quarantined": sum(1 for r in rows if r["status"] == Episode.Status.QUARANTINED),
    }
    return rows, summary


def mb(n: int) -> str:
    """A size as the limit messages of both write paths print it."""
    return f"{n / 1_048_576:.1f} MB"
