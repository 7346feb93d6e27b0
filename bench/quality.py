"""Candidate quality: the acceptance harness on the Orchard development corpus.

Runs ``../shared/eval/run.py --repo . --core-only`` (ingest, dream, candidates, conflicts
through the command-line contract) and records its metric table, with the dream sweep's
wall time, in ``bench/RESULTS.md``. The demo's quality is checked by
``tests/test_demo_acceptance.py``, which ``make test`` runs. Orchard is development data:
what is recorded here says the mechanisms work on material nobody wrote them for, and the
same harness scores other projects' corpora that are not in this repository.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

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
    if not args.no_record:
        record(
            "Candidate quality on Orchard (eval harness, --core-only)",
            md_table(["metric", "value"], rows),
        )
        print("\nRecorded in bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
