"""/healthz (200 or 503 with the failing check named) and /metrics (token or loopback)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from dreaming.models import Candidate, WorkerHeartbeat
from llmwiki.models import Episode
from llmwiki.search.index import index_fold
from tests.dreaming_data import seed


def beat(ago: timedelta) -> None:
    WorkerHeartbeat.objects.update_or_create(
        name="default", defaults={"seen_at": timezone.now() - ago}
    )


def test_healthz_is_200_with_every_figure_when_the_worker_is_fresh(client, db):
    beat(timedelta(seconds=30))
    r = client.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "ok"
    checks = body["checks"]
    assert set(checks) == {"database", "worker", "search_index", "disk"}
    assert checks["database"]["ok"] and checks["database"]["latency_ms"] >= 0
    assert 25 <= checks["worker"]["heartbeat_age_seconds"] <= 60
    assert checks["disk"]["free_bytes"] > 0
    assert checks["search_index"]["lag_episodes"] == 0
    assert "no-cache" in r["Cache-Control"] or "no-store" in r["Cache-Control"]


@pytest.mark.parametrize("ago", [timedelta(minutes=10), None])
def test_healthz_is_503_when_the_worker_heartbeat_is_stale_or_missing(client, db, ago):
    if ago:
        beat(ago)
    r = client.get("/healthz")
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "fail"
    assert body["checks"]["worker"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True
    if ago:
        assert body["checks"]["worker"]["heartbeat_age_seconds"] >= 600


def test_healthz_is_503_when_the_data_directory_is_nearly_full(client, db, monkeypatch):
    beat(timedelta(seconds=5))
    monkeypatch.setenv("LLMWIKI_HEALTH_MIN_FREE_MB", str(10**12))
    r = client.get("/healthz")
    assert r.status_code == 503
    assert r.json()["checks"]["disk"]["ok"] is False


def test_healthz_reports_the_search_index_lag_until_the_fold(client, project):
    beat(timedelta(seconds=5))
    seed(project)
    lag = client.get("/healthz").json()["checks"]["search_index"]
    assert lag["lag_episodes"] == Episode.objects.filter(project=project).count() > 0
    index_fold(project)
    assert client.get("/healthz").json()["checks"]["search_index"]["lag_episodes"] == 0


def metric(text: str, name: str, **labels) -> float:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = "^" + re.escape(f"{name}{{{inner}}}" if labels else name) + r" (\S+)$"
    match = re.search(pattern, text, re.MULTILINE)
    assert match, f"{name} {labels} not in metrics"
    return float(match.group(1))


def test_metrics_serve_the_health_figures_and_counters_to_loopback(client, project):
    beat(timedelta(seconds=5))
    seed(project)
    call_command("dream", "--project", project.slug)
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r["Content-Type"].startswith("text/plain; version=0.0.4")
    text = r.content.decode()
    assert metric(text, "llmwiki_database_up") == 1
    assert metric(text, "llmwiki_worker_up") == 1
    assert metric(text, "llmwiki_worker_heartbeat_age_seconds") >= 5
    assert metric(text, "llmwiki_data_dir_free_bytes") > 0
    assert metric(text, "llmwiki_search_index_lag_episodes") >= 0
    episodes = Episode.objects.filter(project=project, status="active").count()
    assert metric(text, "llmwiki_episodes", project="tidewater", status="active") == episodes
    proposed = Candidate.objects.filter(project=project, status="proposed").count()
    assert proposed > 0
    assert metric(text, "llmwiki_candidates", project="tidewater", status="proposed") == proposed
    assert metric(text, "llmwiki_dream_runs", project="tidewater", status="succeeded") == 1
    assert "# TYPE llmwiki_conflicts_open gauge" in text


@pytest.mark.parametrize(
    "meta",
    [
        {"REMOTE_ADDR": "10.1.2.3"},
        {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"},
    ],
    ids=["remote", "loopback-through-a-proxy"],
)
def test_metrics_refuse_callers_off_loopback_without_a_token(client, db, meta):
    r = client.get("/metrics", **meta)
    assert r.status_code == 403
    assert b"LLMWIKI_METRICS_TOKEN" in r.content


def test_with_a_token_set_metrics_need_it_from_anywhere(client, db, monkeypatch):
    monkeypatch.setenv("LLMWIKI_METRICS_TOKEN", "s3cret-metrics-token")
    assert client.get("/metrics").status_code == 403  # loopback alone is no longer enough
    wrong = client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 403
    right = client.get(
        "/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer s3cret-metrics-token"
    )
    assert right.status_code == 200
    assert b"llmwiki_database_up 1" in right.content
