"""The conflict queue: conflicts listed and resolved."""

from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from dreaming.models import Conflict
from llmwiki.access import Do, Labels, get_project_for
from llmwiki.models import Project
from llmwiki.pagination import paginate
from reviews.conflicts import conflict_resolve, needs_sensitive_confirmation
from reviews.errors import ReviewRefused
from reviews.forms import (
    ConflictResolveForm,
)
from reviews.views.queue import QUEUE_PAGE

# --- Conflicts ----------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
@login_required
def conflicts(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    if request.method == "POST":
        return _resolve(request, project)
    show = request.GET.get("show", "open")
    qs = Conflict.objects.filter(project=project).select_related(
        "owner", "resolved_by", "accepted_claim__page", "accepted_candidate"
    )
    one = request.GET.get("conflict", "")
    if re.fullmatch(r"[0-9]{1,18}", one):
        qs = qs.filter(pk=one)  # one card, open or resolved: where a candidate panel links
    elif show == "resolved":
        qs = qs.filter(status=Conflict.Status.RESOLVED)
    else:
        qs = qs.unresolved()
    qs = qs.prefetch_related(
        "sides__evidence__source", "sides__candidate", "sides__claim__evidence"
    ).order_by("detected_at", "id")
    page, query = paginate(request, qs, QUEUE_PAGE)
    for conflict in page.object_list:
        conflict.labels = Labels.strictest(s.labels for s in conflict.sides.all())
        conflict.sensitive = needs_sensitive_confirmation(conflict.sides.all())
    return render(
        request,
        "reviews/conflicts.html",
        {
            "project": project,
            "nav": "conflicts",
            "page": page,
            "show": show,
            "query": query,
            "resolutions": Conflict.Resolution.choices,
            "now": timezone.now(),
        },
    )


def _outcome(conflict: Conflict) -> str:
    """Where the accepted text went, for the confirmation."""
    if conflict.accepted_claim_id:
        return f" It is approved as claim {conflict.accepted_claim_id}."
    if conflict.accepted_candidate_id:
        return f" It waits for review as candidate #{conflict.accepted_candidate_id}."
    return ""


def _resolve(request: HttpRequest, project: Project) -> HttpResponse:
    project = get_project_for(request.user, project.slug, Do.REVIEW)
    form = ConflictResolveForm(request.POST)
    valid = form.is_valid()
    conflict = get_object_or_404(
        Conflict, project=project, pk=form.cleaned_data.get("conflict") or 0
    )
    if not valid:
        if "resolution" in form.errors:
            messages.error(request, "Choose a resolution.")
        else:
            messages.error(request, " ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        return redirect("reviews:conflicts", slug=project.slug)
    data = form.cleaned_data
    arguments = form.arguments(request.POST)
    if data["owner"] and arguments["owner"] is None:
        messages.error(request, f"No user named {data['owner']!r}.")
        return redirect("reviews:conflicts", slug=project.slug)
    try:
        conflict_resolve(conflict=conflict, actor=request.user, **arguments)
    except ReviewRefused as refused:
        messages.error(request, str(refused))
        return redirect("reviews:conflicts", slug=project.slug)
    conflict.refresh_from_db()
    messages.success(
        request,
        f"Conflict #{conflict.pk}: {conflict.subject} — {data['resolution']}." + _outcome(conflict),
    )
    return redirect("reviews:conflicts", slug=project.slug)
