"""The review queue and candidate panel with 10k candidates, against the same with 100.

Two projects are built in one database: a big one with N candidates (10,000 by default) and
a small one with 100, both with the same shape. Their episodes come in through the real gate
(`ingest_files`, so every episode has a hashed source); candidates are bulk-created from the
synthetic corpus with varied status, flags, security class, scores, signals, page targets and
ages, each with 1–5 `CandidateEvidence` rows on real episodes.

A maintainer then requests, through `django.test.Client` (full middleware stack, a real
session, `collectstatic` run into the throwaway data directory as in production):

- **queue p1**: ``/p/<slug>/review/``;
- **queue p200**: ``?page=200`` (deep OFFSET; the small project clamps to its last page);
- **queue risk=pii**: ``?risk=pii`` (the flags filter);
- **candidate**: the panel of 50 random open candidates, cycled.

Requests to the two projects alternate, so both see the same machine state. Queries per
request are counted with `CaptureQueriesContext` in a separate, untimed pass (capturing adds
its own overhead); times are wall clock per request after a warm-up. The queue's query count
must not depend on N; target (docs/ARCHITECTURE.md §8): queue p95 < 150 ms at 10k candidates.

Run: ``python bench/review.py [--n 10000] [--small 100] [--requests 60] [--no-record]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time

from common import db_label, md_table, record, setup_django, synthetic_texts, text_table, timer

EPISODE_FILES = 20
PER_FILE = 50  # bullet lines per ingested file: 1,000 episodes per project
DETAIL_SAMPLE = 50
WARMUP = 5
TARGET_P95_MS = 150.0
FLAG_MIX = [
    # (weight, flags): most candidates are clean; risky ones sort first in the queue.
    (70, []),
    (10, ["pii:email"]),
    (4, ["pii:phone", "pii:email"]),
    (5, ["risk:injection"]),
    (3, ["secret:aws-key"]),
    (8, ["stale"]),
]
STATUS_MIX = [(80, "proposed"), (12, "deferred"), (5, "approved"), (3, "rejected")]


def weighted(rng: random.Random, mix: list[tuple[int, object]]) -> object:
    return rng.choices([v for _w, v in mix], weights=[w for w, _v in mix])[0]


def ingest_episodes(project, user, seed: int) -> list[int]:
    """Ingest daily-log files through the gate; return the ids of episodes with a source."""
    from llmwiki.ingest import RawFile, ingest_files
    from llmwiki.models import Episode

    texts = synthetic_texts(EPISODE_FILES * PER_FILE, seed=seed)
    files = []
    for i in range(EPISODE_FILES):
        day = 1 + i % 28
        lines = "".join(f"- {t}\n" for t in texts[i * PER_FILE : (i + 1) * PER_FILE])
        body = f"# 2026-10-{day:02d} — agent:builder\n\n## Done\n{lines}"
        files.append(RawFile(f"memory/2026-10-{day:02d}-{i}.md", body.encode()))
    ingest_files(project=project, files=files, actor=user)
    ids = list(
        Episode.objects.filter(project=project, source__isnull=False).values_list("id", flat=True)
    )
    assert len(ids) >= 100, f"only {len(ids)} episodes with a source were ingested"
    return ids


def build_project(label: str, n: int, owner, seed: int):
    """A project with standard pages, `owner` as maintainer, and `n` candidates."""
    from dreaming.engine.policy import SIGNALS
    from dreaming.models import Candidate, CandidateEvidence
    from llmwiki.models import Episode, SecurityClass
    from llmwiki.services import project_create
    from llmwiki.vocabulary import STANDARD_PAGES

    project = project_create(
        slug=f"review-{label}-{time.time_ns():x}",
        name=f"Review benchmark ({label})",
        actor="bench",
        owner=owner,
    )
    episode_ids = ingest_episodes(project, owner, seed)
    rng = random.Random(seed)
    texts = synthetic_texts(n, seed=seed + 1)
    targets = list(STANDARD_PAGES)
    memory_types = [
        Episode.MemoryType.SEMANTIC,
        Episode.MemoryType.PROCEDURAL,
        Episode.MemoryType.EPISODIC,
    ]
    now = dt.datetime.now(dt.UTC)
    candidates = []
    for i, text in enumerate(texts):
        signals = {name: round(rng.random(), 3) for name in SIGNALS}
        signals |= {f"{name}.w": round(signals[name] * 0.2, 3) for name in SIGNALS}
        created = now - dt.timedelta(days=rng.uniform(0, 60))
        candidates.append(
            Candidate(
                project=project,
                text=text,
                page_target=rng.choice(targets),
                section=rng.choice(["", "Hosts", "Services", "Decisions", "Incidents"]),
                route_reason="synthetic: routed by memory type",
                memory_type=rng.choice(memory_types),
                score=round(rng.random(), 4),
                signals=signals,
                flags=list(weighted(rng, FLAG_MIX)),
                security_class=SecurityClass.RESTRICTED
                if rng.random() < 0.04
                else SecurityClass.INTERNAL,
                dedupe_key=f"bench-{label}-{i}",
                subject_key=text[:60],
                status=weighted(rng, STATUS_MIX),
                created_at=created,
                updated_at=created,
            )
        )
    Candidate.objects.bulk_create(candidates, batch_size=2000)
    ids = list(Candidate.objects.filter(project=project).values_list("id", flat=True))
    evidence = [
        CandidateEvidence(
            candidate_id=cid,
            episode_id=eid,
            role="contradict" if rng.random() < 0.05 else "support",
        )
        for cid in ids
        for eid in rng.sample(episode_ids, rng.randint(1, 5))
    ]
    CandidateEvidence.objects.bulk_create(evidence, batch_size=2000)
    open_ids = list(
        Candidate.objects.filter(project=project, status__in=Candidate.OPEN_STATUSES)
        .order_by("id")
        .values_list("id", flat=True)
    )
    return project, open_ids, len(evidence)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of `values` (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))]


def fetch(client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200, f"{url} answered {response.status_code}"


def count_queries(client, urls: list[str]) -> list[int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = []
    for url in urls:
        with CaptureQueriesContext(connection) as ctx:
            fetch(client, url)
        counts.append(len(ctx.captured_queries))
    return counts


def measure(client, urls_small: list[str], urls_big: list[str], requests: int) -> dict:
    """Alternate small/big requests; return per-side query counts and times in ms."""
    q_small = count_queries(client, urls_small)
    q_big = count_queries(client, urls_big)
    for url in urls_small[:WARMUP] + urls_big[:WARMUP]:
        fetch(client, url)
    t_small: list[float] = []
    t_big: list[float] = []
    for i in range(requests):
        for urls, times in ((urls_small, t_small), (urls_big, t_big)):
            url = urls[i % len(urls)]
            with timer() as t:
                fetch(client, url)
            times.append(t.seconds * 1000)
    return {"q_small": q_small, "q_big": q_big, "t_small": t_small, "t_big": t_big}


def span(counts: list[int]) -> str:
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}–{hi}"


def scenarios(small, small_open, big, big_open) -> list[tuple[str, list[str], list[str]]]:
    """(name, URLs in the small project, the same in the big one) for each timed row."""
    rng = random.Random(11)
    sample_small = rng.sample(small_open, min(DETAIL_SAMPLE, len(small_open)))
    sample_big = rng.sample(big_open, min(DETAIL_SAMPLE, len(big_open)))

    def q(project, suffix=""):
        return [f"/p/{project.slug}/review/{suffix}"]

    def details(project, ids):
        return [f"/p/{project.slug}/review/candidates/{cid}/" for cid in ids]

    return [
        ("queue p1", q(small), q(big)),
        ("queue p200", q(small, "?page=200"), q(big, "?page=200")),
        ("queue risk=pii", q(small, "?risk=pii"), q(big, "?risk=pii")),
        (
            f"candidate ×{len(sample_big)}",
            details(small, sample_small),
            details(big, sample_big),
        ),
    ]


def table(client, args, rows_of: list[tuple[str, list[str], list[str]]]):
    """Measure each scenario; the table's header and rows, and the raw results by name."""
    header = [
        "request",
        f"queries {args.small:,}",
        f"queries {args.n:,}",
        "constant",
        f"p50 ms {args.small:,}",
        f"p95 ms {args.small:,}",
        f"p50 ms {args.n:,}",
        f"p95 ms {args.n:,}",
        "p50 ratio",
        "p95 ratio",
    ]
    rows = []
    results = {}
    for name, urls_small, urls_big in rows_of:
        r = measure(client, urls_small, urls_big, args.requests)
        results[name] = r
        p50s, p95s = percentile(r["t_small"], 50), percentile(r["t_small"], 95)
        p50b, p95b = percentile(r["t_big"], 50), percentile(r["t_big"], 95)
        same = sorted(set(r["q_small"])) == sorted(set(r["q_big"]))
        rows.append(
            [
                name,
                span(r["q_small"]),
                span(r["q_big"]),
                "yes" if same else "NO",
                f"{p50s:.1f}",
                f"{p95s:.1f}",
                f"{p50b:.1f}",
                f"{p95b:.1f}",
                f"{p50b / p50s:.2f}×",
                f"{p95b / p95s:.2f}×",
            ]
        )
        print(f"  {name}: done", flush=True)
    return header, rows, results


def verdict(args, results: dict, panel: str) -> tuple[bool, list[str]]:
    """Whether the queue's query count is constant, and the notes on the targets."""
    queue_p95 = {
        name: percentile(r["t_big"], 95) for name, r in results.items() if name.startswith("queue")
    }
    worst = max(queue_p95, key=queue_p95.get)
    met = "met" if queue_p95[worst] < TARGET_P95_MS else "MISSED"
    constant = all(
        set(results[name]["q_small"]) == set(results[name]["q_big"]) for name in queue_p95
    )
    return constant, [
        f"- Target queue p95 < {TARGET_P95_MS:.0f} ms at {args.n:,} candidates: {met} "
        f"(worst: {worst}, {queue_p95[worst]:.1f} ms).",
        f"- Queue query count independent of N: {'yes' if constant else 'NO'}.",
        f"- Mean candidate-panel time: {statistics.mean(results[panel]['t_big']):.1f} "
        f"ms at {args.n:,}.",
    ]


def record_results(args, header: list[str], rows: list, notes: list[str]) -> None:
    record(
        "Review queue and candidate panel (bench/review.py)",
        [
            *md_table(header, rows),
            "",
            *notes,
            f"- Database: {db_label()}. {args.requests} timed requests per cell after "
            f"{WARMUP} warm-up, small and big alternating; `django.test.Client` with the "
            "full middleware stack, DEBUG off, collectstatic manifest. Queries counted in a "
            "separate untimed pass (`CaptureQueriesContext`); a range means the count "
            "varied across the sampled candidates.",
            f"- Each project: {EPISODE_FILES * PER_FILE:,} episodes ingested through the "
            f"gate; candidates {', '.join(f'{w}% {s}' for w, s in STATUS_MIX)}; about 30% "
            "flagged, 4% restricted; 1–5 evidence rows each. `queue p200` clamps to the "
            "last page in the small project.",
        ],
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_000, help="candidates in the big project")
    parser.add_argument("--small", type=int, default=100, help="candidates in the small one")
    parser.add_argument("--requests", type=int, default=60, help="timed requests per row")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if args.requests < 50:
        parser.error("--requests must be at least 50")

    # Production settings (DEBUG off) minus HTTPS: the test client speaks plain HTTP.
    os.environ["LLMWIKI_SSL_REDIRECT"] = "0"
    os.environ["LLMWIKI_SECURE_COOKIES"] = "0"
    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    call_command("collectstatic", interactive=False, verbosity=0)
    if "testserver" not in settings.ALLOWED_HOSTS:
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]

    owner = get_user_model().objects.create_user(f"bench-maintainer-{time.time_ns():x}")
    with timer() as build:
        small, small_open, small_ev = build_project("small", args.small, owner, seed=3)
        big, big_open, big_ev = build_project("big", args.n, owner, seed=5)
    print(
        f"built {args.small:,} + {args.n:,} candidates ({small_ev:,} + {big_ev:,} evidence "
        f"rows, {len(big_open):,} open in the big project) in {build.seconds:.1f} s",
        flush=True,
    )
    client = Client()
    client.force_login(owner)
    rows_of = scenarios(small, small_open, big, big_open)
    header, rows, results = table(client, args, rows_of)
    print(text_table(header, rows))
    constant, notes = verdict(args, results, panel=rows_of[3][0])
    for line in notes:
        print(line)
    if not args.no_record:
        record_results(args, header, rows, notes)
    return 0 if constant else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
