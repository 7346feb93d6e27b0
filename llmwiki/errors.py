"""Errors shared by the services and the pure modules they call."""

from __future__ import annotations

import math


class InputError(ValueError):
    """Bad input: names the offending file (or archive entry) and the reason in one line."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")


class Refused(Exception):
    """A gate said no. `status` is the HTTP status a view should answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


def refuse_unstorable(name: str, value: object) -> None:
    """InputError naming `name` (and the path inside it) for a value no database keeps as sent.

    JSON lets a client send a NUL character, an unpaired surrogate or (in Python's reading)
    Infinity and NaN. PostgreSQL cannot store U+0000 in text or jsonb and refuses it even in
    a lookup; neither database encodes a lone surrogate; SQLite's JSON check and PostgreSQL's
    jsonb refuse non-finite numbers. Each would fail as a database error (a 500), so it is
    refused here on both, as Django's forms refuse a NUL on the web.
    """
    if isinstance(value, str):
        if "\x00" in value:
            raise InputError(name, "contains a NUL character (U+0000), which is not allowed")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(name, "contains an unpaired surrogate; send valid Unicode") from None
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(name, f"{value} is not a finite number")
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_unstorable(f"{name} key {key!r}", key)
            refuse_unstorable(f"{name}.{key}", item)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            refuse_unstorable(f"{name}[{index}]", item)
