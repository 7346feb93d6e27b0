"""The raw layer (imported files) and the episodic layer read from them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from llmwiki import vocabulary
from llmwiki.models.base import ImmutableModel, ImmutableQuerySet
from llmwiki.models.projects import Project


class SecurityClass(models.TextChoices):
    PUBLIC = "public", "Public"
    INTERNAL = "internal", "Internal"
    RESTRICTED = "restricted", "Restricted"


SECURITY_RANK = {SecurityClass.PUBLIC: 0, SecurityClass.INTERNAL: 1, SecurityClass.RESTRICTED: 2}


class Source(models.Model):
    """An imported file. Its bytes live in the content-addressed blob store, never here."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        ERASED = "erased", "Erased"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sources")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    media_type = models.CharField(max_length=100)
    original_name = models.CharField(max_length=500)
    path = models.CharField(max_length=1000, help_text="Path or URI the file was imported from.")
    importer = models.CharField(max_length=40)
    retrieved_at = models.DateTimeField(default=timezone.now)
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_versions"
    )
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    security_summary = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)

    class Meta:
        constraints = [
            # Re-importing identical bytes is a no-op, enforced by the database too.
            models.UniqueConstraint(fields=["project", "sha256"], name="one_source_per_blob")
        ]
        indexes = [models.Index(fields=["project", "path"])]
        ordering = ["-retrieved_at", "-id"]

    def __str__(self) -> str:
        return f"{self.path} ({self.sha256[:12]})"


# --- Episodic layer ----------------------------------------------------------------------


class EpisodeQuerySet(ImmutableQuerySet):
    def for_project(self, project: Project) -> EpisodeQuerySet:
        return self.filter(project=project)

    def dreamable(self) -> EpisodeQuerySet:
        """Episodes a sweep may read: not quarantined, not erased, not superseded."""
        return self.filter(status=Episode.Status.ACTIVE)

    def with_label_in_force(self) -> EpisodeQuerySet:
        """Annotate `label_in_force`: the newest correction's memory type, else the original."""
        newest = EpisodeRelabel.objects.filter(episode=OuterRef("pk")).order_by("-id")
        return self.annotate(
            label_in_force=Coalesce(Subquery(newest.values("memory_type")[:1]), "memory_type")
        )


class Episode(ImmutableModel):
    Kind = models.TextChoices(
        "Kind", [(k.value.upper(), (k.value, k.label)) for k in vocabulary.EPISODE_KINDS]
    )

    class MemoryType(models.TextChoices):
        WORKING = "working", "Working"
        EPISODIC = "episodic", "Episodic"
        SEMANTIC = "semantic-candidate", "Semantic candidate"
        PROCEDURAL = "procedural-candidate", "Procedural candidate"
        HANDOFF = "handoff-only", "Handoff only"

    class Trust(models.TextChoices):
        DRAFT = "draft", "Draft"
        REVIEWED = "reviewed", "Reviewed"
        APPROVED = "approved", "Approved"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        QUARANTINED = "quarantined", "Quarantined"
        DISCARDED = "discarded", "Discarded"
        ERASED = "erased", "Erased"
        SUPERSEDED = "superseded", "Superseded"

    # Lines the app logs about its own work: never project material for a sweep.
    BOOKKEEPING_KINDS = vocabulary.BOOKKEEPING_KINDS
    # What an agent may post (API, MCP): project material, never the app's own bookkeeping.
    AGENT_KINDS = vocabulary.AGENT_KINDS

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="episodes")
    wizard_run_id = models.BigIntegerField(null=True, blank=True)
    occurred_at = models.DateTimeField(db_index=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    content = models.TextField()
    source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="episodes"
    )
    locator = models.JSONField(default=dict, blank=True)
    memory_type = models.CharField(
        max_length=24, choices=MemoryType.choices, default=MemoryType.EPISODIC
    )
    memory_type_reason = models.CharField(max_length=200, blank=True)
    trust = models.CharField(max_length=10, choices=Trust.choices, default=Trust.DRAFT)
    security_class = models.CharField(
        max_length=10, choices=SecurityClass.choices, default=SecurityClass.INTERNAL
    )
    flags = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    content_hash = models.CharField(max_length=64)
    supersedes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    # Quarantine, supersession and erasure are the only state an episode has; they change
    # through the ingest/erasure services (the sanctioned bypass), each with an audit event.
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    # The newer version of the same file that no longer contains this episode's text.
    superseded_by_source = models.ForeignKey(
        Source, null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_episodes"
    )

    objects = EpisodeQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["project", "status", "id"]),
            models.Index(fields=["project", "kind"]),
            models.Index(fields=["project", "occurred_at"]),
            # Every retrieval reads the project's latest episode id (documents.head);
            # without it PostgreSQL walks the primary key past other projects' rows.
            models.Index(fields=["project", "id"]),
        ]
        ordering = ["-occurred_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.occurred_at:%Y-%m-%d}"

    @property
    def label_in_force_display(self) -> str:
        """The memory type readers see: a person's correction wins over the automatic label
        (querysets from `with_label_in_force()`; otherwise the original)."""
        return self.MemoryType(getattr(self, "label_in_force", self.memory_type)).label

    @property
    def relabelled(self) -> bool:
        return getattr(self, "label_in_force", self.memory_type) != self.memory_type

    @property
    def excerpt(self) -> str:
        return self.content if len(self.content) <= 240 else self.content[:239] + "…"

    @property
    def locator_label(self) -> str:
        loc = self.locator or {}
        label = loc.get("path", "")
        if "lines" in loc:
            start, end = loc["lines"]
            label += f":{start}" if start == end else f":{start}-{end}"
        if "turn_id" in loc:
            label += f"#{loc['turn_id']}"
        if loc.get("section"):
            label += f" § {loc['section']}"
        return label


class EpisodeRelabel(ImmutableModel):
    """A person's correction of an episode's memory type.

    Episodes are history, so the automatic label stays on the episode as it was read; the
    newest relabel row is the label in force (`Episode.memory_type` is the original).
    """

    episode = models.ForeignKey(Episode, on_delete=models.CASCADE, related_name="relabels")
    memory_type = models.CharField(max_length=24, choices=Episode.MemoryType.choices)
    previous = models.CharField(max_length=24, choices=Episode.MemoryType.choices)
    actor = models.CharField(max_length=200)
    at = models.DateTimeField(default=timezone.now)
    wizard_run_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"#{self.episode_id}: {self.previous} → {self.memory_type}"

    @classmethod
    def in_force(cls, **filters: Any) -> dict[int, str]:
        """Episode id → corrected label, for the relabels `filters` select (newest wins).

        Callers filter by id range or wizard run: an `IN` of a sweep's 100k ids would
        exceed SQLite's parameter limit.
        """
        out: dict[int, str] = {}
        rows = cls.objects.filter(**filters).order_by("id")
        for episode_id, label in rows.values_list("episode_id", "memory_type"):
            out[episode_id] = label
        return out
