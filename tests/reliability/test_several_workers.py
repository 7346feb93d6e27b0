"""Several workers for real: two `qcluster` processes on PostgreSQL with Redis as the broker.

Fault: every sweep task is delivered twice, to whichever worker takes it first.
Expected: sweeps of different projects run at the same time on different processes; the
same project is never swept twice at once (the run's lease), so each run computes once and
writes each candidate once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection
from django_q.models import Task
from django_q.tasks import async_task

from dreaming import services
from dreaming.models import Candidate, DreamRun
from tests.dreaming_data import seed

ROOT = Path(__file__).resolve().parents[2]
SWEEP_SECONDS = 3.0

# A worker process whose sweeps take a while and log when they really compute.
WORKER = """
import json, os, time, django
django.setup()
from dreaming import services

compute, settle, log = services._compute, services._settle, os.environ["SWEEP_LOG"]

def note(**event):
    with open(log, "a") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "t": time.time(), **event}) + "\\n")

def slow_compute(run):
    note(event="start", run=run.pk, project=run.project_id)
    time.sleep(float(os.environ["SWEEP_SECONDS"]))
    return compute(run)

def logged_settle(run, computed, started):
    settle(run, computed, started)
    note(event="end", run=run.pk, project=run.project_id)

services._compute, services._settle = slow_compute, logged_settle
from django.core.management import call_command
call_command("qcluster")
"""

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")),
        reason="needs DATABASE_URL (PostgreSQL) and REDIS_URL (Redis)",
    ),
]


def worker_env(tmp_path: Path, log: Path) -> dict[str, str]:
    db = connection.settings_dict
    url = (
        f"postgres://{quote(db['USER'] or '')}:{quote(db['PASSWORD'] or '')}@{db['HOST']}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLMWIKI_", "DJANGO_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="llmwiki.settings",
        DATABASE_URL=url,  # the test database, not the one DATABASE_URL names
        SECRET_KEY=settings.SECRET_KEY,  # tasks are signed with it
        LLMWIKI_DATA_DIR=str(tmp_path),
        LLMWIKI_DEBUG="1",
        LLMWIKI_Q_WORKERS="2",
        SWEEP_LOG=str(log),
        SWEEP_SECONDS=str(SWEEP_SECONDS),
        PYTHONPATH=str(ROOT),
    )
    return env


def test_two_qclusters_sweep_projects_in_parallel_and_each_project_once(
    transactional_db, project, other_project, tmp_path
):
    from django_q.brokers import get_broker

    get_broker().purge_queue()
    seed(project)
    seed(other_project)
    log = tmp_path / "sweeps.jsonl"
    env = worker_env(tmp_path, log)
    clusters = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for _ in range(2)
    ]
    try:
        runs = [
            services.dream_request(project=p, trigger="manual", actor="t", enqueue=False)
            for p in (project, other_project)
        ]
        with pytest.raises(services.DreamBusy):
            services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
        for run in runs + runs:  # each task delivered twice
            async_task("dreaming.tasks.dream_run", run.pk, sync=False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if Task.objects.filter(func="dreaming.tasks.dream_run").count() == 4:
                break  # all four deliveries have run to the end
            assert all(c.poll() is None for c in clusters), "a qcluster died"
            time.sleep(0.5)
    finally:
        for c in clusters:
            c.send_signal(signal.SIGTERM)  # the cluster stops its own workers
        for c in clusters:
            try:
                c.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(c.pid, signal.SIGKILL)
                c.wait()

    results = sorted(Task.objects.values_list("result", flat=True))
    assert len(results) == 4, results
    assert all(
        r.startswith(f"run {runs[0].pk}:") or r.startswith(f"run {runs[1].pk}:") for r in results
    )
    for run in runs:
        run.refresh_from_db()
        assert (run.status, run.attempts) == (DreamRun.Status.SUCCEEDED, 1), run.error
    events = [json.loads(line) for line in log.read_text().splitlines()]
    spans = {}
    for event in events:
        spans.setdefault(event["run"], {})[event["event"]] = event
    # Each run computed exactly once, though it was delivered twice.
    assert sorted(e["run"] for e in events if e["event"] == "start") == sorted(r.pk for r in runs)
    first, second = (spans[r.pk] for r in runs)
    # The two projects' sweeps overlapped in time, on two different worker processes.
    assert first["start"]["pid"] != second["start"]["pid"]
    assert max(first["start"]["t"], second["start"]["t"]) < min(
        first["end"]["t"], second["end"]["t"]
    )
    for p in (project, other_project):
        keys = list(Candidate.objects.filter(project=p).values_list("dedupe_key", flat=True))
        assert keys and len(keys) == len(set(keys))
