"""Counts for the project pages, gathered from every app without importing them.

`llmwiki` sits at the bottom of the dependency chain, so the apps above it register what
they contribute (candidates, conflicts, the last dream run) in their AppConfig.ready().
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from croniter import croniter
from django.db.models import Count, Q
from django.utils import timezone

from llmwiki.models import Episode, Project
from llmwiki.schedule import describe_cron

ProjectPanel = Callable[[Project], dict[str, Any]]
ProjectsCounter = Callable[[Iterable[int]], dict[int, dict[str, int]]]
EpisodePanel = Callable[[Episode], dict[str, Any]]
_panels: list[ProjectPanel] = []
_list_counters: list[ProjectsCounter] = []
_episode_panels: list[EpisodePanel] = []


def register_panel(fn: ProjectPanel) -> ProjectPanel:
    """Add entries to one project's home page context."""
    _panels.append(fn)
    return fn


def register_list_counter(fn: ProjectsCounter) -> ProjectsCounter:
    """Add per-project counts to the project list: {project_id: {name: n}}."""
    _list_counters.append(fn)
    return fn


def register_episode_panel(fn: EpisodePanel) -> EpisodePanel:
    """Add entries to an episode's page: what in that app cites the episode."""
    _episode_panels.append(fn)
    return fn


def episode_panel(episode: Episode) -> dict[str, Any]:
    """Everything that cites `episode`: the claims here, and what other apps register."""
    panel: dict[str, Any] = {
        "claims": list(episode.claims.select_related("page").order_by("-approved_at", "-id")),
    }
    for fn in _episode_panels:
        panel.update(fn(episode))
    return panel


# The project list and the project home count episodes the same way: what the memory holds
# (active) and what waits in quarantine; discarded and erased episodes are in neither.
EPISODE_COUNTS = {
    "episodes": Count("id", filter=Q(status=Episode.Status.ACTIVE)),
    "quarantined": Count("id", filter=Q(status=Episode.Status.QUARANTINED)),
}


def project_panel(project: Project) -> dict[str, Any]:
    """Counts per memory layer, one aggregate query per table, and the sweep schedule."""
    panel: dict[str, Any] = {
        "sources": project.sources.count(),
        **project.episodes.aggregate(**EPISODE_COUNTS),
        "claims": project.claims.approved().count(),
        "pages": project.pages.count(),
        "exports": project.exports.count(),
        "schedule": describe_cron(project.dream_schedule),
        "next_run": next_run(project),
    }
    for fn in _panels:
        panel.update(fn(project))
    return panel


def next_run(project: Project) -> Any:
    """When the scheduled sweep runs next, or None while dreaming is off."""
    # The settings form validates the schedule; a row written around it must not 500 a page.
    if not project.dreaming_enabled or not croniter.is_valid(project.dream_schedule):
        return None
    now = timezone.now()
    return croniter(project.dream_schedule, now).get_next(type(now))


def list_counts(project_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per-project counts for the project list: one grouped query per counter, not a join."""
    counts: dict[int, dict[str, int]] = {pk: dict.fromkeys(EPISODE_COUNTS, 0) for pk in project_ids}
    rows = (
        Episode.objects.filter(project_id__in=project_ids)
        .values("project_id")
        .annotate(**EPISODE_COUNTS)
        .order_by()
    )
    for row in rows:
        counts[row.pop("project_id")].update(row)
    for fn in _list_counters:
        for pk, extra in fn(project_ids).items():
            counts[pk].update(extra)
    return counts
