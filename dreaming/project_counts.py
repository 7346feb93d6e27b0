"""What dreaming contributes to the project pages (registered in DreamingConfig.ready)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q

from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide, DreamRun
from llmwiki.models import Episode, Project
from llmwiki.project_counts import register_episode_panel, register_list_counter, register_panel


@register_panel
def dreaming_panel(project: Project) -> dict[str, Any]:
    return {
        "candidates": Candidate.objects.filter(project=project).open().count(),
        "conflicts": Conflict.objects.filter(project=project).unresolved().count(),
        # A preview writes nothing, so the last sweep is the last run that could have.
        "last_sweep": DreamRun.objects.filter(project=project)
        .exclude(trigger=DreamRun.Trigger.PREVIEW)
        .order_by("-created_at", "-id")
        .first(),
    }


@register_list_counter
def open_candidates(project_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    rows = (
        Candidate.objects.filter(project_id__in=project_ids)
        .values("project_id")
        .annotate(n=Count("id", filter=Q(status__in=Candidate.OPEN_STATUSES)))
        .order_by()
    )
    return {row["project_id"]: {"open_candidates": row["n"]} for row in rows}


@register_episode_panel
def episode_citations(episode: Episode) -> dict[str, Any]:
    return {
        "candidate_evidence": list(
            CandidateEvidence.objects.filter(episode=episode)
            .select_related("candidate")
            .order_by("-candidate__created_at", "-candidate_id")
        ),
        "conflict_sides": list(
            ConflictSide.objects.filter(evidence=episode)
            .select_related("conflict")
            .order_by("-conflict__detected_at", "-id")
        ),
    }
