from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from dreaming import services
from dreaming.engine.policy import SIGNALS, PolicyError
from dreaming.forms import BackfillForm, PolicyForm
from dreaming.models import Candidate, DreamRun
from dreaming.selectors import why_panel
from llmwiki.access import Do, get_project_for
from llmwiki.models import Episode, RecallTrace
from llmwiki.pagination import paginate
from llmwiki.project_counts import next_run
from llmwiki.schedule import describe_cron
from llmwiki.services import project_set_dreaming

RUNS_ON_STATUS = 10
RUN_CANDIDATES = 50
CANDIDATES_PER_PAGE = 50


@require_GET
@login_required
def status(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    runs = list(DreamRun.objects.filter(project=project).order_by("-created_at")[:RUNS_ON_STATUS])
    now = timezone.now()
    counts = {
        "short_term": Episode.objects.dreamable()
        .filter(project=project, id__gt=project.dream_watermark)
        .count(),
        "grounded": Candidate.objects.filter(project=project).open().count(),
        "signals": RecallTrace.objects.filter(
            project=project, at__gte=now - services.RECALL_WINDOW
        ).count(),
        "promoted_today": services.promoted_today(project),
    }
    open_run = next((r for r in runs if r.is_open), None)
    return render(
        request,
        "dreaming/status.html",
        {
            "project": project,
            "nav": "dreaming",
            "runs": runs,
            "counts": counts,
            "open_run": open_run,
            "next_run": next_run(project),
            "schedule": describe_cron(project.dream_schedule),
            "worker_alive": services.worker_alive(),
            "can_trigger": project.can[Do.DREAM],
            "backfill_form": BackfillForm(),
        },
    )


@require_POST
@login_required
def trigger(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.DREAM)
    kind = request.POST.get("kind")
    backfill = None
    if kind == "backfill":
        form = BackfillForm(request.POST)
        if not form.is_valid():
            messages.error(request, " ".join(m for ms in form.errors.values() for m in ms))
            return redirect("dreaming:status", slug=project.slug)
        backfill = (form.cleaned_data["since"], form.cleaned_data["until"])
    triggers = {
        "preview": DreamRun.Trigger.PREVIEW,
        "dream": DreamRun.Trigger.MANUAL,
        "backfill": DreamRun.Trigger.BACKFILL,
    }
    if kind not in triggers:
        messages.error(request, "Choose Preview, Dream now or Backfill.")
        return redirect("dreaming:status", slug=project.slug)
    try:
        run = services.dream_request(
            project=project, trigger=triggers[kind], actor=request.user, backfill=backfill
        )
    except services.DreamBusy as busy:
        messages.info(
            request, f"Dream run #{busy.run.pk} is already {busy.run.status}; showing it."
        )
        run = busy.run
    return redirect("dreaming:run", slug=project.slug, run_id=run.pk)


@require_GET
@vary_on_headers("HX-Request")
@login_required
def run_detail(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug)
    run = get_object_or_404(DreamRun, project=project, pk=run_id)
    template = "dreaming/run.html#progress" if request.htmx else "dreaming/run.html"
    return render(
        request,
        template,
        {
            "project": project,
            "nav": "dreaming",
            "run": run,
            "phases": [(name, run.phases.get(name, {})) for name in services.PHASES],
            "worker_alive": services.worker_alive(),
            # Listed once the run has finished; while it runs, polls stay one cheap query.
            "candidates": list(
                Candidate.objects.filter(run=run).order_by("-score", "id")[:RUN_CANDIDATES]
            )
            if not run.is_open and not run.is_preview
            else None,
            "candidates_shown": RUN_CANDIDATES,
        },
    )


@require_GET
@vary_on_headers("HX-Request")
@login_required
def candidate_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug)
    status_filter = request.GET.get("status", "")
    qs = Candidate.objects.filter(project=project).annotate(n_evidence=Count("evidence"))
    if status_filter in Candidate.Status.values:
        qs = qs.filter(status=status_filter)
    page, query = paginate(request, qs.order_by("-score", "id"), CANDIDATES_PER_PAGE)
    template = (
        "dreaming/candidate_list.html#results" if request.htmx else "dreaming/candidate_list.html"
    )
    return render(
        request,
        template,
        {
            "project": project,
            "nav": "dreaming",
            "page": page,
            "status": status_filter,
            "query": query,
            "statuses": Candidate.Status.choices,
            "signal_names": SIGNALS,
        },
    )


@require_GET
@login_required
def candidate_explain(request: HttpRequest, slug: str, candidate_id: int) -> HttpResponse:
    project = get_project_for(request.user, slug)
    candidate = get_object_or_404(
        Candidate.objects.select_related("run", "claim"), project=project, pk=candidate_id
    )
    return render(
        request,
        "dreaming/candidate_explain.html",
        {"project": project, "nav": "dreaming", "candidate": candidate, **why_panel(candidate)},
    )


@require_http_methods(["GET", "POST"])
@login_required
def policy(request: HttpRequest, slug: str) -> HttpResponse:
    project = get_project_for(request.user, slug, Do.SETTINGS)
    current = services.project_policy(project)
    if request.method == "POST":
        form = PolicyForm(request.POST)
        if form.is_valid():
            try:
                services.policy_update(
                    project=project, policy=form.cleaned_data["policy"], actor=request.user
                )
            except PolicyError as exc:  # pragma: no cover - the form validated it
                form.add_error("policy", str(exc))
            else:
                if form.cleaned_data["dreaming_enabled"] != project.dreaming_enabled:
                    project_set_dreaming(
                        project=project,
                        enabled=form.cleaned_data["dreaming_enabled"],
                        actor=request.user,
                    )
                messages.success(request, "Dreaming policy saved.")
                return redirect("dreaming:policy", slug=project.slug)
    else:
        form = PolicyForm(
            initial={
                "dreaming_enabled": project.dreaming_enabled,
                "policy": json.dumps(current.to_dict(), indent=2),
            }
        )
    return render(
        request,
        "dreaming/policy.html",
        {"project": project, "nav": "dreaming", "form": form, "policy": current},
    )
