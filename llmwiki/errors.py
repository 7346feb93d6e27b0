"""Errors shared by the services and the pure modules they call."""

from __future__ import annotations


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
