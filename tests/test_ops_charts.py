"""Chart axes: ages of minutes, hours or days get distinct, readable ticks."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest

from ops.charts import Line, chart, fmt

DAYS = tuple(date(2026, 11, 1) + timedelta(days=i) for i in range(3))
MINUTE, HOUR = 1 / 1440, 1 / 24


def ticks(values: list[float]) -> list[str]:
    svg = str(chart("age", "Age", DAYS, [Line("age", values)], unit="days").svg)
    return re.findall(
        r'<text class="axis" x="50" y="[0-9.]+" text-anchor="end">([^<]*)</text>', svg
    )


@pytest.mark.parametrize(
    ("ages", "expected"),
    [
        ([2 * MINUTE, 5 * MINUTE, 3 * MINUTE], ["0 min", "2.5 min", "5 min"]),
        ([3 * HOUR, 7 * HOUR, 11 * HOUR], ["0 h", "10 h", "20 h"]),
        ([1.5, 4, 7], ["0 d", "5 d", "10 d"]),
    ],
)
def test_age_ticks_are_distinct_in_the_unit_the_ages_read_in(ages, expected):
    # Drawn from the bottom up: the 0 tick first.
    assert ticks(ages) == expected


def test_ages_read_in_minutes_hours_or_days():
    assert fmt(5 * MINUTE, "days") == "5.0 min"
    assert fmt(3 * HOUR, "days") == "3.0 h"
    assert fmt(1.5, "days") == "1.5 d" and fmt(12, "days") == "12 d"
    assert fmt(0, "days") == "0 d"
