"""The review queue and the candidate panel, with the review actions run from it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Case,
    Count,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from dreaming import review_actions
from dreaming.models import Candidate, CandidateEvidence, Conflict
from dreaming.selectors import why_panel
from llmwiki.access import Do, get_project_for
from llmwiki.diffs import Row, diff_rows
from llmwiki.models import Page, Project, SecurityClass
from llmwiki.pagination import paginate
from llmwiki.wiki import (
    GENERAL_SECTION,
    PendingClaim,
    approved_claims,
    citation_urls,
    compile_claims_page,
    page_sections,
    readable_markdown,
)
from reviews import actions
from reviews.errors import ReviewRefused
from reviews.forms import (
    ActionForm,
    QueueFilterForm,
)
from reviews.models import Review

QUEUE_PAGE = 25


# --- Queue --------------------------------------------------------------------------------


def queue_queryset(project: Project, data: dict):
    qs = Candidate.objects.filter(project=project, status__in=Candidate.OPEN_STATUSES)
    if data.get("status"):
        qs = qs.filter(status=data["status"])
    if data.get("page_target"):
        qs = qs.filter(page_target=data["page_target"])
    if data.get("security"):
        qs = qs.filter(security_class=data["security"])
    if data.get("risk"):
        qs = qs.annotate(flags_text=Cast("flags", TextField())).filter(
            flags_text__icontains=data["risk"]
        )
    if data.get("min_score") is not None:
        qs = qs.filter(score__gte=data["min_score"])
    if data.get("max_score") is not None:
        qs = qs.filter(score__lte=data["max_score"])
    if data.get("older_than"):
        qs = qs.filter(created_at__lte=timezone.now() - timedelta(days=data["older_than"]))
    # A correlated count: Count("evidence") would GROUP BY every candidate column and
    # sort the 10k-row result in a temporary table (~6x slower at 10k candidates).
    evidence_count = (
        CandidateEvidence.objects.filter(candidate=OuterRef("pk"))
        .order_by()
        .values("candidate")
        .annotate(n=Count("id"))
        .values("n")
    )
    qs = qs.annotate(
        n_evidence=Coalesce(Subquery(evidence_count, output_field=IntegerField()), 0),
        risk=Case(
            When(security_class=SecurityClass.RESTRICTED, then=Value(2)),
            When(flags=[], then=Value(0)),
            default=Value(1),
            output_field=IntegerField(),
        ),
    )
    order = {
        "score": ["-score", "id"],
        "age": ["created_at", "id"],
    }.get(data.get("sort") or "risk", ["-risk", "-rank", "id"])
    return qs.order_by(*order)


@require_GET
@vary_on_headers("HX-Request")
@login_required
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.REVIEW)
    form = QueueFilterForm(request.GET)
    data = form.cleaned_data if form.is_valid() else {}
    page, query = paginate(request, queue_queryset(project, data), QUEUE_PAGE)
    decidable = _decidable_by(request.user, project)
    for candidate in page.object_list:
        candidate.decidable = decidable(candidate)
    counts = Candidate.objects.filter(project=project).aggregate(
        proposed=Count("id", filter=Q(status=Candidate.Status.PROPOSED)),
        deferred=Count("id", filter=Q(status=Candidate.Status.DEFERRED)),
    )
    template = "reviews/queue.html#results" if request.htmx else "reviews/queue.html"
    return render(
        request,
        template,
        {
            "project": project,
            "nav": "review",
            "form": form,
            "page": page,
            "counts": counts,
            "open_conflicts": Conflict.objects.filter(project=project).unresolved().count(),
            "query": query,
        },
    )


# --- Candidate panel and actions ------------------------------------------------------------


def approval_diff(candidate: Candidate, page: Page | None, project: Project) -> list[Row]:
    """The page as it is and as approving would make it, as unified diff rows; the page's
    other claims are shown as the reviewer may read them."""
    if page is None:
        return []
    before = page.current_revision.markdown if page.current_revision else ""
    claims, evidence = approved_claims(page)
    pending = PendingClaim(
        text=candidate.text,
        section=candidate.section,
        evidence=tuple(
            candidate.evidence.filter(role=CandidateEvidence.Role.SUPPORT).values_list(
                "episode_id", flat=True
            )
        ),
    )
    after = compile_claims_page(page, claims, evidence, extra=pending)
    return diff_rows(*readable_markdown(project, before, after), cite=citation_urls(project.slug))


def candidate_context(request: HttpRequest, project: Project, candidate: Candidate) -> dict:
    page = candidate.page_for()
    offered = review_actions.offered_to(candidate, request.user)
    return {
        "project": project,
        "nav": "review",
        "candidate": candidate,
        **why_panel(candidate),
        "page": page,
        "diff": approval_diff(candidate, page, project),
        "reviews": Review.objects.filter(candidate=candidate).select_related("reviewer"),
        "actions": offered,
        "fields": {f for a in offered for f in a.fields},
        "seen": actions.form_state(candidate),
        "sections": page_sections(page) if page else [],
        "general_section": GENERAL_SECTION,
        "sensitive": candidate.is_sensitive,
        "next_revision": (page.current_revision.number + 1)
        if page and page.current_revision
        else 1,
    }


@require_GET
@login_required
def candidate_detail(request: HttpRequest, slug: str, candidate_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.REVIEW)
    candidate = get_object_or_404(
        Candidate.objects.select_related("claim", "run"), project=project, pk=candidate_id
    )
    return render(request, "reviews/candidate.html", candidate_context(request, project, candidate))


@require_POST
@login_required
def candidate_action(
    request: HttpRequest, slug: str, candidate_id: int, action: str
) -> HttpResponse:
    """Any review action of `dreaming.review_actions`, posted from the candidate panel."""
    project = get_project_for(request.user, slug, Do.REVIEW)
    candidate = get_object_or_404(Candidate, project=project, pk=candidate_id)
    form = ActionForm(request.POST)
    if review_actions.get(action) is None or not form.is_valid():
        return _refused(request, project, candidate, "the form was incomplete; reload it", 400)
    data = form.cleaned_data
    decision = review_actions.Decision(
        note=data["note"],
        # The text box always posts: a plain Approve must not drop an edit in it.
        edited_text=data["edited_text"] if "edited_text" in request.POST else None,
        section=data["section"] if "section" in request.POST else None,
        claim_id=data["claim"],
        sensitive_confirmed=data["sensitive_confirmed"],
    )
    try:
        outcome = candidate.on_action(action, request.user, form.seen(), decision)
    except ReviewRefused as refused:
        reads_text = "edited_text" in review_actions.get(action).fields
        edited = decision.edited_text if reads_text else None
        return _refused(request, project, candidate, str(refused), refused.status, edited)
    messages.success(request, outcome.message)
    return redirect(_next_in_queue(request, project, candidate))


def _refused(
    request, project, candidate, message: str, status: int, edited: str | None = None
) -> HttpResponse:
    candidate.refresh_from_db()
    context = candidate_context(request, project, candidate)
    context["refusal"] = message
    # Keep the reviewer's edit in the box, so a refusal never throws their work away.
    context["edited_text"] = edited if edited and edited.strip() != candidate.text else None
    return render(request, "reviews/candidate.html", context, status=status)


def _decidable_by(user, project: Project) -> Callable[[Candidate], bool]:
    """Whether `user` may decide a candidate, as `Candidate.get_actions` answers it: asked
    once per status and sensitivity (all its answer turns on), not once per row."""
    answers: dict[tuple[str, bool], bool] = {}

    def decidable(candidate: Candidate) -> bool:
        key = (candidate.status, candidate.is_sensitive)
        if key not in answers:
            candidate.project = project
            answers[key] = bool(candidate.get_actions(user))
        return answers[key]

    return decidable


def _next_in_queue(request: HttpRequest, project: Project, done: Candidate) -> str:
    """The next candidate in the queue's order this reviewer may decide (the riskiest come
    first, and a reviewer sent to one only a maintainer decides would face a refusal)."""
    decidable = _decidable_by(request.user, project)
    rest = queue_queryset(project, {}).exclude(pk=done.pk)
    nxt = next((c for c in rest.iterator(chunk_size=QUEUE_PAGE) if decidable(c)), None)
    if nxt is None:
        return reverse("reviews:queue", args=[project.slug])
    return reverse("reviews:candidate", args=[project.slug, nxt.pk])
