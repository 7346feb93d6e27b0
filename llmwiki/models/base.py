"""Rows that are history: immutable after insert, corrected by new rows."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import models


class ImmutableError(Exception):
    """Raised when code tries to change or delete a row that is history."""


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise ImmutableError(f"{self.model.__name__} rows are immutable; insert a new row")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise ImmutableError(f"{self.model.__name__} rows cannot be deleted")

    def _unchecked_update(self, **kwargs: Any) -> int:
        """The one sanctioned bypass: erasure (right to be forgotten), via its service."""
        return super().update(**kwargs)


class ImmutableModel(models.Model):
    objects = ImmutableQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError(f"{type(self).__name__} rows are immutable; insert a new row")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise ImmutableError(f"{type(self).__name__} rows cannot be deleted")


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()
