"""Dashboards: one project's figures for its maintainers, every project's for staff.

Both pages draw the same charts from `ops.dashboard_figures`; the admin page adds a row per project.
Each page runs a fixed number of queries, whatever the number of projects and days.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dreaming.models import Candidate
from llmwiki.access import Do, get_project_for
from llmwiki.models import Project
from ops.charts import Chart, Line, chart, fmt, sparkline
from ops.dashboard_figures import DAY_CHOICES, DEFAULT_DAYS, METRICS, Scope, export_status
from ops.health import counters


@dataclass(frozen=True)
class ChartSpec:
    key: str
    title: str
    metrics: tuple[str, ...]  # drawn together, so of one unit
    bars: bool = False


CHARTS = (
    ChartSpec("episodes", "Episodes ingested", ("episodes",), bars=True),
    ChartSpec(
        "review", "Candidates", ("proposed", "promoted", "rejected", "blocked", "provenance")
    ),
    ChartSpec("acceptance", "Promotion acceptance rate", ("acceptance",)),
    ChartSpec("compression", "Duplicate compression", ("compression",)),
    ChartSpec("contradictions", "Open contradictions", ("contradictions",), bars=True),
    ChartSpec(
        "contradiction-age",
        "Age of open contradictions",
        ("contradiction_oldest", "contradiction_median"),
    ),
    ChartSpec("questions", "Open-question backlog", ("questions",), bars=True),
    ChartSpec("resolution", "Time to resolution", ("resolution_days",)),
    ChartSpec("citations", "Citations", ("coverage", "unsupported")),
    ChartSpec("dream-latency", "p95 dreaming latency", ("dream_p95",)),
    ChartSpec("recall-latency", "p95 retrieval latency", ("recall_p95",)),
    ChartSpec("rollbacks", "Rollbacks", ("rollbacks",), bars=True),
    ChartSpec("exports", "Age of the newest export", ("export_age",)),
)

# The figures of a project's summary and the admin page's columns (short headings there;
# the full label and definition are in each heading's title).
SUMMARY = {
    "episodes": "Episodes",
    "promoted": "Promoted",
    "acceptance": "Accepted",
    "contradictions": "Conflicts",
    "questions": "Questions",
    "coverage": "Cited",
    "unsupported": "Unsupported",
    "dream_p95": "Dream p95",
    "recall_p95": "Recall p95",
    "rollbacks": "Rollbacks",
}


class RangeForm(forms.Form):
    days = forms.TypedChoiceField(
        choices=[(n, f"{n} days") for n in DAY_CHOICES],
        coerce=int,
        required=False,
        empty_value=DEFAULT_DAYS,
        initial=DEFAULT_DAYS,
        label="Range",
        error_messages={
            "invalid_choice": "Choose a range of "
            + ", ".join(str(n) for n in DAY_CHOICES[:-1])
            + f" or {DAY_CHOICES[-1]} days (you asked for %(value)s)."
        },
    )


def _range(request: HttpRequest) -> tuple[RangeForm, int, int]:
    """The chosen range, or the default with the form's error and a 400."""
    form = RangeForm(request.GET or None)
    if not request.GET:
        return form, DEFAULT_DAYS, 200
    if form.is_valid():
        return form, form.cleaned_data["days"], 200
    return form, DEFAULT_DAYS, 400


def build_charts(scope: Scope, project_ids: list[int] | None = None) -> list[Chart]:
    charts = []
    for spec in CHARTS:
        metrics = [METRICS[key] for key in spec.metrics]
        charts.append(
            chart(
                spec.key,
                spec.title,
                scope.days,
                [Line(m.label, m.values(scope, project_ids)) for m in metrics],
                unit=metrics[0].unit,
                bars=spec.bars,
                definition=" ".join(f"{m.label}: {m.definition}" for m in metrics),
            )
        )
    return charts


@dataclass(frozen=True)
class Figure:
    label: str
    text: str
    definition: str


def summary(scope: Scope, project_ids: list[int] | None) -> list[Figure]:
    figures = []
    for key in SUMMARY:
        m = METRICS[key]
        when = "now" if m.kind.state else f"{len(scope.days)} days"
        figures.append(
            Figure(f"{m.label} ({when})", fmt(m.summary(scope, project_ids), m.unit), m.definition)
        )
    return figures


@require_GET
@login_required
def project_dashboard(request: HttpRequest, slug: str) -> HttpResponse:
    """Maintainers of the project (superusers are maintainers everywhere)."""
    project = get_project_for(request.user, slug, Do.SETTINGS)
    form, days, status = _range(request)
    scope = Scope.last([project.pk], days)
    charts = build_charts(scope)
    context = {
        "project": project,
        "nav": "dashboard",
        "time_zone": settings.TIME_ZONE,
        "form": form,
        "days": days,
        "charts": charts,
        "figures": summary(scope, None),
        "export": export_status([project.pk]).get(project.pk),
        "empty": all(c.empty for c in charts),
    }
    return render(request, "ops/project_dashboard.html", context, status=status)


@dataclass(frozen=True)
class ProjectRow:
    project: Project
    cells: list[str]
    spark: Any
    awaiting: int
    export: Any
    export_age: str


def _age(status: Any) -> str:
    if status is None:
        return ""
    return fmt((timezone.now() - status.generated_at).total_seconds() / 86400, "days")


@require_GET
@login_required
def admin_dashboard(request: HttpRequest) -> HttpResponse:
    """Staff and superusers: one row per project, and the charts over all projects."""
    if not (request.user.is_staff or request.user.is_superuser):
        raise PermissionDenied("The admin dashboard is for staff.")
    form, days, status = _range(request)
    projects = list(Project.objects.order_by("name"))
    scope = Scope.last(None, days)
    exports = export_status()
    # The same per-status totals /metrics exports, read once by the same function.
    awaiting: dict[str, int] = {}
    for labels, n in counters()["candidates"]:
        if labels["status"] in Candidate.OPEN_STATUSES:
            awaiting[labels["project"]] = awaiting.get(labels["project"], 0) + n
    episodes = METRICS["episodes"]
    rows = [
        ProjectRow(
            project=p,
            cells=[fmt(METRICS[k].summary(scope, [p.pk]), METRICS[k].unit) for k in SUMMARY],
            spark=sparkline(episodes.values(scope, [p.pk]), f"{p.name}, episodes a day", "count"),
            awaiting=awaiting.get(p.slug, 0),
            export=exports.get(p.pk),
            export_age=_age(exports.get(p.pk)),
        )
        for p in projects
    ]
    charts = build_charts(scope)
    context = {
        "nav": "admin-dashboard",
        "form": form,
        "days": days,
        "rows": rows,
        "columns": [(short, METRICS[k]) for k, short in SUMMARY.items()],
        "charts": charts,
        "figures": summary(scope, None),
        "empty": all(c.empty for c in charts),
    }
    return render(request, "ops/admin_dashboard.html", context, status=status)
