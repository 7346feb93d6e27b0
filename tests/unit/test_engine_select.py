"""Batch planning: watermark, caps cut on day boundaries, first run, resume, backfill."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from dreaming.engine import Policy, plan_batch

D0 = date(2026, 3, 1)


def rows_for(days: dict[int, int], *, start_id: int = 1, nbytes: int = 100):
    """Rows in insertion order: ``days`` maps a day offset to how many episodes it has."""
    out = []
    next_id = start_id
    for offset, count in days.items():
        for _ in range(count):
            out.append((next_id, D0 + timedelta(days=offset), nbytes))
            next_id += 1
    return out


def test_it_is_a_no_op_when_nothing_is_past_the_watermark():
    batch = plan_batch([], Policy(), first_run=False)

    assert batch.ids == ()
    assert batch.watermark_after is None
    assert batch.mode == "empty"
    assert "no-op" in batch.note


def test_it_takes_the_newest_days_first_on_a_first_run_and_reports_what_it_left():
    rows = rows_for({0: 3, 1: 3, 2: 3, 3: 3})
    batch = plan_batch(rows, Policy(max_episodes=6), first_run=True)

    assert batch.days == (D0 + timedelta(days=2), D0 + timedelta(days=3))
    assert batch.ids == (7, 8, 9, 10, 11, 12)
    assert batch.older_left == 6
    assert batch.watermark_after == 12  # everything seen; older days need a backfill
    assert "6 older episodes" in batch.note and "backfill" in batch.note


def test_it_resumes_oldest_first_after_a_gap_and_says_how_much_remains():
    rows = rows_for({0: 2, 1: 2, 2: 2, 3: 2}, start_id=41)
    batch = plan_batch(rows, Policy(max_episodes=4), first_run=False)

    assert batch.ids == (41, 42, 43, 44)
    assert batch.days == (D0, D0 + timedelta(days=1))
    assert batch.watermark_after == 44
    assert batch.remaining == 4
    assert batch.mode == "resume"


def test_it_never_splits_a_day_at_the_cap():
    rows = rows_for({0: 3, 1: 3})
    batch = plan_batch(rows, Policy(max_episodes=2), first_run=False)

    assert batch.ids == (1, 2, 3)
    assert batch.watermark_after == 3


def test_it_takes_a_single_day_whole_even_when_it_alone_exceeds_the_caps():
    rows = rows_for({0: 10, 1: 1}, nbytes=1000)
    batch = plan_batch(rows, Policy(max_episodes=3, max_bytes=2000), first_run=False)

    assert batch.ids == tuple(range(1, 11))
    assert batch.days == (D0,)
    assert batch.watermark_after == 10
    assert "alone exceeds the batch cap" in batch.note
    first = plan_batch(rows_for({0: 10}), Policy(max_episodes=3), first_run=True)
    assert len(first.ids) == 10


def test_it_picks_up_a_late_arriving_episode_with_an_old_date():
    # ids 1-4 were consolidated (watermark 4); id 5 arrived later but is dated day 0.
    rows = [(5, D0, 100), (6, D0 + timedelta(days=5), 100)]
    batch = plan_batch(rows, Policy(), first_run=False)

    assert batch.ids == (5, 6)
    assert batch.watermark_after == 6


def test_it_makes_progress_when_an_old_day_keeps_receiving_late_rows():
    # Oldest-by-date would re-pick day 0 forever; insertion order always moves on.
    rows = [(10, D0 + timedelta(days=3), 100)] + [(11 + k, D0, 100) for k in range(5)]
    batch = plan_batch(rows, Policy(max_episodes=1), first_run=False)

    assert batch.ids == (10,)
    assert batch.watermark_after == 10
    assert plan_batch(rows[1:], Policy(max_episodes=1), first_run=False).ids == tuple(range(11, 16))


def test_it_backfills_a_date_range_without_moving_the_watermark():
    rows = rows_for({0: 2, 1: 2, 2: 2, 3: 2})
    rng = (D0 + timedelta(days=1), D0 + timedelta(days=2))
    batch = plan_batch(rows, Policy(), first_run=False, backfill=rng)

    assert batch.ids == (3, 4, 5, 6)
    assert batch.watermark_after is None
    assert batch.mode == "backfill"
    assert "watermark unchanged" in batch.note


def test_it_backfills_oldest_first_and_reports_what_is_left_in_the_range():
    rows = rows_for({0: 2, 1: 2, 2: 2})
    batch = plan_batch(rows, Policy(max_episodes=2), backfill=(D0, D0 + timedelta(days=2)))

    assert batch.ids == (1, 2)
    assert batch.remaining == 4
    assert batch.watermark_after is None


def test_it_is_a_no_op_for_a_backfill_range_with_nothing_in_it():
    batch = plan_batch(rows_for({0: 2}), Policy(), backfill=(D0 + timedelta(days=9),) * 2)

    assert batch.ids == () and batch.watermark_after is None


def test_it_refuses_a_backfill_range_that_ends_before_it_starts():
    with pytest.raises(ValueError, match="starts after it ends"):
        plan_batch([], Policy(), backfill=(D0 + timedelta(days=1), D0))


def test_it_counts_bytes_against_the_byte_cap():
    rows = rows_for({0: 1, 1: 1, 2: 1}, nbytes=600)
    batch = plan_batch(rows, Policy(max_bytes=1000), first_run=False)

    assert batch.ids == (1,)
    assert batch.nbytes == 600
