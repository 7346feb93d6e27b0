"""Shared helpers for the benchmark scripts in ``bench/``.

Benchmarks print ratios measured side by side in one run and append them, with the machine
and date, to ``bench/RESULTS.md`` (see ``record``). They never touch the developer's ``var/``:
``setup_django`` points ``LLMWIKI_DATA_DIR`` at a fresh temporary directory first.

The synthetic corpus (``synthetic_texts``, ``synthetic_episodes``) is deterministic for a
given seed so later benchmarks (ingest, dreaming, retrieval, review) measure the same data.
"""

from __future__ import annotations

import atexit
import datetime as dt
import hashlib
import math
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmwiki.models import Episode, Project

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "RESULTS.md"

_data_dir: Path | None = None


# --- Django ---------------------------------------------------------------------------------


def setup_django(data_dir: Path | None = None) -> Path:
    """Configure Django on a throwaway data directory, migrate quietly, return the directory.

    Without ``data_dir`` a fresh temporary directory is used and removed at exit. If
    ``DATABASE_URL`` is set, that database is used as given (migrated, and benchmarks write
    fresh projects into it), so point it at a throwaway database. Calling this again in the
    same process returns the first directory: Django can only be set up once per process.
    """
    global _data_dir
    if _data_dir is not None:
        return _data_dir
    if data_dir is None:
        data_dir = Path(tempfile.mkdtemp(prefix="llmwiki-bench-"))
        atexit.register(_remove_data_dir, data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.environ["LLMWIKI_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "llmwiki.settings"
    # Debug mode keeps every executed query in memory, which would distort time and RSS.
    os.environ["LLMWIKI_DEBUG"] = "0"
    if str(REPO_DIR) not in sys.path:
        sys.path.insert(0, str(REPO_DIR))

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    _data_dir = data_dir
    return data_dir


def _remove_data_dir(path: Path) -> None:
    from django.db import connections

    connections.close_all()
    shutil.rmtree(path, ignore_errors=True)


def db_label() -> str:
    """The database Django is configured with, e.g. ``sqlite 3.40.1`` or ``postgresql 16.4``."""
    from django.db import connection

    if connection.vendor == "sqlite":
        return f"sqlite {sqlite3.sqlite_version}"
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    return f"{connection.vendor} {version}"


def fresh_project(prefix: str = "bench") -> Project:
    """A new project with a unique slug, so repeated runs in one database never collide."""
    from llmwiki.models import Project

    slug = f"{prefix}-{time.time_ns():x}"
    return Project.objects.create(slug=slug, name=f"Benchmark {slug}")


# --- Measurement ----------------------------------------------------------------------------


@dataclass
class Timing:
    """Filled in when the ``timer()`` block exits."""

    seconds: float = 0.0


@contextmanager
def timer() -> Iterator[Timing]:
    """``with timer() as t: ...`` then ``t.seconds`` (wall clock, perf_counter)."""
    timing = Timing()
    start = time.perf_counter()
    try:
        yield timing
    finally:
        timing.seconds = time.perf_counter() - start


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine_info() -> str:
    """One line: CPU model, cores, RAM, Python, Django and database versions."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram = f", {int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    try:
        import django

        django_version = django.get_version()
    except ImportError:
        django_version = "absent"
    return (
        f"{cpu}, {os.cpu_count()} cores{ram}, Python {platform.python_version()}, "
        f"Django {django_version}, {_database()}"
    )


def _database() -> str:
    """The database the run used when Django is set up (a PostgreSQL run said "SQLite")."""
    from django.apps import apps

    if apps.ready:
        return db_label().replace("sqlite", "SQLite", 1).replace("postgresql", "PostgreSQL")
    return f"SQLite {sqlite3.sqlite_version}"


def record(title: str, lines: list[str], path: Path = RESULTS_PATH) -> None:
    """Append ``## <title> — <date> — <machine>`` and ``lines`` (markdown) to RESULTS.md."""
    if not path.exists():
        path.write_text(
            "# Benchmark results\n\n"
            "Appended by the scripts in `bench/` (`python bench/run.py`). Each section is one "
            "run; ratios compare measurements taken side by side in that run, so they carry "
            "over between machines better than the absolute numbers.\n"
        )
    today = dt.date.today().isoformat()
    body = "\n".join(lines).rstrip("\n")
    with path.open("a") as fh:
        fh.write(f"\n## {title} — {today} — {machine_info()}\n\n{body}\n")


def md_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A markdown table as lines, ready for ``record``."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return out


def text_table(header: list[str], rows: list[list[Any]]) -> str:
    """The same table aligned for the terminal."""
    cells = [header, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --- Synthetic corpus -----------------------------------------------------------------------
#
# Project memory of a small web product over a month: hosts, services, versions, people and
# agents; decisions, incidents, deployments, runbook steps, config facts, chat and tool
# output. A fifth of the items restate an earlier fact in other words (what dedupe must
# catch) and most items belong to a handful of themes that recur across days (what
# clustering and the recurrence signal must find).

HOSTS = [
    *(f"tw-app-{i}" for i in range(1, 5)),
    *(f"tw-worker-{i}" for i in range(1, 4)),
    "db-staging-1",
    "db-staging-2",
    "db-prod-1",
    "db-prod-2",
    "cache-1",
    "lb-edge-1",
    *(f"ci-runner-{i}" for i in range(1, 4)),
    "search-1",
    "mq-1",
]
SERVICES = [
    "billing-api",
    "auth-service",
    "search-indexer",
    "ingest-worker",
    "notification-hub",
    "report-builder",
    "gateway",
    "scheduler",
    "export-service",
    "web-frontend",
]
TECH = [
    "PostgreSQL 16",
    "Redis 7",
    "nginx",
    "Django 5.2",
    "Celery",
    "RabbitMQ",
    "Elasticsearch 8",
    "gunicorn",
    "systemd",
    "Terraform",
    "Ansible",
    "Grafana",
]
PEOPLE = ["alice", "bob", "chen", "dana", "emeka", "farah", "goran", "hana", "ivan", "julia"]
AGENTS = ["agent:claude", "agent:codex", "agent:ci-bot", "agent:oncall-helper"]
SETTINGS_ = [
    ("max_connections", ["100", "200", "400"]),
    ("worker_concurrency", ["4", "8", "16"]),
    ("statement_timeout", ["5s", "30s", "60s"]),
    ("cache_ttl", ["60", "300", "900"]),
    ("pool_size", ["10", "20", "40"]),
    ("retry_limit", ["3", "5", "10"]),
    ("log_level", ["INFO", "WARNING", "DEBUG"]),
    ("rate_limit", ["100/min", "500/min", "1000/min"]),
]
SYMPTOMS = [
    "p95 latency above 2 s",
    "connection pool exhausted",
    "disk usage at 93%",
    "OOM kills of the worker",
    "TLS certificate expiring in 5 days",
    "replication lag of 40 s",
    "queue depth above 50k messages",
    "5xx rate at 4%",
    "stuck migrations lock",
    "cron job not firing",
]
CAUSES = [
    "a missing index on the events table",
    "an unbounded retry loop",
    "log rotation not configured",
    "a memory leak in the PDF renderer",
    "the certbot timer being disabled",
    "a long-running analytics query",
    "a consumer crash loop after the last deploy",
    "a misconfigured health check",
    "two deploys racing on the same host",
    "the clock drifting on the VM",
]
FIXES = [
    "added the index concurrently",
    "capped retries at 5 with backoff",
    "enabled logrotate with 7 days of history",
    "pinned the renderer to the previous version",
    "re-enabled the certbot timer and renewed",
    "moved the analytics query to the replica",
    "rolled back and fixed the consumer config",
    "pointed the health check at /healthz",
    "serialised deploys through the CI lock",
    "enabled chrony on all VMs",
]
TOPICS = [
    "backups",
    "on-call rotation",
    "release cadence",
    "staging refresh",
    "secret rotation",
    "cost review",
    "schema migrations",
    "observability",
    "access reviews",
    "load testing",
]
CHOICES = [
    ("use {tech} for {topic}", "the team already runs it and it covers our scale"),
    ("freeze deploys on Fridays after 15:00", "two incidents last month started on Fridays"),
    ("keep {service} on a single region", "cross-region latency is not worth it yet"),
    ("store {topic} runbooks in the wiki", "people could not find them during incidents"),
    ("move {service} behind the gateway", "it centralises auth and rate limiting"),
    ("require review for {topic} changes", "a bad change took down {host} last week"),
    ("retire {host}", "its workload fits on the remaining hosts"),
    ("upgrade {tech} before the end of the quarter", "the current version leaves support"),
]

# Every fact type has several phrasings of the same slots; a near-duplicate re-renders an
# earlier fact with a different phrasing, which is what a real team writes twice.
TEMPLATES: dict[str, list[str]] = {
    "decision": [
        "Decision: we {choice}. Reason: {reason}. Agreed by {person} and {person2}.",
        "We decided to {choice} because {reason}. {person} signed off, {person2} agreed.",
        "{person} and {person2} agreed we will {choice}; the reason is that {reason}.",
        "DECISION ({person}): {choice}. Why: {reason}. Reviewed with {person2}.",
    ],
    "incident": [
        "Incident on {host}: {symptom} in {service}. Root cause was {cause}. "
        "{person} {fix}. Ticket {ticket}.",
        "{service} on {host} showed {symptom}. Cause: {cause}. Fix: {person} {fix} ({ticket}).",
        "{ticket}: {symptom} on {host} ({service}). We traced it to {cause}; {person} {fix}.",
        "Postmortem {ticket}: {host} had {symptom}, caused by {cause}. Remediation: {fix}.",
    ],
    "deploy": [
        "Deployed {service} {version} to {host}. Migration {migration} ran in {seconds} s.",
        "{service} {version} is live on {host}; migration {migration} took {seconds} s.",
        "Rolled out {version} of {service} on {host} (migration {migration}, {seconds} s).",
    ],
    "runbook": [
        "Runbook for {symptom} on {service}: 1) check {host} with `systemctl status "
        "{service}`; 2) look at the Grafana board; 3) if {cause_short}, {fix}.",
        "To handle {symptom} in {service}: ssh to {host}, run `journalctl -u {service} "
        "-n 200`, and when it is {cause_short} the fix is: {fix}.",
        "Steps when {service} shows {symptom}: inspect {host}, confirm {cause_short}, then "
        "{fix}. Escalate to {person} if it persists.",
    ],
    "config": [
        "{service} runs with {setting}={value} on {host}.",
        "Config: {setting} for {service} is {value} (host {host}).",
        "On {host}, {service} has {setting} set to {value}.",
        "The {setting} of {service} on {host} is {value}.",
    ],
    "chat": [
        "{person}: does anyone know why {service} on {host} {question}?",
        "{person} asked in #ops whether {service} on {host} {question}.",
        "Q from {person}: {service} ({host}) {question}; nobody has answered yet.",
    ],
    "tool": [
        "$ curl -s https://{host}/healthz -> 200 OK in {ms} ms; {service} {version} "
        "reports {setting}={value}.",
        "$ psql -h {host} -c 'select count(*) from events' -> {count} rows ({ms} ms).",
        "$ kubectl get pods -l app={service} -> {count} running, 0 pending, "
        "image {service}:{version}.",
    ],
}
QUESTIONS = [
    "restarts every night at 03:00",
    "needs its own Redis database",
    "still uses the old API key",
    "is pinned to an old version",
    "logs at DEBUG level in production",
    "has no alert on disk usage",
]
FILLERS = [
    "Follow-up owner: {person}.",
    "See {ticket} for the discussion.",
    "This also affects {service2}.",
    "Dashboard: https://grafana.internal/d/{service}.",
    "We should revisit this at the {topic} sync.",
    "{person2} will double-check on {host2} tomorrow.",
    "Related to the {topic} work from last week.",
    "No customer impact was reported.",
    "Monitoring shows the change held for 24 hours.",
    "Noted in the handoff for the next shift.",
    "Context: this came up while working on {topic} with {person2}.",
    "The staging environment behaves the same way.",
    "{person} thinks the real problem is upstream in {service2}, but nobody has checked yet.",
    "Last time this happened it took about two hours to notice because the alert went to the "
    "old channel.",
    "Until this is settled, do not change {setting} on {host2} without telling {person2}.",
    "The numbers above were taken from the {topic} dashboard, not from the raw logs.",
    "{person2} pointed out that the same pattern shows up in {service2} on {host2}.",
    "If this recurs, page {person} first; {person2} is the backup for {service}.",
]
# Filler sentences per item: 0..6, most often 2–4 (weights as a lookup table for speed).
_EXTRA_TABLE = [c for c, w in enumerate([6, 12, 20, 22, 18, 12, 10]) for _ in range(w)]
_STRIDES = [s for s in range(1, len(FILLERS)) if math.gcd(s, len(FILLERS)) == 1]
CAUSES_SHORT = [re.sub(r"^(?:a|an|the) ", "", cause) for cause in CAUSES]
FACT_TYPES = list(TEMPLATES)
# Rough mix of what a team's logs contain; decisions and runbooks are rarer than chatter.
FACT_WEIGHTS = [8, 14, 16, 8, 16, 20, 18]


@dataclass
class SyntheticItem:
    """One generated memory item, before it becomes an ``Episode``.

    ``theme`` (-1 for background noise) and ``duplicate_of`` (index of the restated item)
    are ground truth for clustering and dedupe benchmarks.
    """

    day: int
    fact_type: str
    actor: str
    text: str
    theme: int
    duplicate_of: int | None = None
    slots: dict[str, str] = field(default_factory=dict, repr=False)


def _pick(r: Any, seq: Any) -> Any:
    # rng.choice/randint cost ~1 µs each through _randbelow; indexing by random() is ~5×
    # cheaper and a 100k corpus draws millions of these.
    return seq[int(r() * len(seq))]


def _int(r: Any, lo: int, hi: int) -> int:
    return lo + int(r() * (hi - lo + 1))


def _slots(r: Any, theme: dict[str, str]) -> dict[str, str]:
    """Slot values for one fact: the theme's host/service/topic, the rest drawn fresh."""
    idx = int(r() * len(SYMPTOMS))
    setting, values = _pick(r, SETTINGS_)
    choice, reason = _pick(r, CHOICES)
    person = int(r() * len(PEOPLE))
    # A different second person: offset by 1..len-1 around the ring.
    person2 = (person + 1 + int(r() * (len(PEOPLE) - 1))) % len(PEOPLE)
    slots = {
        "host": theme["host"],
        "host2": _pick(r, HOSTS),
        "service": theme["service"],
        "service2": _pick(r, SERVICES),
        "topic": theme["topic"],
        "tech": _pick(r, TECH),
        "person": PEOPLE[person],
        "person2": PEOPLE[person2],
        "symptom": SYMPTOMS[idx],
        # Symptom, cause and fix go together, as they do in a real incident.
        "cause": CAUSES[idx],
        "cause_short": CAUSES_SHORT[idx],
        "fix": FIXES[idx],
        "ticket": f"OPS-{_int(r, 1000, 4999)}",
        "version": f"{_int(r, 1, 4)}.{_int(r, 0, 30)}.{_int(r, 0, 12)}",
        "migration": f"{_int(r, 1, 240):04d}_{_pick(r, ('add', 'alter', 'drop'))}_"
        f"{_pick(r, ('index', 'column', 'table'))}",
        "seconds": str(_int(r, 1, 900)),
        "setting": setting,
        "value": _pick(r, values),
        "question": _pick(r, QUESTIONS),
        "ms": str(_int(r, 3, 2500)),
        "count": str(_int(r, 1, 5_000_000)),
    }
    slots["choice"] = choice.format(**slots)
    slots["reason"] = reason.format(**slots)
    return slots


def _render(r: Any, fact_type: str, slots: dict[str, str]) -> str:
    """One phrasing of the fact plus filler sentences (gives the ~100–600 char spread)."""
    parts = [_pick(r, TEMPLATES[fact_type]).format(**slots)]
    size = len(parts[0])
    extra = _EXTRA_TABLE[int(r() * len(_EXTRA_TABLE))]
    # Walk the fillers from a random start with a random stride coprime to their count:
    # distinct sentences in a varied order without shuffling the whole list each time.
    k = len(FILLERS)
    pos, step = int(r() * k), _STRIDES[int(r() * len(_STRIDES))]
    for _ in range(k):
        # Short facts get padded to ~100 chars: one-line memories are rarely useful context.
        if extra <= 0 and size >= 100:
            break
        parts.append(FILLERS[pos].format(**slots))
        size += len(parts[-1]) + 1
        extra -= 1
        pos = (pos + step) % k
    return " ".join(parts)


def synthetic_items(n: int, seed: int = 0, days: int = 30) -> list[SyntheticItem]:
    """``n`` items in day order (0..days-1) with ~20% near-duplicates and recurring themes."""
    rng = random.Random(seed)
    # About one theme per 200 items (at least 8): each recurs over a window of days.
    themes = []
    for _ in range(max(8, n // 200)):
        start = rng.randrange(days)
        themes.append(
            {
                "host": rng.choice(HOSTS),
                "service": rng.choice(SERVICES),
                "topic": rng.choice(TOPICS),
                "start": start,
                "end": min(days - 1, start + rng.randint(2, days)),
            }
        )
    active_on = [
        [t for t, th in enumerate(themes) if th["start"] <= day <= th["end"]] for day in range(days)
    ]
    r = rng.random
    actors = [*PEOPLE, *AGENTS]
    fact_table = [f for f, w in zip(FACT_TYPES, FACT_WEIGHTS, strict=True) for _ in range(w)]
    day_of = sorted(int(r() * days) for _ in range(n))
    items: list[SyntheticItem] = []
    for day in day_of:
        if items and r() < 0.2:
            # Near-duplicate: restate a recent fact, biased to the last few hundred items.
            j = max(0, len(items) - 1 - int(rng.expovariate(1 / 150)))
            orig = items[j]
            text = _render(r, orig.fact_type, orig.slots)
            if text == orig.text:
                text = text + " (restated)"
            items.append(
                SyntheticItem(
                    day, orig.fact_type, _pick(r, actors), text, orig.theme, j, orig.slots
                )
            )
            continue
        active = active_on[day]
        # 70% of items belong to a theme active that day; the rest are background noise.
        if active and r() < 0.7:
            theme_id = _pick(r, active)
            theme = themes[theme_id]
        else:
            # Background noise (theme -1): a theme's topic on a random host and service.
            theme_id = -1
            theme = {**_pick(r, themes), "host": _pick(r, HOSTS), "service": _pick(r, SERVICES)}
        fact_type = _pick(r, fact_table)
        slots = _slots(r, theme)
        # Tool output comes from agents and a chat question from the person asking.
        if fact_type == "tool":
            actor = _pick(r, AGENTS)
        elif fact_type == "chat":
            actor = slots["person"]
        else:
            actor = _pick(r, actors)
        text = _render(r, fact_type, slots)
        items.append(SyntheticItem(day, fact_type, actor, text, theme_id, slots=slots))
    return items


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` short project-memory texts (~100–600 chars, ~300 average), deterministic."""
    return [item.text for item in synthetic_items(n, seed)]


# How each fact type lands in the episode log.
_EPISODE_SHAPE: dict[str, tuple[str, str, str]] = {
    # fact type: (kind, memory_type, locator style)
    "decision": ("decision", "semantic-candidate", "doc"),
    "incident": ("event", "episodic", "log"),
    "deploy": ("log_entry", "episodic", "log"),
    "runbook": ("note", "procedural-candidate", "doc"),
    "config": ("note", "semantic-candidate", "doc"),
    "chat": ("chat_turn", "working", "chat"),
    "tool": ("tool_call", "episodic", "log"),
}


def synthetic_episodes(
    project: Project,
    n: int,
    seed: int = 0,
    days: int = 30,
    end: dt.datetime | None = None,
) -> list[Episode]:
    """``n`` unsaved ``Episode`` rows for ``project`` spread over ``days`` days up to ``end``.

    ``end`` defaults to today's UTC midnight, so the corpus is the same all day and recency
    signals see a realistic last month. ``content_hash`` is the sha256 of ``content``.
    """
    from llmwiki.models import Episode

    if end is None:
        end = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    start = end - dt.timedelta(days=days)
    r = random.Random(seed + 1).random
    episodes = []
    line = 1
    for i, item in enumerate(synthetic_items(n, seed, days)):
        kind, memory_type, style = _EPISODE_SHAPE[item.fact_type]
        occurred = start + dt.timedelta(days=item.day, seconds=int(r() * 86_400))
        date = occurred.date().isoformat()
        if style == "chat":
            locator: dict[str, Any] = {"path": f"chat/{date}.jsonl", "turn_id": f"t{i}"}
        elif style == "log":
            locator = {"path": f"logs/{item.actor.split(':')[-1]}/{date}.md", "lines": [line, line]}
        else:
            locator = {"path": f"notes/{date}.md", "lines": [line, line + 3], "section": kind}
        line = line % 500 + 4
        episodes.append(
            Episode(
                project=project,
                occurred_at=occurred,
                recorded_at=occurred + dt.timedelta(minutes=_int(r, 1, 120)),
                actor=item.actor,
                kind=kind,
                content=item.text,
                locator=locator,
                memory_type=memory_type,
                memory_type_reason=f"synthetic {item.fact_type}",
                tags=[item.fact_type],
                content_hash=hashlib.sha256(item.text.encode("utf-8")).hexdigest(),
            )
        )
    return episodes
