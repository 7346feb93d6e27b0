"""Cron expressions in words, for people who do not read cron ("daily at 03:00").

Pure Python (no Django). Only the forms a project schedule really uses are described;
anything else comes back as the expression itself, which is never wrong, only terse.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["describe_cron"]

_ALIASES: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_DAY_NAMES: Final = (
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
)
_DAY_ABBR: Final = {name[:3].lower(): i for i, name in enumerate(_DAY_NAMES)}
_NUMBER: Final = re.compile(r"\d{1,2}$")
_STEP: Final = re.compile(r"\*/(\d{1,2})$")


class _Unsupported(Exception):
    """The expression is valid cron we choose not to put into words."""


def _number(field: str, low: int, high: int) -> int:
    if not _NUMBER.match(field):
        raise _Unsupported(field)
    value = int(field)
    if not low <= value <= high:
        raise _Unsupported(field)
    return value


def _numbers(field: str, low: int, high: int) -> list[int]:
    """A single value or a comma list of values (no ranges or steps)."""
    values = [_number(part, low, high) for part in field.split(",")]
    if len(set(values)) != len(values):
        raise _Unsupported(field)
    return sorted(values)


def _days(field: str) -> list[int]:
    """Days of the week as 0-6 (Sunday is 0 or 7), from numbers, names or one range."""
    days: set[int] = set()
    for part in field.lower().split(","):
        bounds = part.split("-")
        if len(bounds) > 2:
            raise _Unsupported(field)
        ends = [_DAY_ABBR[b] if b in _DAY_ABBR else _number(b, 0, 7) for b in bounds]
        if len(ends) == 2:
            if ends[0] > ends[1]:
                raise _Unsupported(field)
            days.update(range(ends[0], ends[1] + 1))
        else:
            days.add(ends[0])
    return sorted({d % 7 for d in days})


def _join(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " and " + words[-1]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _times(minute: int, hours: list[int]) -> str:
    return _join([f"{h:02d}:{minute:02d}" for h in hours])


def _weekdays(days: list[int]) -> str:
    if days == [1, 2, 3, 4, 5]:
        return "on weekdays"
    if days == [0, 6]:
        return "at weekends"
    return "every " + _join([_DAY_NAMES[d] for d in days])


def _describe(minute: str, hour: str, dom: str, month: str, dow: str) -> str:
    if month != "*":
        # Monthly-in-some-months schedules are rare for a sweep; keep the cron.
        raise _Unsupported(month)
    if hour == "*" and dom == "*" and dow == "*":
        if minute == "*":
            return "every minute"
        step = _STEP.match(minute)
        if step:
            n = int(step.group(1))
            if not 1 <= n <= 59:
                raise _Unsupported(minute)
            return "every minute" if n == 1 else f"every {n} minutes"
        m = _number(minute, 0, 59)
        return "every hour, on the hour" if m == 0 else f"every hour at {m} past"
    m = _number(minute, 0, 59)
    step = _STEP.match(hour)
    if step and dom == "*" and dow == "*":
        n = int(step.group(1))
        if not 1 <= n <= 23:
            raise _Unsupported(hour)
        every = "every hour" if n == 1 else f"every {n} hours"
        return f"{every}, on the hour" if m == 0 else f"{every} at {m} past"
    hours = _numbers(hour, 0, 23)
    at = _times(m, hours)
    if dom == "*" and dow == "*":
        return f"daily at {at}"
    if dom == "*":
        return f"{_weekdays(_days(dow))} at {at}"
    if dow == "*":
        days = _numbers(dom, 1, 31)
        return f"monthly on the {_join([_ordinal(d) for d in days])} at {at}"
    # Both day fields set means "either" in cron, which reads badly in words.
    raise _Unsupported(dom)


def describe_cron(expression: str) -> str:
    """Say when a five-field cron expression fires, or return it unchanged.

    >>> describe_cron("0 3 * * *")
    'daily at 03:00'
    """
    text = " ".join(expression.split())
    fields = _ALIASES.get(text.lower(), text).split(" ")
    if len(fields) != 5:
        return text
    try:
        return _describe(*fields)
    except (_Unsupported, KeyError):
        return text
