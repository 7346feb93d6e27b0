"""Candidate quality: the acceptance harness on the Orchard development corpus, and the demo.

Runs ``../shared/eval/run.py --repo . --core-only`` (ingest, dream, candidates, conflicts
through the command-line contract) and records its metric table, with the dream sweep's
wall time, in ``bench/RESULTS.md``. Beside it, the demo corpus goes through the same
commands in a fresh data directory (what a reviewer would be asked to read) and its
acceptance tests (``tests/test_demo_acceptance.py``) run. Orchard is development data:
what is recorded here says the mechanisms work on material nobody wrote them for, and the
same harness scores other projects' corpora that are not in this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

from common import REPO_DIR, md_table, record, text_table

HARNESS = REPO_DIR.parent / "shared" / "eval" / "run.py"
METRICS = (
    "fact_recall",
    "dup_collapse",
    "routing_accuracy",
    "conflict_recall",
    "noise_rate",
    "injection_flagged",
    "lifecycle_ok",
    "secret_leaks",
)
INFO = (
    "candidates_proposed",
    "candidate_chars_median",
    "candidates_over_400_chars",
    "conflicts_reported",
    "injection_files_flagged_at_ingest",
    "pii_files_flagged_at_ingest",
    "secret_files_flagged_at_ingest",
)


DEMO_CORPUS = REPO_DIR / "llmwiki" / "demo" / "corpus"


def _manage(data_dir: str, *args: str) -> object:
    env = {**os.environ, "LLMWIKI_DATA_DIR": data_dir}
    out = subprocess.run(
        [sys.executable, str(REPO_DIR / "manage.py"), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=REPO_DIR,
    ).stdout
    return json.loads(out) if "--json" in args else None


def demo_figures() -> list[list[object]]:
    """The demo through the command-line contract, and its acceptance tests."""
    with tempfile.TemporaryDirectory(prefix="llmwiki-quality-") as data_dir:
        _manage(data_dir, "migrate", "--noinput")
        dirs = [str(DEMO_CORPUS / d) for d in ("memory", "notes", "transcripts")]
        _manage(data_dir, "ingest", "--project", "demo", "--create", *dirs, "--json")
        _manage(data_dir, "dream", "--project", "demo", "--json")
        cands = _manage(data_dir, "candidates", "--project", "demo", "--json")
        conflicts = _manage(data_dir, "conflicts", "--project", "demo", "--json")
    cands = cands.get("candidates", cands) if isinstance(cands, dict) else cands
    conflicts = conflicts.get("conflicts", conflicts) if isinstance(conflicts, dict) else conflicts
    chars = [len(c["text"]) for c in cands] or [0]
    pages = Counter(c.get("page_target", "?") for c in cands)
    tests = (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:randomly",
                "tests/test_demo_acceptance.py",
            ],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO_DIR,
        )
        .stdout.strip()
        .splitlines()
    )
    return [
        ["candidates", len(cands)],
        ["conflicts", len(conflicts)],
        ["candidate_chars_median", int(statistics.median(chars))],
        ["pages", ", ".join(f"{p} {n}" for p, n in sorted(pages.items()))],
        ["acceptance tests", tests[-1] if tests else "did not run"],
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)
    if not HARNESS.exists():
        print(f"no harness at {HARNESS}: nothing to measure", file=sys.stderr)
        return 1
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "--repo", str(REPO_DIR), "--core-only"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        return 1
    doc = json.loads(lines[-1])
    info = doc.get("info", {})
    rows = [[m, doc.get(m)] for m in METRICS] + [[k, info.get(k)] for k in INFO]
    rows.append(["harness wall time (s)", round(elapsed, 1)])
    print(text_table(["Orchard", "value"], rows))
    demo = demo_figures()
    print()
    print(text_table(["demo", "value"], demo))
    if not args.no_record:
        record(
            "Candidate quality on Orchard (eval harness, --core-only) and the demo",
            [*md_table(["Orchard metric", "value"], rows), "", *md_table(["demo", "value"], demo)],
        )
        print("\nRecorded in bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
