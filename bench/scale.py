"""The scale-out path at size: a project of N episodes on PostgreSQL and Redis, two workers.

Run under `scripts/with-scaleout-services` (it needs DATABASE_URL on PostgreSQL and
REDIS_URL). A django-q2 cluster with two workers (`manage.py qcluster`,
LLMWIKI_Q_WORKERS=2) runs beside this process, and the steps are timed in order:

- **ingest**: N synthetic episodes (daily logs, notes, transcripts; ~300 characters each)
  through the gate with `ingest_files`, CHUNK episodes a call;
- **index**: `index_rebuild` of the project (written in bounded chunks);
- **backlog sweep**: one dream run requested, executed by the workers (through Redis); each
  run takes a bounded batch (the policy's `max_episodes`), so memory does not grow with
  the backlog, and queues the next while backlog remains, until the sweep's watermark
  reaches the newest episode;
- **nightly**: NIGHTLY new episodes ingested, then one sweep and one index fold;
- **retrieval**: p50 / p95 of `retrieve()` over the questions of `bench/retrieval.py`;
- **memory**: peak RSS of this process and of every worker process (read from /proc while
  the workers run).

Targets (issue 21): 1,000,000 episodes; every process under 2 GiB whatever the backlog.
On a 2-core machine a million takes long: `--episodes` sets the size, and RESULTS.md
records the size that ran.

Run: ``scripts/with-scaleout-services python bench/scale.py [--episodes 1000000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

from common import (
    REPO_DIR,
    db_label,
    fresh_project,
    md_table,
    peak_rss_mb,
    record,
    setup_django,
    synthetic_texts,
    text_table,
)

CHUNK = 20_000  # episodes per ingest call
PER_FILE = 50  # episodes per generated file
WORKERS = 2


def files_for(texts: list[str], tag: str):
    """RawFiles of PER_FILE episodes each: daily logs, notes and transcripts in turn."""
    from llmwiki.ingest import RawFile

    for n, start in enumerate(range(0, len(texts), PER_FILE)):
        chunk = texts[start : start + PER_FILE]
        if n % 3 == 0:
            day = 1 + n % 28
            name = f"memory/2026-10-{day:02d}-{tag}-{start}.md"
            body = f"# 2026-10-{day:02d} — agent:builder\n\n## Done\n" + "".join(
                f"- {t}\n" for t in chunk
            )
        elif n % 3 == 1:
            name = f"notes/{tag}-{start}.md"
            body = "# Notes\n\n" + "".join(f"## Topic {j}\n\n{t}\n\n" for j, t in enumerate(chunk))
        else:
            name = f"transcripts/{tag}-{start}.jsonl"
            body = "".join(
                json.dumps({"id": f"t-{j}", "role": "user" if j % 2 else "assistant", "content": t})
                + "\n"
                for j, t in enumerate(chunk)
            )
        yield RawFile(name, body.encode())


def ingest(project, n: int, tag: str, seed: int) -> int:
    from llmwiki.ingest import ingest_files

    created = 0
    for start in range(0, n, CHUNK):
        # A seed of its own per chunk: the same texts again would be the same files,
        # which ingest recognises and skips.
        texts = synthetic_texts(min(CHUNK, n - start), seed=seed * 1_000_003 + start)
        texts = [f"{t} ({tag} {start + i})" for i, t in enumerate(texts)]
        report = ingest_files(
            project=project, files=list(files_for(texts, f"{tag}{start}")), actor="bench"
        )
        created += report.episodes_created
    return created


class Workers:
    """`manage.py qcluster` with two workers, and the peak RSS of each of its processes."""

    def __init__(self) -> None:
        from llmwiki.deploy import child_preexec

        env = {**os.environ, "LLMWIKI_Q_WORKERS": str(WORKERS)}
        # Tied to this process: a benchmark stopped midway leaves no cluster behind.
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=REPO_DIR,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_preexec(),
        )
        self.peaks: dict[int, float] = {}
        self.resident: dict[int, float] = {}  # each process's RSS at the last poll
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._poll, daemon=True)
        self._watch.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
        out, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            out.append(pid)
            todo += children.get(pid, [])
        return out

    def _poll(self) -> None:
        while not self._stop.is_set():
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                for line in status.splitlines():
                    if line.startswith("VmHWM:"):
                        mib = int(line.split()[1]) / 1024
                        self.peaks[pid] = max(self.peaks.get(pid, 0.0), mib)
                    elif line.startswith("VmRSS:"):
                        self.resident[pid] = int(line.split()[1]) / 1024
            self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._watch.join()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Sweep(NamedTuple):
    runs: int
    largest: int
    swept: int
    note: str
    seconds: list[float]  # each run's own duration, in order
    rss: list[float]  # the largest worker peak RSS (MiB) after each run
    held: list[float]  # the largest worker RSS (MiB) after each run: what it kept


def sweep(project, workers: Workers, timeout: float = 3600) -> Sweep:
    """Request one dream run and wait while the workers drain the backlog: a run that
    leaves backlog queues the next itself (`dreaming.services.dream_continue`)."""
    from dreaming import services as dreaming
    from dreaming.models import DreamRun
    from llmwiki.models import Episode

    newest = Episode.objects.filter(project=project).order_by("-id").values_list("id", flat=True)[0]
    first = dreaming.dream_request(project=project, trigger="manual", actor="bench")
    runs = DreamRun.objects.filter(project=project, pk__gte=first.pk).order_by("id")
    seen: dict[int, DreamRun] = {}
    rss: list[float] = []
    held: list[float] = []
    idle_since: float | None = None
    deadline = time.monotonic() + timeout
    while True:
        for run in runs.exclude(pk__in=list(seen)):
            if run.status in (DreamRun.Status.FAILED, DreamRun.Status.ABANDONED):
                raise SystemExit(f"dream run {run.pk} ended {run.status}: {run.error}")
            if not run.is_open:
                seen[run.pk] = run
                rss.append(max(workers.peaks.values(), default=0.0))
                held.append(max(workers.resident.values(), default=0.0))
        project.refresh_from_db()
        busy = runs.filter(status__in=DreamRun.OPEN_STATUSES).exists()
        if project.dream_watermark >= newest and not busy:
            break
        # A run settles a moment before its worker queues the next one.
        idle_since = None if busy else idle_since or time.monotonic()
        if idle_since and time.monotonic() - idle_since > 30:
            raise SystemExit(f"the backlog stopped draining at watermark {project.dream_watermark}")
        if time.monotonic() > deadline:
            raise SystemExit(f"the backlog did not drain in {timeout:.0f} s")
        time.sleep(0.2)
    done = list(seen.values())
    lights = [run.phases.get("light") or {} for run in done]
    return Sweep(
        len(done),
        max((light.get("selected", 0) for light in lights), default=0),
        sum(light.get("selected", 0) for light in lights),
        lights[0].get("note", "") if lights else "",
        [(run.duration_ms or 0) / 1000 for run in done],
        rss,
        held,
    )


def growth(done: Sweep) -> str:
    """How a run's time and the workers' memory moved from the first runs to the last."""
    k = min(10, len(done.seconds))
    if not k:
        return ""
    early = statistics.mean(done.seconds[:k])
    late = statistics.mean(done.seconds[-k:])
    marks = sorted({min(n, len(done.rss)) for n in (1, 20, 50, 100, 150, len(done.rss))})
    return (
        f"- Per run (≤ {done.largest:,} episodes): first {k} runs {early:.1f} s on average, "
        f"last {k} {late:.1f} s, slowest {max(done.seconds):.1f} s. Largest worker peak RSS "
        "after run " + ", ".join(f"{n}: {done.rss[n - 1]:,.0f} MiB" for n in marks) + "; "
        "largest worker RSS after run "
        + ", ".join(f"{n}: {done.held[n - 1]:,.0f} MiB" for n in marks)
        + " (sampled every 0.5 s, so a run's last moments may be missed)."
    )


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered) * 1000, p95 * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1_000_000)
    parser.add_argument("--nightly", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--batch",
        type=int,
        default=None,
        help="episodes a dream run takes at most (the project policy's max_episodes); "
        "a smaller batch gives a smaller size as many runs as a large one",
    )
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "REDIS_URL"
    ):
        print(
            "bench/scale.py runs on the scale-out path: run it under scripts/with-scaleout-services"
        )
        return 2

    setup_django()
    from retrieval import queries

    from llmwiki.search import Caller, retrieve
    from llmwiki.search.index import index_fold, index_rebuild

    project = fresh_project("scale")
    if args.batch:
        from dreaming import services as dreaming

        dreaming.policy_update(project=project, policy={"max_episodes": args.batch}, actor="bench")
    workers = Workers()
    rows, notes = [], []

    def step(row: list[str]) -> None:
        # Each step as it ends: a run stopped midway still shows what it measured.
        rows.append(row)
        print(" | ".join(row), flush=True)

    try:
        start = time.perf_counter()
        created = ingest(project, args.episodes, "base", seed=1)
        took = time.perf_counter() - start
        step(["ingest", f"{created:,} episodes", f"{took:.1f}", f"{created / took:,.0f} ep/s"])

        start = time.perf_counter()
        written = index_rebuild(project)
        took = time.perf_counter() - start
        step(["index rebuild", f"{written:,} docs", f"{took:.1f}", f"{written / took:,.0f} docs/s"])

        start = time.perf_counter()
        backlog = sweep(project, workers)
        runs, largest, swept, note = backlog[:4]
        took = time.perf_counter() - start
        step(
            [
                "backlog sweep (workers)",
                f"{runs} run(s), {swept:,} episodes, ≤ {largest:,} a run",
                f"{took:.1f}",
                f"{swept / took:,.0f} ep/s",
            ]
        )
        notes.append(f"- The backlog's first dream run says: {note}")
        notes.append(growth(backlog))

        start = time.perf_counter()
        fresh = ingest(project, args.nightly, "night", seed=2)
        ingest_s = time.perf_counter() - start
        start = time.perf_counter()
        runs, largest = sweep(project, workers)[:2]
        sweep_s = time.perf_counter() - start
        start = time.perf_counter()
        folded = index_fold(project)
        fold_s = time.perf_counter() - start
        step(
            [
                "nightly: ingest",
                f"{fresh:,} episodes",
                f"{ingest_s:.1f}",
                f"{fresh / ingest_s:,.0f} ep/s",
            ]
        )
        step(
            [
                "nightly: sweep (workers)",
                f"{runs} run(s), {largest:,} episodes",
                f"{sweep_s:.1f}",
                "",
            ]
        )
        step(["nightly: index fold", f"{folded:,} docs", f"{fold_s:.1f}", ""])

        caller = Caller.operator("bench")
        asked = queries(args.queries)
        for q in asked[:20]:
            retrieve(project, q, caller=caller, limit=10, record=False)
        samples = []
        for q in asked:
            t = time.perf_counter()
            retrieve(project, q, caller=caller, limit=10, record=False)
            samples.append(time.perf_counter() - t)
        p50, p95 = percentiles(samples)
        step(["retrieve()", f"{args.queries} queries", "", f"p50 {p50:.1f} ms, p95 {p95:.1f} ms"])
    finally:
        workers.stop()
    peaks = sorted(workers.peaks.values(), reverse=True)
    rows.append(["peak RSS, this process", "", "", f"{peak_rss_mb():,.0f} MiB"])
    rows.append(
        [
            "peak RSS, worker processes",
            f"{len(peaks)} processes",
            "",
            ", ".join(f"{p:,.0f}" for p in peaks) + " MiB",
        ]
    )
    header = ["step", "size", "seconds", "rate"]
    print(text_table(header, rows))
    notes.append(
        f"- {args.episodes:,} episodes asked, {db_label()}, Redis broker, django-q2 cluster with "
        f"{WORKERS} workers; ingest in calls of {CHUNK:,} episodes; the sweeps run in the workers, "
        "the rest in this process"
        + (f"; batch cap {args.batch:,} episodes a run." if args.batch else ".")
    )
    notes.append("- Target: 1,000,000 episodes with every process under 2 GiB.")
    print("\n".join(notes))
    if not args.no_record:
        record("Scale-out path (bench/scale.py)", [*md_table(header, rows), "", *notes])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
