"""Load: reviewers approve different candidates while contributors upload, on a real server.

A short, bounded run of `bench/load.py` (the long one is run by hand; its figures are in
bench/RESULTS.md). Expected: no request fails, and every write answered 2xx is in the
database exactly once, with nothing else changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_concurrent_reviewers_and_contributors_lose_nothing():
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLMWIKI_", "DJANGO_")) and k not in {"DATABASE_URL", "REDIS_URL"}
    }
    proc = subprocess.run(
        [
            sys.executable, "bench/load.py", "--reviewers", "3", "--contributors", "3",
            "--candidates", "30", "--events", "10", "--seconds", "60", "--no-record", "--json",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["error_count"] == 0, summary["errors"]
    assert summary["lost"] == []
    assert (summary["approved"], summary["events"]) == (30, 30)
    assert summary["latency_ms"]["approve"]["n"] >= 30
