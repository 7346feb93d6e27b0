"""/healthz for load balancers and uptime checks; /metrics for Prometheus."""

from __future__ import annotations

import hmac
import ipaddress
import os

from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from llmwiki.models import Project
from ops.dashboard_figures import export_status
from ops.health import counters, run_checks

PROXY_HEADERS = (
    "HTTP_X_FORWARDED_FOR",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_FORWARDED",
    "HTTP_X_REAL_IP",
)


@require_GET
@never_cache
def healthz(request):
    """200 when every check passes, else 503; the JSON names the failing check."""
    checks = run_checks()
    healthy = all(c.ok for c in checks.values())
    body = {
        "status": "ok" if healthy else "fail",
        "checks": {name: {"ok": c.ok, **c.figures} for name, c in checks.items()},
    }
    return JsonResponse(body, status=200 if healthy else 503)


def metrics_allowed(request) -> tuple[bool, str]:
    """With LLMWIKI_METRICS_TOKEN set, only its bearer; otherwise only loopback callers.

    A request that came through a proxy (forwarding headers) is never taken for loopback:
    behind a proxy on the same machine every caller's address is 127.0.0.1.
    """
    token = os.environ.get("LLMWIKI_METRICS_TOKEN", "")
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if hmac.compare_digest(given.encode(), token.encode()):
            return True, ""
        return False, "metrics need the bearer token in LLMWIKI_METRICS_TOKEN"
    try:
        loopback = ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        loopback = False
    if loopback and not any(h in request.META for h in PROXY_HEADERS):
        return True, ""
    return False, "metrics are served to loopback only (set LLMWIKI_METRICS_TOKEN for remote)"


def _line(name: str, value, labels: dict[str, str] | None = None) -> str:
    if labels:
        inner = ",".join(
            f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
            for k, v in labels.items()
        )
        name = f"{name}{{{inner}}}"
    return f"{name} {'NaN' if value is None else value}"


GAUGES = [
    # (metric, help, check, figure)
    ("llmwiki_database_up", "1 when the database answers", "database", None),
    ("llmwiki_worker_up", "1 when a worker heartbeat is fresh", "worker", None),
    (
        "llmwiki_worker_heartbeat_age_seconds",
        "seconds since a worker last ran the heartbeat task",
        "worker",
        "heartbeat_age_seconds",
    ),
    (
        "llmwiki_search_index_lag_episodes",
        "episodes committed but not yet in the search index",
        "search_index",
        "lag_episodes",
    ),
    (
        "llmwiki_search_index_lag_seconds",
        "age of the oldest episode not yet in the search index",
        "search_index",
        "lag_seconds",
    ),
    ("llmwiki_data_dir_free_bytes", "free bytes where the data directory is", "disk", "free_bytes"),
]

COUNTERS = {
    "episodes": ("llmwiki_episodes", "episodes by project and status"),
    "candidates": ("llmwiki_candidates", "candidates by project and status"),
    "conflicts_open": ("llmwiki_conflicts_open", "open conflicts by project"),
    "dream_runs": ("llmwiki_dream_runs", "dream runs by project and status"),
}


def _export_lines() -> list[str]:
    """The dashboards' export staleness, from the same function (projects with exports)."""
    slugs = dict(Project.objects.values_list("pk", "slug"))
    now = timezone.now()
    statuses = sorted(export_status().items(), key=lambda item: slugs[item[0]])
    age, stale = "llmwiki_export_age_seconds", "llmwiki_export_stale"
    lines = [f"# HELP {age} seconds since the project's newest export", f"# TYPE {age} gauge"]
    lines += [
        _line(age, round((now - s.generated_at).total_seconds()), {"project": slugs[pk]})
        for pk, s in statuses
    ]
    lines += [
        f"# HELP {stale} 1 when a claim or page revision the newest export used moved on",
        f"# TYPE {stale} gauge",
    ]
    lines += [_line(stale, int(s.stale), {"project": slugs[pk]}) for pk, s in statuses]
    return lines


@require_GET
@never_cache
def metrics(request):
    allowed, reason = metrics_allowed(request)
    if not allowed:
        return HttpResponse(reason + "\n", status=403, content_type="text/plain")
    checks = run_checks()
    lines = []
    for metric, help_text, check, figure in GAUGES:
        value = int(checks[check].ok) if figure is None else checks[check].figures.get(figure)
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge", _line(metric, value)]
    if checks["database"].ok:
        for key, rows in counters().items():
            metric, help_text = COUNTERS[key]
            lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
            lines += [_line(metric, n, labels) for labels, n in rows]
        lines += _export_lines()
    return HttpResponse(
        "\n".join(lines) + "\n", content_type="text/plain; version=0.0.4; charset=utf-8"
    )
