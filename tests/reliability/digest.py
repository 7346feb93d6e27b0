"""A digest of table contents, to show that a fault or a refused input lost nothing."""

from __future__ import annotations

import hashlib
from typing import Any

# What a fault must never change: the raw layer, the reviewed wiki and its audit trail.
STORED = (
    "llmwiki_source",
    "llmwiki_episode",
    "llmwiki_claim",
    "llmwiki_pagerevision",
    "reviews_review",
)
# What a sweep writes (all of it in one transaction, or none of it).
SWEPT = ("dreaming_candidate", "dreaming_candidateevidence", "dreaming_conflict")


def table_digest(cursor: Any, tables: tuple[str, ...] = STORED) -> dict[str, str]:
    """sha256 of each table's rows in primary-key order, from any DB-API cursor."""
    out = {}
    for table in tables:
        cursor.execute(f"SELECT * FROM {table} ORDER BY 1")  # noqa: S608 -- fixed names
        digest = hashlib.sha256()
        for row in cursor.fetchall():
            digest.update(repr(tuple(row)).encode())
        out[table] = digest.hexdigest()
    return out


def django_digest(tables: tuple[str, ...] = STORED) -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        return table_digest(cursor, tables)
