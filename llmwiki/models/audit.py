"""The audit log: who did what to which object, and what it was before and after."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from llmwiki.models.base import ImmutableModel
from llmwiki.models.projects import Project


class AuditEvent(ImmutableModel):
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.CharField(max_length=200)
    action = models.CharField(max_length=60)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["project", "at"]),
            models.Index(fields=["object_type", "object_id"]),
            models.Index(fields=["project", "id"]),  # the latest event (documents.head)
        ]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.object_type}"

    @classmethod
    def record(cls, **fields: Any) -> AuditEvent:
        """Write one audit row; takes the arguments of `build`."""
        event = cls.build(**fields)
        event.save()
        return event

    @classmethod
    def build(
        cls,
        *,
        actor: Any,
        action: str,
        obj: models.Model,
        project: Project | None = None,
        before: Any = None,
        after: Any = None,
        note: str = "",
    ) -> AuditEvent:
        """An unsaved audit row; `actor` is a user, an agent label or "system"."""
        if project is None:
            project = obj if isinstance(obj, Project) else getattr(obj, "project", None)
        return cls(
            project=project,
            actor=actor_label(actor),
            action=action,
            object_type=type(obj).__name__,
            object_id=str(obj.pk),
            before=before,
            after=after,
            note=note,
        )


def actor_label(actor: Any) -> str:
    if actor is None:
        return "system"
    if isinstance(actor, str):
        return actor
    return f"user:{actor.get_username()}"
