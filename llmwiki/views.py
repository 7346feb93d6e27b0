from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import TextField
from django.db.models.functions import Cast
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.middleware import csrf
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from llmwiki import access
from llmwiki.access import Do, get_project_for, projects_for, readable_only
from llmwiki.errors import InputError
from llmwiki.excerpt import source_excerpt
from llmwiki.forms import (
    EpisodeFilterForm,
    ProjectSettingsForm,
    QuarantineDecisionForm,
    UploadForm,
    read_upload,
)
from llmwiki.ingest import ingest_files
from llmwiki.models import Episode
from llmwiki.pagination import paginate
from llmwiki.project_counts import episode_panel, list_counts, project_panel
from llmwiki.services import episode_set_status, project_update


def locked_out(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    """What django-axes answers a locked-out login with: what happened and for how long."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(
        request,
        "registration/locked_out.html",
        {"username": username, "failures": settings.AXES_FAILURE_LIMIT, "minutes": minutes},
        status=429,
    )


@require_GET
@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = list(projects_for(request.user).order_by("name"))
    counts = list_counts([p.pk for p in projects])
    for p in projects:
        p.counts = counts[p.pk]
    return render(request, "llmwiki/project_list.html", {"projects": projects})


@require_GET
@login_required
def project_home(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    return render(
        request,
        "llmwiki/project_home.html",
        {"project": project, "nav": "home", "layers": project_panel(project)},
    )


# --- Ingest: upload, episodes, quarantine -------------------------------------------------


@vary_on_headers("HX-Request")
@login_required
def upload(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.INGEST)
    form = UploadForm()
    report = error = None
    if request.method == "POST":
        # An error is shown in the results area, which is all an HTMX post swaps in.
        form, files, error = read_upload(request)
        if files is not None:
            try:
                report = ingest_files(project=project, files=files, actor=request.user)
            except InputError as exc:
                error = str(exc)
    elif request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    template = "llmwiki/upload.html#results" if request.htmx else "llmwiki/upload.html"
    return render(
        request,
        template,
        {"project": project, "nav": "upload", "form": form, "report": report, "error": error},
    )


EPISODES_PER_PAGE = 50


@require_GET
@vary_on_headers("HX-Request")
@login_required
def episode_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    form = EpisodeFilterForm(request.GET)
    episodes = (
        Episode.objects.filter(project=project)
        .select_related("source", "superseded_by_source")
        .with_label_in_force()
    )
    if form.is_valid():
        f = form.cleaned_data
        # The memory type filter reads the label in force, as the list shows it.
        for field, column in (
            ("kind", "kind"),
            ("memory_type", "label_in_force"),
            ("status", "status"),
        ):
            if f[field]:
                episodes = episodes.filter(**{column: f[field]})
        if f["flag"]:
            episodes = episodes.annotate(flags_text=Cast("flags", TextField())).filter(
                flags_text__icontains=f["flag"]
            )
        if f["since"]:
            episodes = episodes.filter(occurred_at__date__gte=f["since"])
        if f["until"]:
            episodes = episodes.filter(occurred_at__date__lte=f["until"])
        if f["q"]:
            episodes = readable_only(project, episodes).filter(content__icontains=f["q"])
    page, query = paginate(request, episodes.order_by("-occurred_at", "-id"), EPISODES_PER_PAGE)
    template = "llmwiki/episode_list.html#results" if request.htmx else "llmwiki/episode_list.html"
    return render(
        request,
        template,
        {
            "project": project,
            "nav": "episodes",
            "form": form,
            "page": page,
            "query": query,
        },
    )


@require_GET
@login_required
def episode_detail(request: HttpRequest, slug: str, episode_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug)
    episode = get_object_or_404(
        Episode.objects.select_related("source", "supersedes").with_label_in_force(),
        project=project,
        pk=episode_id,
    )
    withheld_note = access.withheld(project, episode)
    return render(
        request,
        "llmwiki/episode_detail.html",
        {
            "project": project,
            "nav": "episodes",
            "episode": episode,
            "withheld_note": withheld_note,
            # Withheld text stays unread, raw lines included.
            "excerpt": None if withheld_note else source_excerpt(episode),
            "relabels": episode.relabels.order_by("id"),
            **episode_panel(episode),
        },
    )


@vary_on_headers("HX-Request")
@login_required
def quarantine(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.QUARANTINE)
    if request.method == "POST":
        episode = get_object_or_404(
            Episode,
            project=project,
            pk=request.POST.get("episode"),
            status=Episode.Status.QUARANTINED,
        )
        form = QuarantineDecisionForm(request.POST)
        if form.is_valid():
            status = (
                Episode.Status.ACTIVE
                if form.cleaned_data["decision"] == "release"
                else Episode.Status.DISCARDED
            )
            episode_set_status(
                episode=episode, status=status, actor=request.user, note=form.cleaned_data["note"]
            )
            messages.success(request, f"Episode #{episode.pk} {form.cleaned_data['decision']}d.")
            return redirect("quarantine", slug=project.slug)
        messages.error(request, "Say why (a note is required) and choose release or discard.")
    elif request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    episodes = (
        Episode.objects.filter(project=project, status=Episode.Status.QUARANTINED)
        .select_related("source")
        .order_by("-recorded_at", "-id")
    )
    page, query = paginate(request, episodes, EPISODES_PER_PAGE)
    return render(
        request,
        "llmwiki/quarantine.html",
        {"project": project, "nav": "quarantine", "page": page, "query": query},
    )


@login_required
def project_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.SETTINGS)
    if request.method == "POST":
        form = ProjectSettingsForm(request.POST, instance=project)
        if form.is_valid():
            project_update(project=project, changes=form.cleaned_data, actor=request.user)
            messages.success(request, "Settings saved.")
            return redirect("project_settings", slug=project.slug)
    elif request.method == "GET":
        form = ProjectSettingsForm(instance=project)
    else:
        return HttpResponseNotAllowed(["GET", "POST"])
    return render(
        request,
        "llmwiki/project_settings.html",
        {"project": project, "nav": "settings", "form": form},
    )


# --- CSRF failure ---------------------------------------------------------------------------

# Django 5.2 renders a custom 403_csrf.html without the reason, so this view says it in words.
_CSRF_WORDS = (
    (
        csrf.REASON_NO_CSRF_COOKIE,
        "Your browser did not send back the security cookie this site set. Allow cookies for "
        "this site, reload the page and send the form again.",
    ),
    (
        csrf.REASON_CSRF_TOKEN_MISSING,
        "The form arrived without its security token. Forms sent from a saved copy of a page, "
        "another site or a script that does not add the token are refused. Reload the page "
        "and send the form again.",
    ),
    (
        "CSRF token from",
        "The form's security token does not match your session: the page was opened before "
        "you last logged in or out, perhaps in another tab. Reload the page and send the form "
        "again.",
    ),
    (
        "checking failed",
        "The request did not come from this site's own pages (its Origin or Referer header "
        "names another address). If you did come from here, the server's "
        "CSRF_TRUSTED_ORIGINS setting may be missing this address.",
    ),
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Explain a refused form in words; Django's own reason stays as the technical detail."""
    explanation = next(
        (words for key, words in _CSRF_WORDS if key in reason),
        "The form could not be checked as coming from this site. Reload the page and send "
        "the form again.",
    )
    return render(
        request,
        "403_csrf.html",
        {"explanation": explanation, "reason": reason},
        status=403,
    )
