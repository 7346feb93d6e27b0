from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.access import get_project_for, projects_for
from llmwiki.models import Claim, Episode, Project


@require_GET
@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = projects_for(request.user).annotate(
        episode_count=Count("episodes", distinct=True),
        open_candidates=Count(
            "candidates", filter=Q(candidates__status__in=Candidate.OPEN_STATUSES), distinct=True
        ),
    )
    return render(request, "llmwiki/project_list.html", {"projects": projects})


@require_GET
@login_required
def project_home(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    return render(
        request,
        "llmwiki/project_home.html",
        {"project": project, "layers": layer_counts(project), "last_run": last_run(project)},
    )


def layer_counts(project: Project) -> dict[str, int]:
    """Counts per memory layer, one aggregate query per table."""
    sources = project.sources.aggregate(n=Count("id"))["n"]
    episodes = project.episodes.aggregate(
        active=Count("id", filter=Q(status=Episode.Status.ACTIVE)),
        quarantined=Count("id", filter=Q(status=Episode.Status.QUARANTINED)),
    )
    candidates = Candidate.objects.filter(project=project).aggregate(
        open=Count("id", filter=Q(status__in=Candidate.OPEN_STATUSES))
    )
    conflicts = Conflict.objects.filter(project=project).aggregate(
        open=Count("id", filter=~Q(status=Conflict.Status.RESOLVED))
    )
    claims = project.claims.aggregate(n=Count("id", filter=Q(status=Claim.Status.APPROVED)))
    return {
        "sources": sources,
        "episodes": episodes["active"],
        "quarantined": episodes["quarantined"],
        "candidates": candidates["open"],
        "conflicts": conflicts["open"],
        "claims": claims["n"],
        "pages": project.pages.count(),
        "exports": project.exports.count(),
    }


def last_run(project: Project) -> DreamRun | None:
    return DreamRun.objects.filter(project=project).order_by("-created_at").first()
