"""Benchmark the dream-sweep engine against the floor of tokenising the same text.

Usage::

    .venv/bin/python bench/dream_engine.py --n 10000 100000

Each size runs in a fresh child process (so peak memory is that size's own), which
generates N synthetic but realistic episodes — a world of hosts, services, versions,
people and decisions, facts restated in several wordings, deploy events, chatter,
lifecycle markers, ~20 % near-duplicates, 30 days — then measures, side by side:

* the floor: joining all texts and tokenising them with the engine's tokenizer;
* ``run_sweep`` end to end, with its per-phase timings;
* peak resident memory of the child.

Targets (DESIGN §13): 100k episodes well under 60 s for the whole service (the engine
aims at ≤ ~20 s), 10× episodes → ≤ 11× time, < 1 GiB, within 30× of the floor.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dreaming.engine import Ep, Policy, RecallStats, run_sweep
from dreaming.engine.text import clear_token_memo, tokenize

HOSTS = [
    *(f"db-staging-{i}" for i in (1, 2)),
    *(f"db-prod-{i}" for i in (1, 2, 3)),
    *(f"tw-app-{i}" for i in range(1, 9)),
    *(f"cache-{i}" for i in range(1, 4)),
    *(f"mq-{i}" for i in (1, 2)),
    *(f"edge-{i}" for i in range(1, 5)),
    *(f"ci-runner-{i}" for i in range(1, 4)),
    "search-1",
    "batch-7",
]
SERVICES = [
    "worker",
    "billing-export",
    "shipment-events",
    "auth-api",
    "search-indexer",
    "notifier",
    "ledger",
    "report-builder",
    "uploader",
    "gateway",
    "scheduler",
    "invoice-sync",
    "audit-trail",
    "geo-lookup",
    "media-resizer",
]
PEOPLE = ["Alice", "Bob", "Carol", "Dan", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy"]
TECH = ["RabbitMQ", "Redis Streams", "Kafka", "Celery", "Caddy", "nginx", "Terraform", "Vault"]
THINGS = ["event queue", "job runner", "cache layer", "edge proxy", "secret store", "scheduler"]
ENVS = ["staging", "production"]
TASKS = ["migration", "cleanup", "upgrade", "cutover", "backfill", "rotation"]

FACT_FAMILIES = [
    (
        "{svc} runs on {host}.",
        "{host} hosts the {svc} service.",
        "The {svc} service lives on {host}.",
        "Reminder: {svc} is deployed on {host}.",
    ),
    (
        "The {env} database runs PostgreSQL {pg} on {host}.",
        "{env} DB is Postgres {pg} (host {host})",
        "{host} is our {env} database, PostgreSQL {pg}.",
        "The {env} Postgres (v{pg}) lives on {host}.",
    ),
    ("{person} owns {svc}.", "{svc} is owned by {person}.", "owner: {person} for {svc}"),
    (
        "Decision: use {tech} for the {svc} {thing}.",
        "We decided to use {tech} for the {svc} {thing}.",
        "The {svc} {thing} uses {tech}, as decided.",
    ),
    (
        "To restart {svc}, run `systemctl restart {svc}` on {host}.",
        "Runbook: drain {host} before upgrading {svc}.",
        "If {svc} hangs, restart it on {host} and check the queue depth.",
    ),
    (
        "Only {person} may approve production deploys of {svc}.",
        "Production deploys of {svc} must be approved by {person}.",
    ),
    ("{svc} listens on port {port}.", "The {svc} port is {port}.", "{svc} serves on :{port}"),
]
EVENTS = [
    "Deployed {svc} {ver} to {host} after {person} approved the change.",
    "{svc} p95 latency hit {n} ms on {host} during the afternoon spike.",
    "Restarted {svc} on {host}; queue depth back to {n}.",
    "Rolled {svc} back to {ver} on {host} because of a memory leak.",
    "CI run {n} for {svc} failed on {host} with a flaky integration test.",
    "Bumped {svc} to {ver}; {person} is watching the error rate.",
]
CHATTER = [
    "lunch anyone?",
    "thanks {person}!",
    "standup moved to the big room today",
    "looking into the flaky test in {svc} this morning, will report back",
    "coffee machine on floor 3 is broken again",
    "{person} is out until Monday, ping {person2} instead",
    "great demo today, well done everyone",
]
MARKERS = [
    "TODO: {task} for {svc} on {host}",
    "Closed: {svc} {task} finished.",
    "waiting on {person} for the {svc} {task} review",
    "Reopened: {svc} {task} needs another pass.",
    "[x] {svc} {task}",
]
PREFIXES = ["", "", "09:14 ", "- ", "11:02 - ", "* ", "16:45 "]


def make_world(rng: random.Random, n_facts: int) -> list[str]:
    """Return fact identities: (family index, slot values) rendered as a format dict key."""
    facts = []
    for _ in range(n_facts):
        fam = rng.randrange(len(FACT_FAMILIES))
        slots = {
            "svc": rng.choice(SERVICES),
            "host": rng.choice(HOSTS),
            "env": rng.choice(ENVS),
            "pg": rng.choice([14, 15, 16]),
            "person": rng.choice(PEOPLE),
            "tech": rng.choice(TECH),
            "thing": rng.choice(THINGS),
            "port": rng.choice([5432, 6379, 8000, 8080, 8443, 9000, 9092]),
        }
        facts.append((fam, slots))
    return facts


def slots(rng: random.Random) -> dict[str, object]:
    p1, p2 = rng.sample(PEOPLE, 2)
    return {
        "svc": rng.choice(SERVICES),
        "host": rng.choice(HOSTS),
        "person": p1,
        "person2": p2,
        "ver": f"v{rng.randint(1, 3)}.{rng.randint(0, 9)}",
        "n": rng.randint(2, 2000),
        "task": rng.choice(TASKS),
    }


def generate(n: int, seed: int = 7) -> tuple[list[Ep], dict[int, RecallStats], datetime]:
    """Generate ``n`` episodes (~300 chars each) over 30 days, plus recall stats."""
    rng = random.Random(seed)
    facts = make_world(rng, 400 + n // 100)
    weights = [1.0 / (r + 1) ** 0.8 for r in range(len(facts))]  # Zipf-ish popularity
    start = datetime(2026, 3, 1, tzinfo=UTC)
    eps: list[Ep] = []
    recall: dict[int, RecallStats] = {}
    for i in range(1, n + 1):
        when = start + timedelta(days=rng.randrange(30), seconds=rng.randrange(8 * 3600, 20 * 3600))
        if eps and rng.random() < 0.2:
            src = rng.choice(eps[-500:])
            text = src.content
            edit = rng.random()
            if edit < 0.4:
                text = text + " again"
            elif edit < 0.7:
                text = "10:05 " + text.split(" ", 1)[-1] if text[:1].isdigit() else "- " + text
            else:
                text = text.rsplit(" ", 1)[0]
        else:
            parts: list[str] = []
            while sum(len(p) for p in parts) < 240:
                roll = rng.random()
                s = slots(rng)
                if roll < 0.45:
                    fam, fs = rng.choices(facts, weights)[0]
                    parts.append(rng.choice(FACT_FAMILIES[fam]).format(**fs))
                elif roll < 0.75:
                    parts.append(rng.choice(EVENTS).format(**s))
                elif roll < 0.9:
                    parts.append(rng.choice(CHATTER).format(**s))
                else:
                    parts.append(rng.choice(MARKERS).format(**s))
            if rng.random() < 0.5:
                text = "\n".join(rng.choice(PREFIXES) + p for p in parts)
            else:
                # prose: sentences end with punctuation, as people write them
                text = " ".join(p if p[-1] in ".!?" else p + "." for p in parts)
        kind = rng.choice(["note", "log_entry", "chat_turn", "log_entry", "decision", "event"])
        eps.append(
            Ep(
                id=i,
                occurred_at=when,
                content=text,
                kind=kind,
                memory_type="episodic",
                actor=rng.choice(["alice", "agent:ops", "agent:ci"]),
                source_id=rng.randrange(1, 60),
                source_trust=rng.choice([0.5, 0.6, 0.6, 0.8, 1.0]),
            )
        )
        if rng.random() < 0.1:
            recall[i] = RecallStats(
                hits=rng.randint(1, 8),
                distinct_queries=rng.randint(1, 4),
                distinct_days=rng.randint(1, 4),
                mean_score=rng.uniform(0.3, 0.9),
            )
    return eps, recall, start + timedelta(days=30)


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(n: int) -> dict[str, object]:
    """Generate, then time the floor and the sweep for one size (runs in a child)."""
    eps, recall, now = generate(n)
    texts = [e.content for e in eps]
    base_rss = _rss_mib()
    clear_token_memo()
    t = time.perf_counter()
    tokens = tokenize("\n".join(texts))
    floor = time.perf_counter() - t
    del tokens
    clear_token_memo()
    t = time.perf_counter()
    cpu = time.process_time()
    result = run_sweep(eps, recall=recall, policy=Policy(), now=now)
    total = time.perf_counter() - t
    cpu = time.process_time() - cpu
    return {
        "n": n,
        "chars": sum(len(x) for x in texts),
        "floor_s": floor,
        "sweep_s": total,
        "cpu_s": cpu,
        "phases": result.timings,
        "peak_rss_mib": _rss_mib(),
        "rss_before_sweep_mib": base_rss,
        "counts": {
            k: result.counts[k]
            for k in (
                "duplicates_folded",
                "sentences",
                "subjects",
                "clusters",
                "proposed",
                "deferred",
                "conflicts",
                "stays_episodic",
            )
        },
        "themes": len(result.themes),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    rows = []
    for n in args.n:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n)],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    head = ("episodes", "MiB text", "floor s", "sweep s", "cpu s", "×floor", "peak MiB", "data MiB")
    print(" ".join(f"{h:>9}" for h in head))
    for r in rows:
        print(
            f"{r['n']:>9} {r['chars'] / 2**20:>9.1f} {r['floor_s']:>9.2f} {r['sweep_s']:>9.2f} "
            f"{r['cpu_s']:>9.2f} {r['sweep_s'] / r['floor_s']:>9.1f} "
            f"{r['peak_rss_mib']:>9.0f} {r['rss_before_sweep_mib']:>9.0f}"
        )
    phases = sorted({p for r in rows for p in r["phases"]}, key=lambda p: rows[-1]["phases"][p])
    print("\nper phase (s):")
    print(f"{'phase':>18} " + " ".join(f"{r['n']:>9}" for r in rows))
    for p in reversed(phases):
        print(f"{p:>18} " + " ".join(f"{r['phases'].get(p, 0):>9.2f}" for r in rows))
    print("\ncounts:")
    for k in rows[-1]["counts"]:
        print(f"{k:>18} " + " ".join(f"{r['counts'][k]:>9}" for r in rows))
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        size = b["n"] / a["n"]
        print(
            f"\n{a['n']}→{b['n']} ({size:g}× episodes): sweep time ×"
            f"{b['sweep_s'] / a['sweep_s']:.2f}, floor time ×{b['floor_s'] / a['floor_s']:.2f}"
        )
    # The design targets (§13), checked on the largest size measured.
    big = rows[-1]
    print(
        f"targets at {big['n']}: sweep {big['sweep_s']:.1f} s (engine aim ≤ 20 s, service"
        f" < 60 s), ×{big['sweep_s'] / big['floor_s']:.1f} floor (≤ 30), peak"
        f" {big['peak_rss_mib']:.0f} MiB (< 1024)"
    )
    print(f"python {sys.version.split()[0]}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")


if __name__ == "__main__":
    main()
