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

import pytest
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


def clean_env(tmp_path, **extra) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_")
        and k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}
    }
    env.update({"LLMWIKI_DATA_DIR": str(tmp_path), "LLMWIKI_DEBUG": "1", **extra})
    return env


def wait_for(url: str, timeout: float = 60, headers: dict | None = None) -> int | None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            request = urllib.request.Request(url, headers=headers or {})  # noqa: S310
            with urllib.request.urlopen(request, timeout=2) as r:  # noqa: S310
                return r.status
        except OSError:
            time.sleep(0.3)
    return None


def session_processes(sid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,args=", "-s", str(sid)], capture_output=True, text=True)
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def wait_until_gone(sid: int, timeout: float = 30) -> list[str]:
    deadline = time.time() + timeout
    while (left := session_processes(sid)) and time.time() < deadline:
        time.sleep(0.3)
    return left


def start_serve(tmp_path, command: list[str]) -> tuple[subprocess.Popen, int]:
    env = clean_env(tmp_path)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    port = free_port()
    proc = subprocess.Popen(
        [part.replace("@PORT@", str(port)) for part in command],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert wait_for(f"http://127.0.0.1:{port}/accounts/login/") == 200
    workers = subprocess.run(
        ["pgrep", "-s", str(proc.pid), "-f", "qcluster"], capture_output=True, text=True
    )
    assert workers.stdout.strip(), "the worker is not running"
    return proc, port


@pytest.mark.parametrize("ctrl_c", [False, True], ids=["sigterm", "ctrl-c"])
def test_serve_starts_web_and_worker_and_stops_both(tmp_path, ctrl_c):
    """Stopped by SIGTERM, or by Ctrl-C: SIGINT to the terminal's foreground group."""
    import threading

    proc, _ = start_serve(tmp_path, [sys.executable, "manage.py", "serve", "127.0.0.1:@PORT@"])
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        # A worker told to stop while it is still starting may skip its farewell; on a
        # busy machine startup takes seconds, so wait for it to say it runs.
        deadline = time.time() + 60
        while time.time() < deadline and not any(
            "Q Cluster" in ln and "running" in ln for ln in lines
        ):
            time.sleep(0.2)
        if ctrl_c:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    output = "".join(lines)
    assert proc.returncode == 0
    assert "has stopped" in output  # the qcluster shut down cleanly
    assert wait_until_gone(proc.pid) == []


def test_a_serve_killed_outright_takes_web_and_worker_with_it(tmp_path):
    proc, _ = start_serve(tmp_path, [sys.executable, "manage.py", "serve", "127.0.0.1:@PORT@"])
    try:
        proc.kill()
        proc.wait(timeout=10)
        # Without the parent-death signal the worker and web server run on, orphaned.
        assert wait_until_gone(proc.pid) == []
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], check=False)


def test_killing_make_run_outright_stops_web_and_worker(tmp_path):
    """`make run`'s own recipe line, under a real make that is then SIGKILLed."""
    recipe = next(
        line.strip()
        for line in (ROOT / "Makefile").read_text().splitlines()
        if "manage.py serve" in line
    )
    assert "--exit-with-parent" in recipe
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        "run:\n\t" + recipe.replace("$(PY)", sys.executable).replace("8000", "$(PORT)") + "\n"
    )
    proc, _ = start_serve(
        tmp_path / "data", ["make", "-s", "-f", str(makefile), "run", "PORT=@PORT@"]
    )
    try:
        proc.kill()  # make, the parent of serve
        proc.wait(timeout=10)
        assert wait_until_gone(proc.pid) == []
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], check=False)
