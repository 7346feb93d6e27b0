"""Counts for the project pages, gathered from every app without importing them.

`llmwiki` sits at the bottom of the dependency chain, so the apps above it register what
they contribute (candidates, conflicts, the last dream run) in their AppConfig.ready().
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import Count, Q

from llmwiki.models import Claim, Episode, Project

ProjectPanel = Callable[[Project], dict[str, Any]]
ProjectsCounter = Callable[[Iterable[int]], dict[int, dict[str, int]]]
_panels: list[ProjectPanel] = []
_list_counters: list[ProjectsCounter] = []


def register_panel(fn: ProjectPanel) -> ProjectPanel:
    """Add entries to one project's home page context."""
    _panels.append(fn)
    return fn


def register_list_counter(fn: ProjectsCounter) -> ProjectsCounter:
    """Add per-project counts to the project list: {project_id: {name: n}}."""
    _list_counters.append(fn)
    return fn


def project_panel(project: Project) -> dict[str, Any]:
    """Counts per memory layer, one aggregate query per table."""
    episodes = project.episodes.aggregate(
        active=Count("id", filter=Q(status=Episode.Status.ACTIVE)),
        quarantined=Count("id", filter=Q(status=Episode.Status.QUARANTINED)),
    )
    panel: dict[str, Any] = {
        "sources": project.sources.count(),
        "episodes": episodes["active"],
        "quarantined": episodes["quarantined"],
        "claims": project.claims.filter(status=Claim.Status.APPROVED).count(),
        "pages": project.pages.count(),
        "exports": project.exports.count(),
    }
    for fn in _panels:
        panel.update(fn(project))
    return panel


def list_counts(project_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per-project counts for the project list: one grouped query per counter, not a join."""
    counts: dict[int, dict[str, int]] = {pk: {"episodes": 0} for pk in project_ids}
    rows = (
        Episode.objects.filter(project_id__in=project_ids)
        .values("project_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        counts[row["project_id"]]["episodes"] = row["n"]
    for fn in _list_counters:
        for pk, extra in fn(project_ids).items():
            counts[pk].update(extra)
    return counts
