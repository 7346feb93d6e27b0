"""The reviewer's application: queue, candidate panel, actions, conflicts, wiki pages."""

from __future__ import annotations

import re
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
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from dreaming.models import Candidate, CandidateEvidence, Conflict
from dreaming.selectors import why_panel
from llmwiki import wiki
from llmwiki.access import Do, Labels, get_project_for
from llmwiki.diffs import Row, diff_rows
from llmwiki.errors import Refused
from llmwiki.models import AuditEvent, Claim, Page, PageRevision, Project, SecurityClass
from llmwiki.pagination import paginate
from llmwiki.render import render_markdown
from llmwiki.wiki import (
    GENERAL_SECTION,
    PendingClaim,
    approved_claims,
    citation_urls,
    compile_claims_page,
    page_sections,
    readable_markdown,
)
from reviews import actions, services
from reviews.conflicts import conflict_resolve, needs_sensitive_confirmation
from reviews.forms import (
    ActionForm,
    ConflictResolveForm,
    QueueFilterForm,
    RetractForm,
    RollbackForm,
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
    }.get(data.get("sort") or "risk", ["-risk", "-score", "id"])
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
    return {
        "project": project,
        "nav": "review",
        "candidate": candidate,
        **why_panel(candidate),
        "page": page,
        "diff": approval_diff(candidate, page, project),
        "reviews": Review.objects.filter(candidate=candidate).select_related("reviewer"),
        "actions": candidate.get_actions(request.user),
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


ACTIONS = {"approve", "approve-edit", "reject", "defer", "merge"}


@require_POST
@login_required
def candidate_action(
    request: HttpRequest, slug: str, candidate_id: int, action: str
) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.REVIEW)
    candidate = get_object_or_404(Candidate, project=project, pk=candidate_id)
    form = ActionForm(request.POST)
    if action not in ACTIONS or not form.is_valid():
        return _refused(request, project, candidate, "the form was incomplete; reload it", 400)
    data, seen = form.cleaned_data, form.seen()
    try:
        if action in {"approve", "approve-edit"}:
            claim = actions.candidate_approve(
                candidate=candidate,
                reviewer=request.user,
                seen=seen,
                # The text box always posts: a plain Approve must not drop an edit in it.
                edited_text=data["edited_text"] if "edited_text" in request.POST else None,
                as_edited=action == "approve-edit",
                section=data["section"] if "section" in request.POST else None,
                note=data["note"],
                sensitive_confirmed=data["sensitive_confirmed"],
            )
            messages.success(request, _approved_message(claim, seen))
        elif action == "reject":
            actions.candidate_reject(
                candidate=candidate, reviewer=request.user, seen=seen, reason=data["note"]
            )
            messages.success(request, f"Rejected candidate #{candidate.pk}.")
        elif action == "defer":
            actions.candidate_defer(
                candidate=candidate, reviewer=request.user, seen=seen, note=data["note"]
            )
            messages.success(request, f"Deferred candidate #{candidate.pk}.")
        else:
            target = actions.candidate_merge(
                candidate=candidate,
                reviewer=request.user,
                seen=seen,
                claim=Claim.objects.filter(project=project, pk=data["claim"] or 0).first(),
                note=data["note"],
                sensitive_confirmed=data["sensitive_confirmed"],
            )
            messages.success(request, f"Merged into claim {target.pk}.")
    except services.ReviewRefused as refused:
        edited = data.get("edited_text") if action.startswith("approve") else None
        return _refused(request, project, candidate, str(refused), refused.status, edited)
    return redirect(_next_in_queue(request, project, candidate))


def _approved_message(claim: Claim, seen: actions.FormState) -> str:
    """The confirmation; it says so when the approval was re-based onto a newer revision."""
    published = claim.page.current_revision
    message = f"Approved: claim {claim.pk} on {claim.page.key}."
    if published is not None and published.parent_id != seen.page_revision_id:
        was = PageRevision.objects.filter(pk=seen.page_revision_id).first()
        message += (
            f" The page had changed since you opened the candidate"
            f" (you saw {f'r{was.number}' if was else 'no revision'}; others published up to "
            f"r{published.number - 1}) but not in the claim's section, so it was added to the "
            f"current page as r{published.number}."
        )
    return message


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
    except services.ReviewRefused as refused:
        messages.error(request, str(refused))
        return redirect("reviews:conflicts", slug=project.slug)
    conflict.refresh_from_db()
    messages.success(
        request,
        f"Conflict #{conflict.pk}: {conflict.subject} — {data['resolution']}." + _outcome(conflict),
    )
    return redirect("reviews:conflicts", slug=project.slug)


# --- Wiki pages and claims -----------------------------------------------------------------


@require_GET
@login_required
def page_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    pages = (
        Page.objects.filter(project=project)
        .select_related("owner", "current_revision")
        .annotate(n_claims=Count("claims", filter=Q(claims__status=Claim.Status.APPROVED)))
        .order_by("key")
    )
    return render(
        request, "reviews/page_list.html", {"project": project, "nav": "wiki", "pages": pages}
    )


def get_page(project: Project, key: str) -> Page:
    return get_object_or_404(
        Page.objects.select_related("current_revision__author", "owner"),
        project=project,
        key=key,
    )


@require_GET
@login_required
def page_view(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    page = get_page(project, key)
    revision = page.current_revision
    claims = list(
        page.claims.approved()
        .select_related("reviewer")
        .annotate(n_evidence=Count("evidence"))
        .order_by("section", "id")
    )
    sections: dict[str, list[Claim]] = {}
    for c in claims:
        sections.setdefault(c.section or GENERAL_SECTION, []).append(c)
    return render(
        request,
        "reviews/page_view.html",
        {
            "project": project,
            "nav": "wiki",
            "page": page,
            "revision": revision,
            "html": render_markdown(
                readable_markdown(project, revision.markdown)[0],
                cite=citation_urls(project.slug),
            )
            if revision
            else "",
            "sections": sections,
        },
    )


@require_GET
@login_required
def page_history(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    page = get_page(project, key)
    revisions = page.revisions.select_related("author").order_by("-number")
    return render(
        request,
        "reviews/page_history.html",
        {"project": project, "nav": "wiki", "page": page, "revisions": revisions},
    )


@require_GET
@login_required
def page_diff(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    page = get_page(project, key)
    numbers = sorted(page.revisions.values_list("number", flat=True))
    if not numbers:
        return redirect("reviews:page", slug=project.slug, key=key)

    def pick(name: str, default: int) -> PageRevision:
        try:
            number = int(request.GET.get(name, default))
        except ValueError:
            number = default
        return get_object_or_404(PageRevision, page=page, number=number)

    a = pick("a", numbers[-2] if len(numbers) > 1 else numbers[-1])
    b = pick("b", numbers[-1])
    return render(
        request,
        "reviews/page_diff.html",
        {
            "project": project,
            "nav": "wiki",
            "page": page,
            "a": a,
            "b": b,
            "numbers": numbers,
            "rows": diff_rows(
                *readable_markdown(project, a.markdown, b.markdown),
                context=3,
                cite=citation_urls(project.slug),
            ),
            "labels": (f"r{a.number}", f"r{b.number}"),
        },
    )


@require_http_methods(["GET", "POST"])
@login_required
def page_rollback(request: HttpRequest, slug: str, key: str) -> HttpResponse:
    """GET asks for confirmation and a reason; POST publishes the chosen revision again."""
    project = get_project_for(request.user, slug, Do.ROLLBACK)
    page = get_page(project, key)
    posted = request.method == "POST"
    # The history page links here with ?revision=N; this page's form posts it with the reason.
    form = RollbackForm(request.POST if posted else request.GET)
    valid = form.is_valid()
    number = form.cleaned_data.get("revision")
    if number is None:
        messages.error(request, "Choose a revision to roll back to.")
        return redirect("reviews:page_history", slug=project.slug, key=key)
    revision = get_object_or_404(PageRevision, page=page, number=number)
    if posted and valid:
        try:
            new = wiki.page_rollback(
                page=page,
                revision=revision,
                actor=request.user,
                reason=form.cleaned_data["reason"],
            )
        except Refused as refused:
            messages.error(request, str(refused))
            return redirect("reviews:page_history", slug=project.slug, key=key)
        messages.success(request, f"Rolled back to r{revision.number} as r{new.number}.")
        return redirect("reviews:page", slug=project.slug, key=key)
    if not posted:
        form = RollbackForm(initial={"revision": number})  # no "required" error before a try
    current = page.current_revision
    return render(
        request,
        "reviews/page_rollback.html",
        {
            "project": project,
            "nav": "wiki",
            "page": page,
            "revision": revision,
            "current": current,
            "form": form,
            "rows": diff_rows(
                current.markdown if current else "",
                revision.markdown,
                context=3,
                cite=citation_urls(project.slug),
            ),
        },
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
