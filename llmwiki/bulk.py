"""Fast inserts for the ingest path, where model instances cost more than the rows."""

from __future__ import annotations

from typing import Any

from django.db import connections, models, router


def bulk_insert(
    model: type[models.Model], rows: list[dict[str, Any]], batch_size: int = 2000
) -> None:
    """Insert rows given as {attname: value} with one prepared statement per batch.

    `bulk_create` spends most of its time building model instances and in per-value field
    machinery (about 5k rows/s here), which alone would eat the ingest budget; this adapts
    only JSON and datetime values and hands the rest to `executemany` (same SQL on every
    backend). Primary keys are not returned. Callers run it inside their transaction.
    """
    if not rows:
        return
    conn = connections[router.db_for_write(model)]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    defaults = {f.attname: f.get_default() for f in fields if f.has_default()}
    ops = conn.ops

    def adapter(field: models.Field) -> Any:
        if isinstance(field, models.JSONField):
            # Most rows carry empty flags and tags; encode those once.
            empty = {"list": ops.adapt_json_value([], field.encoder)}

            def adapt_json(v: Any) -> Any:
                if v == [] and type(v) is list:
                    return empty["list"]
                return ops.adapt_json_value(v, field.encoder)

            return adapt_json
        if isinstance(field, models.DateTimeField):
            # Rows of one import share timestamps (recorded_at, a log's day); adapt each once.
            cache: dict[Any, Any] = {}

            def adapt_datetime(v: Any) -> Any:
                if v not in cache:
                    cache[v] = ops.adapt_datetimefield_value(v)
                return cache[v]

            return adapt_datetime
        return None

    plan = [(f.attname, adapter(f)) for f in fields]
    table = ops.quote_name(model._meta.db_table)
    columns = ", ".join(ops.quote_name(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({marks})"  # noqa: S608 - names from _meta
    with conn.cursor() as cursor:
        for start in range(0, len(rows), batch_size):
            batch = []
            for row in rows[start : start + batch_size]:
                values = []
                for attname, adapt in plan:
                    value = row[attname] if attname in row else defaults.get(attname)
                    values.append(
                        adapt(value) if adapt is not None and value is not None else value
                    )
                batch.append(values)
            cursor.executemany(sql, batch)
