"""Versions of a source: a re-imported file supersedes what its earlier versions said.

Episodes are history and stay; an episode of an earlier version whose paragraph the new
version no longer contains is marked superseded (with the source that replaced it), so a
sweep never reads it again and the episode list can say so. A paragraph the new version
still contains stays current and is not imported twice.
"""

from __future__ import annotations

from django.db.models import QuerySet

from llmwiki.models import Episode, Project, Source


def _earlier(project: Project, path: str) -> QuerySet[Episode]:
    return Episode.objects.filter(project=project, source__path=path).exclude(
        status=Episode.Status.SUPERSEDED
    )


def still_current(project: Project, path: str, hashes: set[str]) -> set[str]:
    """Which of the new version's paragraph hashes earlier versions hold already."""
    held = _earlier(project, path).filter(content_hash__in=hashes)
    return set(held.values_list("content_hash", flat=True))


def supersede_earlier(source: Source, hashes: set[str]) -> int:
    """Mark the earlier versions' active episodes the new `source` no longer contains.

    The sanctioned bypass of episode immutability, like quarantine; the count goes into the
    source's ingest audit event. Quarantined episodes keep waiting for a maintainer.
    """
    replaced = (
        _earlier(source.project, source.path)
        .filter(status=Episode.Status.ACTIVE)
        .exclude(source=source)
        .exclude(content_hash__in=hashes)
    )
    return replaced._unchecked_update(status=Episode.Status.SUPERSEDED, superseded_by_source=source)
