"""What a production process checks before it serves a request, and how it stays tied to
the process that started it."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.exceptions import ImproperlyConfigured

PR_SET_PDEATHSIG = 1


class StaticFilesMissing(ImproperlyConfigured):
    pass


def static_files_problem() -> str | None:
    """Why pages would fail for want of collected static files, or None.

    With the manifest storage (DEBUG off), a template naming a static file that is not in
    STATIC_ROOT's manifest raises on every page; one clear refusal at startup beats that.
    """
    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return None
    collected, _ = staticfiles_storage.load_manifest()
    expected = {
        path.replace(os.sep, "/")
        for finder in finders.get_finders()
        for path, _ in finder.list(["CVS", ".*", "*~"])
    }
    missing = sorted(expected - collected.keys())
    if not missing:
        return None
    state = "not collected" if not collected else "out of date"
    return (
        f"Static files are {state} in {settings.STATIC_ROOT} ({len(missing)} missing, "
        f"e.g. {missing[0]}). Run `manage.py collectstatic --noinput` with the same "
        "environment before starting the server."
    )


def check_static_files() -> None:
    if problem := static_files_problem():
        raise StaticFilesMissing(problem)


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl


def exit_with_parent(parent_pid: int, prctl=None) -> None:
    """Have the kernel send this process SIGTERM when its parent ends, even by SIGKILL.

    Linux only (elsewhere a no-op). If the parent is already gone, stop now.
    """
    prctl = prctl or _prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGTERM)


def child_preexec():
    """A Popen preexec_fn tying the child to the calling process (looked up before fork)."""
    prctl, parent = _prctl(), os.getpid()
    if prctl is None:
        return None
    return lambda: exit_with_parent(parent, prctl)


def stop_all(procs: list[subprocess.Popen], grace: float = 45, every: float = 3) -> None:
    """SIGTERM each process still running, wait up to `grace` seconds for all of them,
    then SIGKILL what is left, with its process group when it leads one (a worker's
    sentinel and pool must not outlive it).

    The signal is sent again every `every` seconds to a process that has not ended: a
    django-q2 cluster that receives it after installing its handler but before its
    sentinel process is recorded as started drops it (its stop() finds no live
    sentinel), and would otherwise run on until the kill, leaving its sentinel and
    workers orphaned. A process already stopping takes a repeat as the same request.
    """
    deadline = time.monotonic() + grace
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        while p.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(p)
                break
            try:
                p.wait(timeout=min(every, left))
            except subprocess.TimeoutExpired:
                if p.poll() is None:
                    p.terminate()


def _kill(proc: subprocess.Popen) -> None:
    try:
        leads = os.getpgid(proc.pid) == proc.pid
    except ProcessLookupError:
        leads = False
    if leads:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        proc.kill()
    proc.wait()
