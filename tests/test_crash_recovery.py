"""A worker killed (SIGKILL) in the middle of an approval leaves all of it or none of it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent(
    """
    import os, signal, django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from llmwiki.services import project_create
    from tests.dreaming_data import seed
    from dreaming import services as dreaming
    from dreaming.models import Candidate
    from reviews import actions
    import llmwiki.wiki

    user = get_user_model().objects.create_superuser("root", password="x")
    project = project_create(slug="p", name="P", actor="t", owner=user)
    seed(project)
    dreaming.dream_execute(run_id=dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False).pk)
    candidate = Candidate.objects.get(text__contains="db-staging-2")
    print("candidate", candidate.pk, flush=True)

    def die(**kwargs):
        # The claim and the page revision are written; the transaction has not committed.
        os.kill(os.getpid(), signal.SIGKILL)

    actions.record_change = die
    actions.candidate_approve(candidate=candidate, reviewer=user, seen=actions.form_state(candidate))
    """
)


def test_a_killed_approval_leaves_nothing_half_written(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_") and k not in {"DATABASE_URL", "REDIS_URL"}
    }
    env.update(
        LLMWIKI_DATA_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="llmwiki.settings",
        LLMWIKI_DEBUG="1",
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    candidate_id = int(proc.stdout.split()[-1])

    db = sqlite3.connect(tmp_path / "llmwiki.sqlite3")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT COUNT(*) FROM llmwiki_claim").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM llmwiki_pagerevision").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM reviews_review").fetchone()[0] == 0
    status = db.execute(
        "SELECT status, version FROM dreaming_candidate WHERE id = ?", (candidate_id,)
    ).fetchone()
    assert status == ("proposed", 1)
