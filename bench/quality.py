"""Candidate quality: the acceptance harness on both development corpora, and the demo.

Runs ``../shared/eval/run.py --repo . --core-only`` (ingest, dream, candidates, conflicts
through the command-line contract) on Orchard (the harness's default corpus) and on Harbor
(generated into a temporary directory by ``eval/harbor/``), and records one metric table with
a column per corpus, with each run's wall time, in ``bench/RESULTS.md``. Beside it, the demo
corpus goes through the same commands in a fresh data directory (what a reviewer would be
asked to read) and its acceptance tests (``tests/test_demo_acceptance.py``) run. Orchard and
Harbor are development data: what is recorded here says the mechanisms work on material
nobody wrote them for, and the same harness scores other projects' corpora that are not in
this repository.
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
HARBOR = REPO_DIR / "eval" / "harbor"
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


def harness(*corpus_args: str) -> list[object] | None:
    """One corpus through the harness (--core-only): its column of the table, or None."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "--repo", str(REPO_DIR), "--core-only", *corpus_args],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        return None
    doc = json.loads(lines[-1])
    info = doc.get("info", {})
    return [doc.get(m) for m in METRICS] + [info.get(k) for k in INFO] + [round(elapsed, 1)]


def build_harbor(out: str) -> tuple[str, ...]:
    """Generate the Harbor corpus and its key into ``out``; the harness arguments for them."""
    for script in ("make_corpus.py", "build_key.py"):
        subprocess.run(
            [sys.executable, "-B", str(HARBOR / script), out], capture_output=True, check=True
        )
    return ("--corpus", f"{out}/corpus", "--key", f"{out}/answer_key.json")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)
    if not HARNESS.exists():
        print(f"no harness at {HARNESS}: nothing to measure", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="llmwiki-harbor-") as harbor_dir:
        columns = {"Orchard": harness(), "Harbor": harness(*build_harbor(harbor_dir))}
    if None in columns.values():
        return 1
    names = [*METRICS, *INFO, "harness wall time (s)"]
    rows = [[name, *(col[i] for col in columns.values())] for i, name in enumerate(names)]
    print(text_table(["metric", *columns], rows))
    demo = demo_figures()
    print()
    print(text_table(["demo", "value"], demo))
    if not args.no_record:
        record(
            "Candidate quality on Orchard and Harbor (eval harness, --core-only) and the demo",
            [*md_table(["metric", *columns], rows), "", *md_table(["demo", "value"], demo)],
        )
        print("\nRecorded in bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
