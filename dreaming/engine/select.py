"""Which episodes a sweep reads: batch planning over lightweight ``(id, day, nbytes)`` rows.

Why the watermark is an episode id, not a date
----------------------------------------------
signal-dreaming kept a date watermark and paid for it three times: same-day appends were
missed (fixed with ``>=``), ``>=`` then re-read a large watermark day forever (a deadlock
fixed with per-file mtimes), and a backfill entry could drag the frontier forward. Episodes
here are append-only rows with increasing ids, so we track "read everything with
``id <= watermark``" instead:

* an episode inserted late with an *old* ``occurred_at`` still has a new id, so it is past
  the watermark and is read by the next sweep — nothing is lost behind a date;
* nothing is read twice, so a large day cannot be re-selected forever;
* the service's query is ``id > watermark`` and the watermark is one integer.

Within what is past the watermark we still cut on ``occurred_at`` days, because a day is
the unit humans and recurrence think in:

* **resume** walks rows in insertion order (for normally ingested data that is oldest
  first) and, once a cap is reached, keeps going only while rows belong to a day already
  in the batch, so the cap never splits a day; the new watermark is the last id taken, so
  everything behind it was read exactly once;
* **first run** takes whole days newest first (recent context first), sets the watermark
  to the newest id seen and reports how many older episodes were left for a backfill —
  they are never picked up silently;
* **backfill** takes whole days of an explicit date range oldest first and never moves
  the watermark (``watermark_after is None``);
* an empty selection is a no-op: nothing taken, watermark unchanged;
* at least one whole day is always taken, even if that day alone exceeds both caps — a
  cap that can yield an empty batch is a deadlock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from .policy import Policy


class Row(NamedTuple):
    """A selectable episode: its id, its ``occurred_at`` date (UTC) and content size."""

    id: int
    day: date
    nbytes: int


@dataclass(frozen=True, slots=True)
class Batch:
    """The plan for one sweep. ``watermark_after is None`` means leave the watermark alone."""

    ids: tuple[int, ...]
    days: tuple[date, ...]
    watermark_after: int | None
    older_left: int
    note: str
    mode: str = "empty"  # "resume" | "first_run" | "backfill" | "empty"
    nbytes: int = 0
    remaining: int = 0  # rows still waiting after this batch (resume and backfill)


def plan_batch(
    rows: Iterable[tuple[int, date, int]],
    policy: Policy,
    first_run: bool = False,
    backfill: tuple[date, date] | None = None,
) -> Batch:
    """Plan one batch from rows past the watermark (all rows on a first run or backfill)."""
    rows = [Row(*r) for r in rows]
    if backfill is not None:
        start, end = backfill
        if start > end:
            raise ValueError(f"backfill range starts after it ends: {start} > {end}")
        in_range = [r for r in rows if start <= r.day <= end]
        return _whole_days(in_range, policy, newest_first=False, backfill=(start, end))
    if not rows:
        return Batch((), (), None, 0, "nothing past the watermark; no-op")
    if first_run:
        return _whole_days(rows, policy, newest_first=True, backfill=None)
    return _resume(rows, policy)


def _fits(count: int, nbytes: int, row: Row, policy: Policy) -> bool:
    return count + 1 <= policy.max_episodes and nbytes + row.nbytes <= policy.max_bytes


def _resume(rows: list[Row], policy: Policy) -> Batch:
    rows.sort(key=lambda r: r.id)
    taken: list[Row] = []
    days: set[date] = set()
    nbytes = 0
    capped = False
    for row in rows:
        if taken and not _fits(len(taken), nbytes, row, policy):
            capped = True
            # Over the cap we only finish days already started: splitting a day is what
            # strands its tail behind the watermark.
            if row.day not in days:
                break
        taken.append(row)
        days.add(row.day)
        nbytes += row.nbytes
    remaining = len(rows) - len(taken)
    note = (
        f"resumed: took {len(taken)} episodes over {len(days)} day(s), {nbytes} bytes, "
        f"oldest first by insertion; {remaining} remain past the new watermark"
    )
    if capped and len(days) == 1 and _over_cap(len(taken), nbytes, policy):
        note += f"; day {next(iter(days))} alone exceeds the batch cap and was taken whole"
    return Batch(
        ids=tuple(r.id for r in taken),
        days=tuple(sorted(days)),
        watermark_after=taken[-1].id,
        older_left=0,
        note=note,
        mode="resume",
        nbytes=nbytes,
        remaining=remaining,
    )


def _over_cap(count: int, nbytes: int, policy: Policy) -> bool:
    return count > policy.max_episodes or nbytes > policy.max_bytes


def _whole_days(
    rows: list[Row], policy: Policy, *, newest_first: bool, backfill: tuple[date, date] | None
) -> Batch:
    if not rows:
        label = f"backfill {backfill[0]}..{backfill[1]}" if backfill else "first run"
        return Batch((), (), None, 0, f"{label}: nothing to read; no-op")
    by_day: dict[date, list[Row]] = {}
    for row in rows:
        by_day.setdefault(row.day, []).append(row)
    order = sorted(by_day, reverse=newest_first)
    taken_days: list[date] = []
    count = nbytes = 0
    for day in order:
        day_rows = by_day[day]
        day_bytes = sum(r.nbytes for r in day_rows)
        if taken_days and (
            count + len(day_rows) > policy.max_episodes or nbytes + day_bytes > policy.max_bytes
        ):
            # Stop at the first day that does not fit rather than skipping to a smaller
            # one: the batch must stay a contiguous run of days.
            break
        taken_days.append(day)
        count += len(day_rows)
        nbytes += day_bytes
    ids = tuple(sorted(r.id for d in taken_days for r in by_day[d]))
    left = len(rows) - len(ids)
    whole_note = ""
    if len(taken_days) == 1 and _over_cap(count, nbytes, policy):
        whole_note = f"; day {taken_days[0]} alone exceeds the batch cap and was taken whole"
    if backfill is not None:
        note = (
            f"backfill {backfill[0]}..{backfill[1]}: took {len(ids)} episodes over "
            f"{len(taken_days)} day(s) oldest first; {left} remain in the range; "
            "watermark unchanged" + whole_note
        )
        return Batch(
            ids, tuple(sorted(taken_days)), None, 0, note, "backfill", nbytes, remaining=left
        )
    note = f"first run: took the newest {len(taken_days)} day(s), {len(ids)} episodes" + whole_note
    if left:
        older = [d for d in order if d not in set(taken_days)]
        note += (
            f"; {left} older episodes ({min(older)}..{max(older)}) were left outside the "
            "watermark and need an explicit backfill"
        )
    return Batch(
        ids=ids,
        days=tuple(sorted(taken_days)),
        # Everything that exists now counts as seen: older days are the backfill's job,
        # and anything inserted from here on has a larger id.
        watermark_after=max(r.id for r in rows),
        older_left=left,
        note=note,
        mode="first_run",
        nbytes=nbytes,
        remaining=0,
    )
