"""Episode bulk insert: Django ORM against the raw sqlite3 floor, side by side in one run.

For each N (10k and 100k by default) the same synthetic episodes are written three ways:

- **ORM**: ``Episode.objects.bulk_create(batch_size=2000)`` in one transaction, on a fresh
  project in the app's configured database (a throwaway SQLite under a temp dir, or
  ``DATABASE_URL`` if set);
- **floor**: raw ``sqlite3`` ``executemany`` of the same rows' column values, pre-converted
  outside the timer, into a plain table with the same column types (no CHECKs, foreign keys
  or secondary indexes), in a separate WAL file database with the app's pragmas;
- **twin**: the same, into a table with Django's exact SQLite DDL for ``Episode`` (JSON
  CHECKs, AUTOINCREMENT, all seven indexes; foreign keys not enforced), which splits the
  ORM/floor gap into "what the schema costs" and "what the ORM costs".

Run: ``python bench/episodes.py [--n 10000 100000] [--no-record]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import (
    db_label,
    fresh_project,
    md_table,
    peak_rss_mb,
    record,
    setup_django,
    synthetic_episodes,
    text_table,
    timer,
)

BATCH_SIZE = 2000
# The app's SQLite pragmas (llmwiki/settings.py) minus foreign_keys: the floor tables have
# no parent tables to check against.
FLOOR_PRAGMAS = (
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "PRAGMA mmap_size=134217728;"
    "PRAGMA cache_size=-65536;"
)


def episode_sqlite_ddl() -> list[str]:
    """Django's own SQLite DDL for ``Episode`` (table and indexes), whatever the default DB."""
    from django.db import connections
    from django.db.backends.sqlite3.base import DatabaseWrapper

    from llmwiki.models import Episode

    settings = dict(connections["default"].settings_dict)
    settings.update(ENGINE="django.db.backends.sqlite3", NAME=":memory:", OPTIONS={})
    # The schema editor looks its connection up by alias, so register the scratch one briefly.
    alias = "_bench_sqlite_ddl"
    wrapper = DatabaseWrapper(settings, alias=alias)
    connections[alias] = wrapper
    try:
        with wrapper.schema_editor(collect_sql=True) as editor:
            editor.create_model(Episode)
    finally:
        wrapper.close()
        del connections[alias]
    return [sql.rstrip(";") for sql in editor.collected_sql]


def create_floor_tables(con: sqlite3.Connection) -> list[str]:
    """Create ``twin_episode`` (exact DDL) and ``plain_episode`` (column types only).

    Returns the inserted column names, in order (every column but ``id``).
    """
    for sql in episode_sqlite_ddl():
        con.execute(sql.replace('"llmwiki_episode"', '"twin_episode"'))
    info = con.execute('PRAGMA table_info("twin_episode")').fetchall()
    columns = [
        f'"{name}" {type_}{" NOT NULL" if notnull else ""}'
        for _cid, name, type_, notnull, _default, pk in info
        if not pk
    ]
    con.execute(f'CREATE TABLE "plain_episode" ("id" integer PRIMARY KEY, {", ".join(columns)})')
    return [name for _cid, name, _t, _nn, _d, pk in info if not pk]


def sqlite_value(value: Any) -> Any:
    """What Django's SQLite backend stores for a Python value (UTC text dates, JSON text)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).replace(tzinfo=None).isoformat(" ")
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value


def floor_rows(episodes: list, columns: list[str]) -> list[tuple]:
    """The episodes' column values as the floor inserts them (converted before timing)."""
    from llmwiki.models import Episode

    by_column = {f.column: f.attname for f in Episode._meta.concrete_fields}
    attnames = [by_column[c] for c in columns]
    return [tuple(sqlite_value(getattr(ep, a)) for a in attnames) for ep in episodes]


def time_floor(con: sqlite3.Connection, table: str, columns: list[str], rows: list[tuple]) -> float:
    """One transaction, one executemany: the cheapest way Python gets rows into SQLite."""
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" * len(columns))
    sql = f'INSERT INTO "{table}" ({names}) VALUES ({marks})'  # noqa: S608 (names are ours)
    gc.collect()
    with timer() as t:
        con.execute("BEGIN IMMEDIATE")
        con.executemany(sql, rows)
        con.execute("COMMIT")
    return t.seconds


def time_orm(episodes: list) -> float:
    from django.db import transaction

    from llmwiki.models import Episode

    gc.collect()
    with timer() as t, transaction.atomic():
        Episode.objects.bulk_create(episodes, batch_size=BATCH_SIZE)
    return t.seconds


def effective_batch_size(n: int) -> int:
    """Rows per INSERT Django really sends: SQLite caps it at 999 parameters per query."""
    from django.db import connection

    from llmwiki.models import Episode

    fields = [f for f in Episode._meta.concrete_fields if not f.primary_key]
    return min(BATCH_SIZE, connection.ops.bulk_batch_size(fields, [None] * n) or n)


HEADER = [
    "episodes",
    "ORM s",
    "ORM ep/s",
    "floor s",
    "floor ep/s",
    "ORM/floor",
    "twin ep/s",
    "ORM/twin",
    "peak RSS MiB",
]


def measure(sizes: list[int]) -> tuple[list[list[Any]], dict[str, list[float]]]:
    """Insert `n` episodes through the ORM and into the two floors, for each size."""
    floor_dir = Path(tempfile.mkdtemp(prefix="llmwiki-bench-floor-"))
    con = sqlite3.connect(floor_dir / "floor.sqlite3", isolation_level=None)
    con.executescript(FLOOR_PRAGMAS)
    columns = create_floor_tables(con)
    rows: list[list[Any]] = []
    times: dict[str, list[float]] = {"orm": [], "floor": [], "twin": []}
    try:
        for n in sizes:
            episodes = synthetic_episodes(fresh_project("bench-episodes"), n)
            data = floor_rows(episodes, columns)
            floor_s = time_floor(con, "plain_episode", columns, data)
            twin_s = time_floor(con, "twin_episode", columns, data)
            orm_s = time_orm(episodes)
            for key, value in (("orm", orm_s), ("floor", floor_s), ("twin", twin_s)):
                times[key].append(value)
            rows.append(
                [
                    f"{n:,}",
                    f"{orm_s:.2f}",
                    f"{n / orm_s:,.0f}",
                    f"{floor_s:.2f}",
                    f"{n / floor_s:,.0f}",
                    f"{orm_s / floor_s:.1f}×",
                    f"{n / twin_s:,.0f}",
                    f"{orm_s / twin_s:.1f}×",
                    f"{peak_rss_mb():.0f}",
                ]
            )
            del episodes, data
    finally:
        con.close()
        for path in floor_dir.iterdir():
            path.unlink()
        floor_dir.rmdir()
    return rows, times


def notes_on(sizes: list[int], times: dict[str, list[float]]) -> list[str]:
    """What the figures were measured on, and how each grows with the rows."""
    batch = effective_batch_size(max(sizes))
    # Django assumes SQLite's old 999-parameter limit, which caps rows per INSERT.
    cap = " (Django's 999-parameter cap for SQLite)" if batch < BATCH_SIZE else ""
    notes = [
        f"Database under test: {db_label()}. Floor: raw sqlite3 executemany, separate WAL file "
        "with the app's pragmas, values converted before timing; twin = same with Django's "
        "exact Episode DDL (JSON CHECKs, 7 indexes, foreign keys not enforced).",
        f"`bulk_create(batch_size={BATCH_SIZE})` sends {batch} rows per INSERT here"
        f"{cap}. Peak RSS is the whole process so far, including the generated episodes.",
    ]
    for i in range(1, len(sizes)):
        growth = sizes[i] / sizes[i - 1]
        parts = ", ".join(
            f"{label} {times[key][i] / times[key][i - 1]:.1f}×"
            for key, label in (("orm", "ORM"), ("floor", "floor"), ("twin", "twin"))
        )
        notes.append(f"Linearity {sizes[i - 1]:,} → {sizes[i]:,} ({growth:.0f}× rows): {parts}.")
    return notes


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)

    setup_django()
    rows, times = measure(args.n)
    notes = notes_on(args.n, times)
    print(text_table(HEADER, rows))
    print()
    for note in notes:
        print(note)
    if not args.no_record:
        record(
            "Episode bulk insert (bench/episodes.py)",
            [*md_table(HEADER, rows), "", *(f"- {note}" for note in notes)],
        )
        print("\nRecorded in bench/RESULTS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
