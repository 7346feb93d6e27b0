"""Cron in words: the common forms are described, everything else is left as written."""

from __future__ import annotations

import pytest
from croniter import croniter

from llmwiki.schedule import describe_cron


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("0 3 * * *", "daily at 03:00"),
        ("30 23 * * *", "daily at 23:30"),
        ("  0   3 * *  * ", "daily at 03:00"),
        ("15 3,15 * * *", "daily at 03:15 and 15:15"),
        ("0 2 * * 1", "every Monday at 02:00"),
        ("0 2 * * 7", "every Sunday at 02:00"),
        ("0 2 * * mon,thu", "every Monday and Thursday at 02:00"),
        ("0 6 * * 1-5", "on weekdays at 06:00"),
        ("0 6 * * MON-FRI", "on weekdays at 06:00"),
        ("0 9 * * 6,0", "at weekends at 09:00"),
        ("0 4 1 * *", "monthly on the 1st at 04:00"),
        ("0 4 2,22,23 * *", "monthly on the 2nd, 22nd and 23rd at 04:00"),
        ("0 4 11 * *", "monthly on the 11th at 04:00"),
        ("* * * * *", "every minute"),
        ("*/15 * * * *", "every 15 minutes"),
        ("0 * * * *", "every hour, on the hour"),
        ("5 * * * *", "every hour at 5 past"),
        ("0 */6 * * *", "every 6 hours, on the hour"),
        ("30 */2 * * *", "every 2 hours at 30 past"),
        ("@daily", "daily at 00:00"),
        ("@hourly", "every hour, on the hour"),
        ("@weekly", "every Sunday at 00:00"),
    ],
)
def test_it_describes_common_schedules(expression, words):
    assert croniter.is_valid(expression.strip())
    assert describe_cron(expression) == words


@pytest.mark.parametrize(
    "expression",
    [
        "0 3 1 1 *",  # months
        "0 3 1 * 1",  # day of month and day of week: "either", unclear in words
        "0-30 3 * * *",  # minute range
        "0 1-5 * * *",  # hour range
        "0 3 */2 * *",
        "0 3 * * 5-1",
        "@yearly",
        "not a cron",
        "0 3 * *",
        "0 24 * * *",
        "0 3 * * 8",
    ],
)
def test_it_falls_back_to_the_expression(expression):
    assert describe_cron(expression) == expression
