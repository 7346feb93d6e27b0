"""The wizard's pages: one URL per step, each a plain form that HTMX enhances.

A run belongs to the user who started it (anyone else gets 404), and every step after
the first needs the reviewer role on the run's project, checked on every request: a
member who lost it gets 403, one removed from the project 404.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import NoReturn

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from dreaming.models import Conflict
from dreaming.services import PHASES, worker_alive
from llmwiki.access import Do, can, get_project_for, projects_for
from llmwiki.errors import InputError, Refused
from llmwiki.forms import UploadForm, read_upload
from llmwiki.models import Episode
from llmwiki.vocabulary import export_kinds
from reviews.actions import FormState
from reviews.forms import ConflictResolveForm
from wizard import selectors, services
from wizard.forms import ExportStepForm, ProjectStepForm, RelabelForm
from wizard.models import ACTION_WORDS, STEP_NUMBER, STEPS, WizardRun

RUNS_LISTED = 20


def step_url(run: WizardRun, slug: str) -> str:
    return reverse(f"wizard:{slug}", args=[run.pk])


def _resume_url(run: WizardRun) -> str:
    return step_url(run, STEPS[run.step - 1][1])


def wizard_step(slug: str) -> Callable:
    """Load the caller's run for step `slug`, with its project checked on every request.

    A step not yet reached sends the user to where the run stands.
    """
    number = STEP_NUMBER[slug]

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        @login_required
        @vary_on_headers("HX-Request")
        def wrapper(request: HttpRequest, run_id: int) -> HttpResponse:
            run = get_object_or_404(
                WizardRun.objects.select_related("project", "proposal_run", "preview_run"),
                pk=run_id,
                user=request.user,
            )
            if run.project_id is not None:
                run.project = get_project_for(request.user, run.project.slug, Do.REVIEW)
            if not run.may_visit(number):
                return redirect(_resume_url(run))
            if not (request.htmx and request.method == "GET"):  # a poll is not a visit
                services.wizard_visit(run=run, number=number)
            return view(request, run)

        return wrapper

    return decorate


def _page(request: HttpRequest, run: WizardRun, slug: str, context: dict) -> HttpResponse:
    """Render step `slug` (or one of its partials, for an HTMX request naming it)."""
    number = STEP_NUMBER[slug]
    steps = [
        {"number": n, "slug": s, "title": t, "url": step_url(run, s), "open": run.may_visit(n)}
        for n, s, t in STEPS
    ]
    template = f"wizard/step_{slug}.html"
    partial = request.GET.get("partial", "")
    if request.htmx and re.fullmatch(r"[a-z]{1,20}", partial):
        template += f"#{partial}"
    nxt = STEPS[number][1] if number < len(STEPS) else None
    return render(
        request,
        template,
        {
            "run": run,
            "project": run.project,
            "nav": "wizard",
            "steps": steps,
            "number": number,
            "title": STEPS[number - 1][2],
            "next_url": step_url(run, nxt) if nxt else None,
            "prev_url": step_url(run, STEPS[number - 2][1]) if number > 1 else None,
            "refusals": {action: run.refusal(action) for action in ACTION_WORDS},
            **context,
        },
    )


def _refused(request: HttpRequest, exc: Refused) -> None:
    messages.error(request, str(exc))


# --- Start and resume -----------------------------------------------------------------------


@login_required
def start(request: HttpRequest) -> HttpResponse:
    """The user's runs (resume one) and a button to start a new one."""
    if request.method == "POST":
        try:
            run = services.wizard_start(user=request.user)
        except Refused as exc:
            _raise(exc)
        return redirect(step_url(run, "project"))
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    runs = list(
        WizardRun.objects.filter(user=request.user)
        .select_related("project")
        .order_by("-updated_at", "-id")[:RUNS_LISTED]
    )
    for run in runs:
        run.resume_url = _resume_url(run)
        run.step_title = STEPS[run.step - 1][2]
    refusal = services.start_refusal(request.user)
    return render(
        request,
        "wizard/start.html",
        {"runs": runs, "steps": STEPS, "refusal": str(refusal) if refusal else ""},
    )


def _raise(refusal: Refused) -> NoReturn:
    """A refusal as the error page of its status: 404 says nothing, 403 says why."""
    if refusal.status == 404:
        raise Http404(str(refusal))
    raise PermissionDenied(str(refusal))


# --- 1. Project and authority boundary ------------------------------------------------------


@wizard_step("project")
def step_project(request: HttpRequest, run: WizardRun) -> HttpResponse:
    if run.project_id is None and (refusal := services.start_refusal(request.user)):
        _raise(refusal)  # a run left from before: explain instead of an empty choice
    projects = projects_for(request.user).order_by("name")
    reviewable = [p.pk for p in projects if can(request.user, p, Do.REVIEW)]
    options = {
        "projects": projects.filter(pk__in=reviewable),
        "can_create": request.user.has_perm("llmwiki.add_project"),
    }
    if request.method == "POST":
        form = ProjectStepForm(request.POST, **options)
        if form.is_valid():
            data = form.cleaned_data
            new = None
            if data["project"] is None:
                new = {"name": data["new_name"], "slug": data["new_slug"]}
            try:
                services.wizard_choose(
                    run=run,
                    actor=request.user,
                    boundary=data["boundary"],
                    project=data["project"],
                    new_project=new,
                )
            except ValidationError as exc:
                form.add_error(None, " ".join(exc.messages))
            except (Refused, IntegrityError) as exc:
                form.add_error(None, str(exc))
            else:
                return redirect(step_url(run, "import"))
    else:
        initial = {"boundary": run.boundary or None}
        if run.project_id:
            initial["project"] = run.project.slug
        form = ProjectStepForm(initial=initial, **options)
    return _page(request, run, "project", {"form": form})


# --- 2. Import raw sources ------------------------------------------------------------------


@wizard_step("import")
def step_import(request: HttpRequest, run: WizardRun) -> HttpResponse:
    error = None
    form = UploadForm()
    if request.method == "POST":
        form, files, error = read_upload(request)
        if files is not None:
            try:
                services.wizard_import(run=run, files=files, actor=request.user)
            except (InputError, Refused) as exc:
                error = str(exc)
    template_ctx = {"form": form, "error": error, "report": services.imported_report(run)}
    if request.method == "POST" and request.htmx:
        return render(
            request,
            "llmwiki/upload.html#results",
            {"project": run.project, **template_ctx},
        )
    return _page(request, run, "import", template_ctx)


# --- 3. Classify memory type ----------------------------------------------------------------


@wizard_step("classify")
def step_classify(request: HttpRequest, run: WizardRun) -> HttpResponse:
    form = RelabelForm()
    if request.method == "POST":
        data = request.POST.copy()
        one = request.POST.get("one", "")
        if one:
            # A row's own button: that episode, with the label chosen on its row.
            data.setlist("episodes", [one])
            data["memory_type"] = request.POST.get(f"label_{one}", "")
        ids = list(services.run_episodes(run).values_list("id", flat=True))
        form = RelabelForm(data, episode_ids=ids)
        if form.is_valid():
            try:
                moved = services.wizard_relabel(
                    run=run,
                    episode_ids=form.cleaned_data["episodes"],
                    memory_type=form.cleaned_data["memory_type"],
                    actor=request.user,
                )
            except Refused as exc:
                form.add_error(None, str(exc))
            else:
                label = Episode.MemoryType(form.cleaned_data["memory_type"]).label
                messages.success(request, f"{moved} episode(s) relabelled as {label}.")
                return redirect(step_url(run, "classify"))
    return _page(
        request,
        run,
        "classify",
        {
            "form": form,
            "groups": selectors.episodes_by_label(run),
            "labels": Episode.MemoryType.choices,
            "ticked": {str(v) for v in form.data.getlist("episodes")} if form.is_bound else set(),
        },
    )


# --- 4 and 5. Sweeps: proposals, then the preview --------------------------------------------


def _sweep_context(sweep) -> dict:
    return {
        "sweep": sweep,
        "phases": [(name, sweep.phases.get(name, {})) for name in PHASES] if sweep else [],
        "worker_alive": worker_alive(),
    }


def _dream(request: HttpRequest, run: WizardRun, action: str, step: str) -> HttpResponse:
    """Queue the step's sweep of this run's material, then show the step polling it."""
    try:
        services.wizard_dream(run=run, action=action, actor=request.user)
    except Refused as exc:
        _refused(request, exc)
    return redirect(step_url(run, step))


@wizard_step("proposals")
def step_proposals(request: HttpRequest, run: WizardRun) -> HttpResponse:
    if request.method == "POST":
        return _dream(request, run, "propose", "proposals")
    sweep = run.proposal_run
    done = sweep is not None and not sweep.is_open
    return _page(
        request,
        run,
        "proposals",
        {
            **_sweep_context(sweep),
            "groups": selectors.proposals_by_page(run) if done else None,
            "evidence_added": selectors.evidence_added(run) if done else None,
        },
    )


@wizard_step("preview")
def step_preview(request: HttpRequest, run: WizardRun) -> HttpResponse:
    if request.method == "POST":
        return _dream(request, run, "preview", "preview")
    return _page(
        request,
        run,
        "preview",
        {**_sweep_context(run.preview_run), "outcome": selectors.preview_outcome(run)},
    )


# --- 6. Conflicts and uncertainties ---------------------------------------------------------


@wizard_step("conflicts")
def step_conflicts(request: HttpRequest, run: WizardRun) -> HttpResponse:
    if request.method == "POST":
        form = ConflictResolveForm(request.POST)
        if not form.is_valid():
            messages.error(request, " ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
            return redirect(step_url(run, "conflicts"))
        data = form.cleaned_data
        conflict = get_object_or_404(Conflict, project=run.project, pk=data["conflict"])
        arguments = form.arguments(request.POST)
        try:
            if data["owner"] and arguments["owner"] is None:
                raise Refused(f"no user named {data['owner']!r}", 400)
            services.wizard_resolve(run=run, actor=request.user, conflict=conflict, **arguments)
        except Refused as exc:
            _refused(request, exc)
        else:
            messages.success(request, f"Conflict #{conflict.pk} resolved: {data['resolution']}.")
        return redirect(step_url(run, "conflicts"))
    return _page(
        request,
        run,
        "conflicts",
        {
            "conflicts": selectors.run_conflicts(run),
            "uncertain": selectors.uncertain(run),
            "resolutions": Conflict.Resolution.choices,
        },
    )


# --- 7. Commit reviewed memory --------------------------------------------------------------


@wizard_step("commit")
def step_commit(request: HttpRequest, run: WizardRun) -> HttpResponse:
    if request.method == "POST":
        ids = [int(v) for v in request.POST.getlist("approve") if v.isdigit()]
        found = {
            c.pk: c
            for c in selectors.run_candidates(run).filter(pk__in=ids).select_related("project")
        }
        chosen, error = [], None
        for pk in ids:
            version = request.POST.get(f"version_{pk}", "")
            revision = request.POST.get(f"revision_{pk}", "")
            if pk not in found or not version.isdigit() or not (revision.isdigit() or not revision):
                error = f"Candidate #{pk} is not this run's, or its form was incomplete."
                break
            seen = FormState(int(version), int(revision) if revision else None)
            chosen.append((found[pk], seen, request.POST.get(f"sensitive_{pk}") == "on"))
        if not ids:
            error = "Tick at least one candidate to approve."
        if error:
            messages.error(request, error)
        else:
            try:
                summary = services.wizard_commit(run=run, actor=request.user, chosen=chosen)
            except Refused as exc:
                _refused(request, exc)
            else:
                for item in summary["refused"]:
                    messages.error(request, f"Candidate #{item['candidate']}: {item['reason']}")
        return redirect(step_url(run, "commit"))
    return _page(
        request,
        run,
        "commit",
        {"candidates": selectors.committable(run), "summary": run.result("commit")},
    )


# --- 8. Exports -----------------------------------------------------------------------------


@wizard_step("exports")
def step_exports(request: HttpRequest, run: WizardRun) -> HttpResponse:
    form = ExportStepForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            built = services.wizard_export(run=run, actor=request.user, **form.cleaned_data)
        except (Refused, InputError) as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{len(built)} exports built.")
            return redirect(step_url(run, "exports"))
    return _page(
        request,
        run,
        "exports",
        {
            "form": form,
            "exports": selectors.run_exports(run, request.user),
            "kinds": export_kinds(),
        },
    )


@require_GET
@login_required
def resume(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(WizardRun, pk=run_id, user=request.user)
    return redirect(_resume_url(run))
