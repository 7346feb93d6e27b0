"""The whole dream sweep (database in, candidates out) against its floor, side by side.

For each N (10k and 100k by default), in a fresh child process: N synthetic episodes are
inserted into a fresh project, then

- **floor**: stream the batch's text out of the database and tokenise it with the
  engine's tokenizer (what any sweep must at least do);
- **sweep**: `dream_execute` — select past the watermark, load, Light/REM/Deep, persist
  candidates, evidence and conflicts in one transaction, settle.

- **incremental**: then 1k new episodes (a day later, another seed) are added and swept:
  the watermark keeps the history out of the batch, so this time must not grow with N.

Targets (docs/ARCHITECTURE.md §8): 100k episodes < 60 s, 10× episodes → ≤ 11× time, peak memory
< 1 GiB, within 30× of the floor; the incremental sweep flat in N.

Run: ``python bench/dream.py [--n 10000 100000] [--no-record]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from common import md_table, record, text_table

HERE = Path(__file__).resolve().parent
INCREMENT = 1000


def child(n: int) -> dict:
    from common import fresh_project, peak_rss_mb, setup_django, synthetic_episodes, timer

    setup_django()
    from dreaming.engine.text import tokenize
    from dreaming.services import dream_execute, dream_request
    from llmwiki.models import Episode

    project = fresh_project("dream")
    # One batch holds everything, so the sweep reads all N episodes.
    project.dream_policy = {"max_episodes": n, "max_bytes": 1 << 31}
    project.save()
    Episode.objects.bulk_create(synthetic_episodes(project, n), batch_size=2000)
    rss_before = peak_rss_mb()

    with timer() as floor:
        tokens = 0
        texts = Episode.objects.filter(project=project).values_list("content", flat=True)
        for text in texts.iterator(chunk_size=5000):
            tokens += len(tokenize(text))
    run = dream_request(project=project, trigger="manual", actor="bench", enqueue=False)
    with timer() as sweep:
        run = dream_execute(run_id=run.pk)
    assert run.status == "succeeded", run.error
    # New material the next night: later than everything swept, other texts.
    newest = Episode.objects.filter(project=project).latest("occurred_at").occurred_at
    fresh = synthetic_episodes(project, INCREMENT, seed=7, days=3, end=newest + timedelta(days=4))
    Episode.objects.bulk_create(fresh, batch_size=2000)
    inc = dream_request(project=project, trigger="manual", actor="bench", enqueue=False)
    with timer() as incremental:
        inc = dream_execute(run_id=inc.pk)
    assert inc.status == "succeeded", inc.error
    return {
        "n": n,
        "floor": floor.seconds,
        "sweep": sweep.seconds,
        "incremental": incremental.seconds,
        "inc_selected": inc.counts.get("selected", 0),
        "tokens": tokens,
        "proposed": run.counts.get("proposed", 0),
        "deferred": run.counts.get("deferred", 0),
        "conflicts": run.counts.get("conflicts", 0),
        "duplicates": run.counts.get("duplicates", 0),
        "phases": {k: v.get("seconds") for k, v in run.phases.items()},
        "rss_setup": rss_before,
        "rss_peak": peak_rss_mb(),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    results = []
    for n in args.n:
        out = subprocess.run(
            [sys.executable, str(HERE / "dream.py"), "--child", str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    header = [
        "episodes",
        "sweep s",
        "floor s",
        f"+{INCREMENT:,} s",
        "sweep/floor",
        "light/rem/deep s",
        "proposed",
        "deferred",
        "conflicts",
        "duplicates",
        "peak RSS MiB",
    ]
    rows = [
        [
            f"{r['n']:,}",
            f"{r['sweep']:.2f}",
            f"{r['floor']:.2f}",
            f"{r['incremental']:.2f} ({r['inc_selected']:,} read)",
            f"{r['sweep'] / r['floor']:.1f}×",
            "/".join(str(r["phases"].get(p)) for p in ("light", "rem", "deep")),
            r["proposed"],
            r["deferred"],
            r["conflicts"],
            r["duplicates"],
            f"{r['rss_peak']:.0f}",
        ]
        for r in results
    ]
    print(text_table(header, rows))
    notes = []
    if len(results) >= 2:
        a, b = results[0], results[-1]
        notes.append(
            f"- Growth {a['n']:,} → {b['n']:,} ({b['n'] / a['n']:.0f}× episodes): sweep "
            f"{b['sweep'] / a['sweep']:.1f}×, floor {b['floor'] / a['floor']:.1f}×; the "
            f"+{INCREMENT:,} sweep {b['incremental'] / a['incremental']:.2f}×."
        )
        print(notes[-1])
    if not args.no_record:
        record(
            "Dream sweep through the service (bench/dream.py)",
            [
                *md_table(header, rows),
                "",
                *notes,
                "- Floor: stream the episodes' text out of the database and tokenise it with "
                "the engine's tokenizer, same run. Sweep: `dream_execute` end to end "
                "(select, load, Light/REM/Deep, persist, settle). Peak RSS includes setup. "
                f"+{INCREMENT:,}: a second sweep over {INCREMENT:,} newer episodes on top of "
                "the swept history.",
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
