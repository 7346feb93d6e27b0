"""Errors shared by the pure ingest modules and the services that call them."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: names the offending file (or archive entry) and the reason in one line."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"{name}: {reason}")
