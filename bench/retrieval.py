"""Retrieval latency at scale, side by side with SQLite FTS5 BM25 over the same texts.

A fresh project gets N synthetic episodes and M approved claims (realistic project-memory
text from `common.synthetic_texts`); the search index is rebuilt (timed). Then the same
queries (questions a teammate would ask, built from the corpus's hosts, services,
symptoms and settings) run through

- **retrieve()**: the whole service: fold check, claims then pages then episodes, rows
  loaded for citations (recall traces off, so the run does not grow the table), once
  every query has been asked (a running server's steady state: each backend holds the
  postings it decoded);
- **retrieve(), first pass**: the same queries the first time they are asked, after 20
  others: a query with a word no earlier one asked reads its postings then;
- **retrieve(), N open conflicts**: the same after N unresolved conflicts are added (two
  sides each, quoting corpus episodes; every fourth has a claim as a side), as a dreamed
  project holds hundreds;
- **index**: the backend's search alone, claims then episodes (what FTS5 is compared with);
- **index, no decoded postings**: the same, but the backend first forgets the postings it
  decoded and holds, so each query reads its terms from the index files or the database
  (a server's first queries after a restart or a merge);
- **FTS5**: SQLite FTS5 `bm25()` over the same episode and claim texts, claims then
  episodes, in an in-memory database built in the same run, asked the same words (stop
  words dropped, as Whoosh's analyzer drops them).

Targets (docs/ARCHITECTURE.md §8): p95 under 50 ms, within 3× of FTS5.

Run: ``python bench/retrieval.py [--episodes 100000] [--claims 10000] [--queries 300]
[--conflicts 600]``.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sqlite3
import statistics
import time

from common import (
    CAUSES_SHORT,
    HOSTS,
    PEOPLE,
    QUESTIONS,
    SERVICES,
    SETTINGS_,
    SYMPTOMS,
    TOPICS,
    db_label,
    fresh_project,
    md_table,
    record,
    setup_django,
    synthetic_episodes,
    synthetic_texts,
    text_table,
)
from whoosh.lang import stopwords_for_language

ASK = [
    "what caused {symptom} on {host}",
    "how do we fix {symptom} in {service}",
    "what is {setting} for {service}",
    "who decided about {topic}",
    "which version of {service} is deployed on {host}",
    "why does {service} {question}",
    "runbook for {cause}",
    "what did {person} change on {host}",
]


def queries(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out.append(
            rng.choice(ASK).format(
                symptom=rng.choice(SYMPTOMS),
                host=rng.choice(HOSTS),
                service=rng.choice(SERVICES),
                setting=rng.choice(SETTINGS_)[0],
                topic=rng.choice(TOPICS),
                question=rng.choice(QUESTIONS),
                cause=rng.choice(CAUSES_SHORT),
                person=rng.choice(PEOPLE),
            )
        )
    return out


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return statistics.median(ordered) * 1000, p95 * 1000


def timed(fn, items, cpu=None) -> list[float]:
    """Each item's wall time; with `cpu` (a `Cpu`), the CPU time the items took is kept."""
    out = []
    before = cpu.read() if cpu else None
    for item in items:
        start = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - start)
    if cpu:
        cpu.spent.append(
            tuple((b - a) / len(items) for a, b in zip(before, cpu.read(), strict=True))
        )
    return out


class Cpu:
    """CPU seconds this process and its database session spent (user + system): on a
    machine other work keeps busy, wall times move with the load and CPU time much less.
    The server's share is read from /proc, so only for a PostgreSQL server on this machine
    (`server` is False otherwise, and only this process counts)."""

    def __init__(self) -> None:
        from django.db import connection

        # Seconds per query (here, on the server) of each timed path, in order.
        self.spent: list[tuple[float, ...]] = []
        self.stat = None
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid(), host(inet_server_addr())")
                pid, addr = cursor.fetchone()
            path = f"/proc/{pid}/stat"
            if addr in (None, "127.0.0.1", "::1") and os.access(path, os.R_OK):
                self.stat = path
        self.server = self.stat is not None

    def read(self) -> tuple[float, float]:
        """(this process's CPU seconds, its database session's: 0 when not read)."""
        own = sum(os.times()[:2])
        if not self.stat:
            return own, 0.0
        with open(self.stat) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return own, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def seed_claims(project, texts: list[str], episode_ids: list[int]) -> None:
    from django.contrib.auth import get_user_model

    from llmwiki.models import Claim, Page

    reviewer = get_user_model().objects.create_user(f"bench-{project.slug}")
    page = Page.objects.create(project=project, key="SYSTEM_OVERVIEW", title="System overview")
    claims = Claim.objects.bulk_create(
        [Claim(project=project, page=page, text=t, reviewer=reviewer) for t in texts],
        batch_size=2000,
    )
    link = Claim.evidence.through
    link.objects.bulk_create(
        [
            link(claim_id=c.pk, episode_id=episode_ids[i % len(episode_ids)])
            for i, c in enumerate(claims)
        ],
        batch_size=5000,
    )


def seed_conflicts(project, n: int, seed: int = 5) -> None:
    """`n` open conflicts, each between two corpus episodes (every fourth between a claim and
    an episode), as a sweep detects them: sides quote their episodes' text."""
    from dreaming.models import Conflict, ConflictSide
    from llmwiki.models import Claim, Episode

    rng = random.Random(seed)
    episodes = list(
        Episode.objects.filter(project=project).order_by("?").values_list("id", "content")[: 2 * n]
    )
    claims = list(Claim.objects.filter(project=project).values_list("id", "text")[:n])
    conflicts = Conflict.objects.bulk_create(
        Conflict(project=project, subject=f"bench {i}", kind="value", dedupe_key=f"bench-{i}")
        for i in range(n)
    )
    sides, quoted = [], []
    for i, conflict in enumerate(conflicts):
        for position in range(2):
            episode_id, text = episodes[(2 * i + position) % len(episodes)]
            if position == 0 and i % 4 == 0 and claims:
                claim_id, claim_text = rng.choice(claims)
                sides.append(
                    ConflictSide(conflict=conflict, position=0, text=claim_text, claim_id=claim_id)
                )
                continue
            sides.append(ConflictSide(conflict=conflict, position=position, text=text))
            quoted.append((len(sides) - 1, episode_id))
    sides = ConflictSide.objects.bulk_create(sides)
    link = ConflictSide.evidence.through
    link.objects.bulk_create(
        link(conflictside_id=sides[i].pk, episode_id=episode_id) for i, episode_id in quoted
    )


STOP = stopwords_for_language("en")


def fts5(episodes: list[str], claims: list[str]):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE doc USING fts5(layer UNINDEXED, body, tokenize='porter')")
    db.executemany("INSERT INTO doc VALUES ('claim', ?)", ((t,) for t in claims))
    db.executemany("INSERT INTO doc VALUES ('episode', ?)", ((t,) for t in episodes))
    db.commit()

    def search(query: str) -> list:
        # The words the index's analyzer keeps: stop words match nearly every text, and
        # FTS5 would rank every one of those documents.
        words = [w for w in re.findall(r"[A-Za-z0-9]+", query) if w.lower() not in STOP]
        match = " OR ".join(f'"{w}"' for w in words)
        sql = "SELECT rowid FROM doc WHERE doc MATCH ? AND layer = ? ORDER BY bm25(doc) LIMIT 10"
        return (
            db.execute(sql, (match, "claim")).fetchall()
            + db.execute(sql, (match, "episode")).fetchall()
        )

    return search


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--claims", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--conflicts", type=int, default=600, help="open conflicts, then")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)

    setup_django()
    from llmwiki.models import Episode
    from llmwiki.search import Caller, bm25f, postings, retrieve
    from llmwiki.search.backends import backend
    from llmwiki.search.documents import CLAIM, EPISODE
    from llmwiki.search.index import index_rebuild

    project = fresh_project("retrieval")
    Episode.objects.bulk_create(synthetic_episodes(project, args.episodes), batch_size=2000)
    episode_ids = list(Episode.objects.filter(project=project).values_list("id", flat=True))
    claim_texts = synthetic_texts(args.claims, seed=11)
    seed_claims(project, claim_texts, episode_ids)
    using = backend()
    start = time.perf_counter()
    written = index_rebuild(project, using)
    build = time.perf_counter() - start
    episode_texts = list(
        Episode.objects.filter(project=project).order_by("id").values_list("content", flat=True)
    )
    start = time.perf_counter()
    fts_search = fts5(episode_texts, claim_texts)
    fts_build = time.perf_counter() - start

    asked = queries(args.queries)
    caller = Caller.operator("bench")

    def service(q):
        return retrieve(project, q, caller=caller, limit=10, record=False)

    def index_only(q):
        using.search(project.pk, CLAIM, q, sensitive=True, limit=10)
        using.search(project.pk, EPISODE, q, sensitive=True, limit=10)

    def index_cold(q):
        # Both backends keep the postings they decoded; here every query reads its terms
        # afresh.
        if using.name == "whoosh":
            bm25f._cache.drop_postings()
        else:
            postings.held.forget()
        index_only(q)

    for q in asked[:20]:  # warm caches, as a running server would be
        service(q)
        fts_search(q)
    hits = sum(len(service(q).hits) for q in asked[:50])
    cpu = Cpu()
    results = {
        # Words met for the first time are read from the index or the database; later
        # passes are a running server's steady state.
        "retrieve(), first pass": timed(service, asked, cpu),
        "retrieve()": timed(service, asked, cpu),
        f"{using.name} index": timed(index_only, asked, cpu),
        f"{using.name} index, no decoded postings": timed(index_cold, asked, cpu),
        "SQLite FTS5 bm25": timed(fts_search, asked, cpu),
    }
    if args.conflicts:
        seed_conflicts(project, args.conflicts)
        for q in asked[:20]:
            service(q)
        disputed = sum(h.kind == "conflict" for q in asked[:50] for h in service(q).hits)
        results[f"retrieve(), {args.conflicts} open conflicts"] = timed(service, asked, cpu)
    _fts_p50, fts_p95 = percentiles(results["SQLite FTS5 bm25"])
    rows = []
    for (name, samples), (here, server) in zip(results.items(), cpu.spent, strict=True):
        p50, p95 = percentiles(samples)
        spent = f"{here * 1000:.1f}" + (f" + {server * 1000:.1f}" if cpu.server else "")
        rows.append([name, f"{p50:.1f}", f"{p95:.1f}", f"{p95 / fts_p95:.2f}×", spent])
    header = ["path", "p50 ms", "p95 ms", "p95 / FTS5", "CPU ms/query"]
    print(text_table(header, rows))
    notes = [
        f"- {args.episodes:,} episodes and {args.claims:,} approved claims, {args.queries} "
        f"queries, {db_label()}, backend {using.name}. Index rebuild: {written:,} documents "
        f"in {build:.1f} s ({written / build:,.0f}/s); FTS5 build {fts_build:.1f} s.",
        f"- Hits per query (first 50, limit 10): {hits / 50:.1f}. Each path asks claims then "
        "episodes, 10 each; retrieve() also loads the rows and citations it returns.",
        "- Targets (docs/ARCHITECTURE.md §8): p95 under 50 ms, within 3× of FTS5.",
        "- CPU ms/query: user + system time of this process"
        + (" + of its PostgreSQL session" if cpu.server else "")
        + f", mean per query; load average {os.getloadavg()[0]:.1f} at the end of the run.",
    ]
    if args.conflicts:
        notes.append(
            f"- With {args.conflicts:,} open conflicts: {disputed / 50:.1f} conflict hits per "
            "query (first 50)."
        )
    print("\n".join(notes))
    if not args.no_record:
        record("Retrieval latency (bench/retrieval.py)", [*md_table(header, rows), "", *notes])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
