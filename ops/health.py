"""The figures an operator watches, each computed in one place for /healthz and /metrics.

`ops` sits above every other app (it reads them all; nothing imports it).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, Max, Min
from django.utils import timezone

from dreaming.models import Candidate, Conflict, DreamRun, WorkerHeartbeat
from dreaming.services import HEARTBEAT_STALE
from llmwiki.models import Episode, Project
from llmwiki.settings import env_int


@dataclass
class Check:
    ok: bool
    figures: dict = field(default_factory=dict)


def check_database() -> Check:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return Check(False, {"error": str(exc).splitlines()[0][:200]})
    return Check(True, {"latency_ms": round((time.perf_counter() - started) * 1000, 2)})


def check_worker() -> Check:
    """A django-q2 worker runs the heartbeat task every minute; older than 3 means none runs."""
    seen = WorkerHeartbeat.objects.aggregate(m=Max("seen_at"))["m"]
    stale_after = HEARTBEAT_STALE.total_seconds()
    if seen is None:
        return Check(False, {"heartbeat_age_seconds": None, "stale_after_seconds": stale_after})
    age = max(0.0, (timezone.now() - seen).total_seconds())
    return Check(
        age <= stale_after,
        {"heartbeat_age_seconds": round(age, 1), "stale_after_seconds": stale_after},
    )


def check_search_index() -> Check:
    """Episodes committed but not yet folded into the search index, and the oldest one's age.

    Informational: every query folds the remainder first, so a lag delays nothing users see;
    a growing one means the worker's fold task is not running.
    """
    from llmwiki.search.backends import backend

    using = backend()
    behind, oldest = 0, None
    for project_id in Project.objects.values_list("pk", flat=True):
        mark = using.watermark(project_id)
        row = Episode.objects.filter(project=project_id, pk__gt=mark.episode_id).aggregate(
            n=Count("pk"), first=Min("recorded_at")
        )
        behind += row["n"]
        if row["first"] and (oldest is None or row["first"] < oldest):
            oldest = row["first"]
    age = (timezone.now() - oldest).total_seconds() if oldest else 0.0
    return Check(True, {"lag_episodes": behind, "lag_seconds": round(max(age, 0.0), 1)})


def check_disk() -> Check:
    minimum = env_int("LLMWIKI_HEALTH_MIN_FREE_MB", 256) * 1024 * 1024
    usage = shutil.disk_usage(settings.DATA_DIR)
    return Check(
        usage.free >= minimum,
        {"free_bytes": usage.free, "total_bytes": usage.total, "min_free_bytes": minimum},
    )


CHECKS = {
    "database": check_database,
    "worker": check_worker,
    "search_index": check_search_index,
    "disk": check_disk,
}


def run_checks() -> dict[str, Check]:
    results = {"database": check_database()}
    for name, check in CHECKS.items():
        if name == "database":
            continue
        if not results["database"].ok and name in {"worker", "search_index"}:
            results[name] = Check(False, {"error": "database unavailable"})
            continue
        try:
            results[name] = check()
        except (DatabaseError, OSError) as exc:
            results[name] = Check(False, {"error": str(exc).splitlines()[0][:200]})
    return results


def counters() -> dict[str, list[tuple[dict[str, str], int]]]:
    """Totals by project (and status), one grouped query each."""

    def grouped(queryset, *labels: str) -> list[tuple[dict[str, str], int]]:
        fields = ["project__slug", *labels]
        rows = queryset.values(*fields).annotate(n=Count("pk")).order_by(*fields)
        return [
            ({"project": r["project__slug"], **{k: r[k] for k in labels}}, r["n"]) for r in rows
        ]

    return {
        "episodes": grouped(Episode.objects.all(), "status"),
        "candidates": grouped(Candidate.objects.all(), "status"),
        "conflicts_open": grouped(Conflict.objects.filter(status=Conflict.Status.OPEN)),
        "dream_runs": grouped(DreamRun.objects.all(), "status"),
    }
