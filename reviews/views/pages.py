"""Wiki pages: the list, a page, its history, diffs between revisions and rollback."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import (
    Count,
    Q,
)
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from llmwiki import wiki
from llmwiki.access import Do, get_project_for
from llmwiki.diffs import diff_rows
from llmwiki.errors import Refused
from llmwiki.models import Claim, Page, PageRevision, Project
from llmwiki.render import render_markdown
from llmwiki.wiki import (
    GENERAL_SECTION,
    citation_urls,
    readable_markdown,
)
from reviews.forms import (
    RollbackForm,
)

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
