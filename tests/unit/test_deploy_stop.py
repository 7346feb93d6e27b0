"""`stop_all`: how `manage.py serve` stops its web server and worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from llmwiki.deploy import stop_all

# A child that tells its parent it is ready, then ends by itself (exit code 3) on its
# `needed`-th SIGTERM and ignores the ones before it.
CHILD = """
import signal, sys, time
needed, seen = int(sys.argv[1]), 0
def on_term(*_):
    global seen
    seen += 1
    if seen >= needed:
        sys.exit(3)
signal.signal(signal.SIGTERM, on_term if needed else signal.SIG_IGN)
import subprocess
# A child of its own, as a worker's sentinel is, ignoring SIGTERM too.
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
print(grandchild.pid, flush=True)
while True:
    time.sleep(0.05)
"""


def child(needed: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(needed)],
        stdout=subprocess.PIPE,
        text=True,
        process_group=0,  # as serve starts its web server and worker
    )
    proc.grandchild = int(proc.stdout.readline())
    return proc


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_process_that_drops_the_first_sigterm_is_asked_again_and_ends_by_itself():
    # As a django-q2 cluster does with a SIGTERM between its handler and its sentinel.
    proc = child(needed=2)
    stop_all([proc], grace=30, every=0.2)
    assert proc.returncode == 3  # its own exit, not the kill at the end of the grace
    os.kill(proc.grandchild, signal.SIGKILL)


def test_every_process_is_stopped_and_one_that_never_ends_is_killed_after_the_grace():
    polite, deaf = child(needed=1), child(needed=0)
    stop_all([deaf, polite], grace=1, every=0.2)
    assert polite.returncode == 3
    assert deaf.returncode == -9
    # The kill took the process's group: its own child is not left orphaned.
    deadline = time.monotonic() + 10
    while alive(deaf.grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(deaf.grandchild)
    os.kill(polite.grandchild, signal.SIGKILL)


def test_processes_that_already_ended_are_left_as_they_are():
    proc = child(needed=1)
    proc.terminate()
    proc.wait()
    stop_all([proc], grace=1)
    assert proc.returncode == 3
    os.kill(proc.grandchild, signal.SIGKILL)
