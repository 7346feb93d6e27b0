"""Fixture files and small helpers the importer tests share."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from llmwiki.importers import EpisodeDraft, TextFile

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "importers"


def fixture(relpath: str) -> TextFile:
    # newline="" keeps the bytes' line endings, as the ingest service must.
    with open(FIXTURES / relpath, encoding="utf-8", newline="") as handle:
        return TextFile(relpath, handle.read())


def all_fixtures() -> list[TextFile]:
    return [
        fixture(p.relative_to(FIXTURES).as_posix())
        for p in sorted(FIXTURES.rglob("*"))
        if p.is_file()
    ]


def by_content(drafts: list[EpisodeDraft], needle: str) -> EpisodeDraft:
    matches = [d for d in drafts if needle in d.content]
    assert len(matches) == 1, f"{needle!r} in {len(matches)} drafts"
    return matches[0]


def dt(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# A starter bundle: four pages and the MANIFEST.json that hashes them.
SYSTEM_OVERVIEW = """# System overview

## Components

The web app runs on Django; dreaming runs in django-q2 workers.

## Storage

Blobs are content-addressed by sha256 under the data directory.
"""
GLOSSARY = """# Glossary

- **Episode** — an append-only normalised event.
- **Claim**: an approved knowledge unit with provenance.
- Watermark: the newest episode a sweep has read,
  kept per project.

## Candidate

A proposed claim waiting for review.
"""
RUNBOOKS = """# Runbooks

## Restore a backup

1. Stop the worker
2. Copy the backup into place
3. Start the worker
"""
DECISION_LOG = """# Decision log

- 2026-01-01: Whoosh is the embedded search index.
- 2026-01-02: PostgreSQL full-text search when running on PostgreSQL.
"""


def starter_bundle(root: str = "starter", *, tamper: str | None = None) -> list[TextFile]:
    pages = {
        "SYSTEM_OVERVIEW.md": SYSTEM_OVERVIEW,
        "GLOSSARY.md": GLOSSARY,
        "RUNBOOKS.md": RUNBOOKS,
        "DECISION_LOG.md": DECISION_LOG,
    }
    manifest = {
        "generator": "llmwiki",
        "files": [
            {"path": name, "sha256": hashlib.sha256(text.encode()).hexdigest()}
            for name, text in pages.items()
        ],
    }
    if tamper is not None:
        pages[tamper] += "\nAn edit after export.\n"
    files = [TextFile(f"{root}/{name}", text) for name, text in pages.items()]
    return [*files, TextFile(f"{root}/MANIFEST.json", json.dumps(manifest, indent=2))]
