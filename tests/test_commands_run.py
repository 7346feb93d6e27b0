"""The pieces of `make run`: the demo loader and the web server + worker pair."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.core.management import call_command

from dreaming.models import Candidate
from llmwiki.models import Episode, Project, Source

ROOT = Path(__file__).resolve().parent.parent


def test_load_demo_is_idempotent_and_plants_the_cases(db, capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    assert "Log in as  demo" in out
    project = Project.objects.get(slug="demo")
    episodes, sources = Episode.objects.count(), Source.objects.count()
    assert episodes > 500 and sources >= 20
    assert not Episode.objects.filter(content__contains="AKIAZ7TIDEWATERDEMO1").exists()
    assert not Episode.objects.filter(content__contains="LIGHT-SLEEP-MARKER").exists()
    assert not Episode.objects.filter(content__contains="DREAMING-ARTIFACT-MARKER").exists()
    assert Episode.objects.filter(project=project, status="quarantined").count() == 1
    call_command("load_demo")
    assert "0 episodes created" in capsys.readouterr().out
    assert (Episode.objects.count(), Source.objects.count()) == (episodes, sources)
    assert Project.objects.filter(slug="demo").count() == 1
    assert not Candidate.objects.exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_starts_web_and_worker_and_stops_both(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_")
        and k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}
    }
    env.update(LLMWIKI_DATA_DIR=str(tmp_path), LLMWIKI_DEBUG="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 60
        status = None
        while time.time() < deadline and status is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/accounts/login/", timeout=2
                ) as r:
                    status = r.status
            except OSError:
                time.sleep(0.3)
        assert status == 200
        children = subprocess.run(
            ["pgrep", "-s", str(os.getpgid(proc.pid)), "-f", "qcluster"],
            capture_output=True,
            text=True,
        )
        assert children.stdout.strip(), "the worker is not running"
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0
    assert "has stopped" in output  # the qcluster shut down cleanly
    leftover = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""
