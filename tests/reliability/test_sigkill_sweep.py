"""Fault: the worker is killed (SIGKILL) in the middle of a sweep's write transaction.

Expected: the sweep's writes are all or nothing (here: nothing), the database passes
`PRAGMA integrity_check` in WAL mode, the run's lease is recovered once it lapses, and the
retry writes each candidate exactly once. Nothing already stored changes.

A real subprocess on a file database, as a django-q2 worker would be.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.reliability.digest import STORED, SWEPT, table_digest

ROOT = Path(__file__).resolve().parents[2]

SETUP = """
import json, os, signal, sys, django
django.setup()
from django.core.management import call_command
from dreaming import services as dreaming, tasks
from dreaming.models import CandidateEvidence, DreamRun
from llmwiki.models import Project
"""

KILL = SETUP + textwrap.dedent(
    """
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from llmwiki.services import project_create
    from tests.dreaming_data import seed

    user = get_user_model().objects.create_superuser("root", password="x")
    project = project_create(slug="p", name="P", actor="t", owner=user)
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    print(run.pk, flush=True)
    real = CandidateEvidence.objects.bulk_create

    def die(*args, **kwargs):
        real(*args, **kwargs)
        # Candidates and their evidence are written; the transaction has not committed.
        os.kill(os.getpid(), signal.SIGKILL)

    CandidateEvidence.objects.bulk_create = die
    tasks.dream_run(run.pk)
    """
)

RECOVER = SETUP + textwrap.dedent(
    """
    from datetime import timedelta
    from django.utils import timezone

    run_id, how = int(sys.argv[1]), sys.argv[2]
    out = {}
    # A redelivery while the dead worker's lease is still live must not start a second sweep.
    out["early"] = tasks.dream_run(run_id)
    # Time passes: the lease lapses.
    DreamRun.objects.filter(pk=run_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    if how == "redelivery":
        out["retry"] = tasks.dream_run(run_id)
        out["again"] = tasks.dream_run(run_id)
    else:
        project = Project.objects.get(slug="p")
        run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
        out["new_run"] = run.pk
        out["retry"] = tasks.dream_run(run.pk)
        out["again"] = tasks.dream_run(run.pk)
    print(json.dumps(out), flush=True)
    """
)


def child(code: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_") and k not in {"DATABASE_URL", "REDIS_URL"}
    }
    env.update(
        LLMWIKI_DATA_DIR=str(data_dir),
        DJANGO_SETTINGS_MODULE="llmwiki.settings",
        LLMWIKI_DEBUG="1",
        PYTHONPATH=str(ROOT),
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def count(db: sqlite3.Connection, table: str) -> int:
    return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608


@pytest.mark.parametrize("how", ["redelivery", "new_request"])
def test_a_sweep_killed_mid_write_leaves_nothing_and_recovers_once(tmp_path, how):
    killed = child(KILL, tmp_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    run_id = int(killed.stdout.split()[-1])

    db = sqlite3.connect(tmp_path / "llmwiki.sqlite3")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # All or nothing: not one candidate, evidence row or conflict of the killed sweep.
    assert {t: count(db, t) for t in SWEPT} == dict.fromkeys(SWEPT, 0)
    status, attempts, lease = db.execute(
        "SELECT status, attempts, lease_expires_at FROM dreaming_dreamrun WHERE id = ?", (run_id,)
    ).fetchone()
    assert (status, attempts) == ("running", 1)
    assert lease is not None
    assert db.execute("SELECT dream_watermark FROM llmwiki_project").fetchone()[0] == 0
    stored = table_digest(db.cursor(), STORED)
    assert count(db, "llmwiki_episode") > 0
    db.close()

    recovered = child(RECOVER, tmp_path, str(run_id), how)
    assert recovered.returncode == 0, recovered.stderr
    out = json.loads(recovered.stdout.splitlines()[-1])
    assert out["early"] == f"run {run_id}: running"

    db = sqlite3.connect(tmp_path / "llmwiki.sqlite3")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    if how == "redelivery":
        assert out["retry"] == out["again"] == f"run {run_id}: succeeded"
        row = db.execute(
            "SELECT status, attempts, lease_expires_at FROM dreaming_dreamrun WHERE id = ?",
            (run_id,),
        ).fetchone()
        assert row == ("succeeded", 2, None)
    else:
        new = out["new_run"]
        assert out["retry"] == out["again"] == f"run {new}: succeeded"
        status, error = db.execute(
            "SELECT status, error FROM dreaming_dreamrun WHERE id = ?", (run_id,)
        ).fetchone()
        assert status == "abandoned"
        assert "lease expired" in error
    # The retry wrote each candidate once: the dedupe keys are unique and there are some.
    candidates = count(db, "dreaming_candidate")
    assert candidates > 0
    assert (
        db.execute("SELECT COUNT(DISTINCT dedupe_key) FROM dreaming_candidate").fetchone()[0]
        == candidates
    )
    assert count(db, "dreaming_candidateevidence") > 0
    assert table_digest(db.cursor(), STORED) == stored
    db.close()
