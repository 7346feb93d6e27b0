"""A small corpus with the planted cases the dreaming tests need, ingested for real."""

from __future__ import annotations

from llmwiki.ingest import RawFile, ingest_files

DAYS = {
    "memory/2026-11-02.md": """# 2026-11-02 — agent:builder

## Notes
- The staging database runs PostgreSQL 16 on db-staging-2.
- Decision: use RabbitMQ for the shipment event queue.
- The CSV export workstream started; Priya owns it.
""",
    "memory/2026-11-04.md": """# 2026-11-04 — agent:builder

## Notes
- staging DB is Postgres 16 (host db-staging-2)
- worker v1.4 deployed to tw-app-1.
- closed: CSV export workstream shipped, no further work.
""",
    "memory/2026-11-06.md": """# 2026-11-06 — agent:scout

## Notes
- Reminder: db-staging-2 is our staging database, PostgreSQL 16.
- worker v1.5 deployed to tw-app-1.
""",
    "memory/2026-11-09.md": """# 2026-11-09 — agent:builder

## Notes
- staging runs on postgres 16 — db-staging-2
- We moved from RabbitMQ to Redis Streams for the shipment event queue, because ops already runs Redis.
- someone asked about the CSV export workstream again — it is done, nothing to do.
""",
    "memory/2026-11-11.md": """# 2026-11-11 — agent:scout

## Notes
- The staging Postgres (v16) lives on db-staging-2.
- Lunch was good today.
""",
}


def seed(project, paths=None) -> None:
    files = [
        RawFile(path, text.encode())
        for path, text in DAYS.items()
        if paths is None or path in paths
    ]
    ingest_files(project=project, files=files, actor="system")
