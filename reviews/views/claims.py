"""A claim: its provenance and its retraction."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from llmwiki import wiki
from llmwiki.access import Do, get_project_for
from llmwiki.errors import Refused
from llmwiki.models import AuditEvent, Claim
from reviews.forms import (
    RetractForm,
)


@require_GET
@login_required
def claim_detail(request: HttpRequest, slug: str, claim_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug)
    claim = get_object_or_404(
        Claim.objects.select_related("page", "reviewer", "supersedes"), project=project, pk=claim_id
    )
    evidence = claim.evidence.select_related("source").order_by("occurred_at", "id")
    candidates = claim.candidates.prefetch_related("reviews__reviewer")
    # Every revision is scanned (JSON containment is not portable to SQLite), so leave
    # the markdown, which grows with the page, unread.
    revisions = [
        r
        for r in claim.page.revisions.only("id", "page", "number", "claim_ids").order_by("-number")
        if claim.pk in (r.claim_ids or [])
    ]
    return render(
        request,
        "reviews/claim.html",
        {
            "project": project,
            "nav": "wiki",
            "claim": claim,
            "evidence": evidence,
            "candidates": candidates,
            "revisions": revisions,
            "superseded_by": Claim.objects.filter(supersedes=claim).first(),
            # The event that ended an approval, so the page says who ended it and why.
            "ended": None
            if claim.is_approved
            else AuditEvent.objects.filter(
                object_type="Claim", object_id=str(claim.pk), action=f"claim.{claim.status}"
            ).first(),
        },
    )


@require_POST
@login_required
def claim_retract(request: HttpRequest, slug: str, claim_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.REVIEW)
    claim = get_object_or_404(Claim, project=project, pk=claim_id)
    form = RetractForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why the claim is retracted.")
        return redirect("reviews:claim", slug=project.slug, claim_id=claim.pk)
    try:
        wiki.claim_retract(claim=claim, actor=request.user, reason=form.cleaned_data["reason"])
    except Refused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, f"Claim {claim.pk} retracted.")
    return redirect("reviews:claim", slug=project.slug, claim_id=claim.pk)
