"""The core domain: projects, the raw and episodic layers, the reviewed wiki, audit.

Dependencies point one way (wizard → reviews → dreaming → llmwiki): nothing here imports
the other apps. Rows that are history (episodes, page revisions, audit events) are
immutable after insert; corrections are new rows.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone


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


# --- Projects and access ---------------------------------------------------------------


def default_policy() -> dict:
    return {}


class Project(models.Model):
    class Authority(models.TextChoices):
        REVIEWED = "reviewed-memory", "Reviewed memory"
        EXPERIMENTAL = "experimental", "Experimental"
        HANDOFF = "handoff-only", "Handoff only"

    slug = models.SlugField(
        max_length=64,
        unique=True,
        validators=[RegexValidator(r"^[a-z0-9][a-z0-9-]*$", "Use lowercase letters, digits, -")],
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    authority = models.CharField(
        max_length=20, choices=Authority.choices, default=Authority.REVIEWED
    )
    dreaming_enabled = models.BooleanField(default=True)
    dream_schedule = models.CharField(max_length=100, default="0 3 * * *")
    dream_policy = models.JSONField(default=default_policy, blank=True)
    # Highest episode id a (non-backfill) sweep has read: insertion order, so episodes
    # that arrive late with an old occurred_at are still picked up.
    dream_watermark = models.BigIntegerField(default=0)
    four_eyes = models.BooleanField(
        default=False, help_text="Nobody approves a candidate built only from their own material."
    )
    restricted_clearance = models.CharField(
        max_length=20,
        choices=[("reviewer", "Reviewers and maintainers"), ("maintainer", "Maintainers only")],
        default="reviewer",
        help_text="Who may read restricted or PII-flagged text; everyone else sees it withheld.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("project_home", args=[self.slug])

    def clean(self) -> None:
        from croniter import croniter

        if not croniter.is_valid(self.dream_schedule):
            raise ValidationError(
                {"dream_schedule": f"not a cron expression: {self.dream_schedule!r}"}
            )


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    CONTRIBUTOR = "contributor", "Contributor"
    REVIEWER = "reviewer", "Reviewer"
    MAINTAINER = "maintainer", "Maintainer"


ROLE_RANK = {Role.VIEWER: 0, Role.CONTRIBUTOR: 1, Role.REVIEWER: 2, Role.MAINTAINER: 3}


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="one_membership_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.project} · {self.role}"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]


# --- Raw layer ---------------------------------------------------------------------------


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


class Episode(ImmutableModel):
    class Kind(models.TextChoices):
        NOTE = "note", "Note"
        LOG_ENTRY = "log_entry", "Log entry"
        CHAT_TURN = "chat_turn", "Chat turn"
        DECISION = "decision", "Decision"
        TOOL_CALL = "tool_call", "Tool call"
        PAGE_SECTION = "page_section", "Page section"
        EVENT = "event", "Event"
        EDIT = "edit", "Edit"
        APPROVAL = "approval", "Approval"
        RETRIEVAL = "retrieval", "Retrieval"
        SOURCE_INGEST = "source_ingest", "Source ingest"

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
    BOOKKEEPING_KINDS = (Kind.APPROVAL, Kind.RETRIEVAL, Kind.SOURCE_INGEST)

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
        ]
        ordering = ["-occurred_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind} {self.occurred_at:%Y-%m-%d}"

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


# --- Reviewed semantic layer -------------------------------------------------------------


class PageKey(models.TextChoices):
    SYSTEM_OVERVIEW = "SYSTEM_OVERVIEW", "System overview"
    DECISION_LOG = "DECISION_LOG", "Decision log"
    OPEN_QUESTIONS = "OPEN_QUESTIONS", "Open questions"
    RUNBOOKS = "RUNBOOKS", "Runbooks"
    GOVERNANCE = "GOVERNANCE", "Governance"
    GLOSSARY = "GLOSSARY", "Glossary"
    AGENT_INSTRUCTIONS = "AGENT_INSTRUCTIONS", "Agent instructions"
    TRUST_MODEL = "TRUST_MODEL", "Trust model"
    README = "README", "Readme"
    INDEX = "INDEX", "Index"


class Page(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pages")
    key = models.CharField(
        max_length=64,
        validators=[RegexValidator(r"^[A-Z][A-Z0-9_]*$", "Page keys are UPPER_SNAKE_CASE")],
    )
    title = models.CharField(max_length=200)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    review_cadence_days = models.PositiveIntegerField(default=90)
    last_reviewed_at = models.DateTimeField(null=True, blank=True)
    current_revision = models.ForeignKey(
        "PageRevision", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="one_page_per_key")]
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.key}"

    @property
    def is_stale(self) -> bool:
        if self.last_reviewed_at is None:
            return True
        age = timezone.now() - self.last_reviewed_at
        return age.days > self.review_cadence_days


class PageRevision(ImmutableModel):
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="revisions")
    number = models.PositiveIntegerField()
    markdown = models.TextField()
    content_hash = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="children"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT
    )
    reason = models.CharField(max_length=500)
    claim_ids = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["page", "number"], name="one_revision_number_per_page")
        ]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.page} r{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.content_hash = sha256_hex(self.markdown)
        super().save(*args, **kwargs)


class ClaimQuerySet(models.QuerySet):
    def approved(self) -> ClaimQuerySet:
        """Claims that are current reviewed memory."""
        return self.filter(status=Claim.Status.APPROVED)


class Claim(models.Model):
    class Status(models.TextChoices):
        APPROVED = "approved", "Approved"
        SUPERSEDED = "superseded", "Superseded"
        RETRACTED = "retracted", "Retracted"
        ROLLED_BACK = "rolled-back", "Rolled back"
        ERASED = "erased", "Erased"

    # A page rollback may bring back any claim its target revision listed, so every state
    # but erased can return to approved; erasure ends everything.
    TRANSITIONS: dict[str, set[str]] = {
        Status.APPROVED: {Status.SUPERSEDED, Status.RETRACTED, Status.ROLLED_BACK, Status.ERASED},
        Status.SUPERSEDED: {Status.APPROVED, Status.ERASED},
        Status.RETRACTED: {Status.APPROVED, Status.ERASED},
        Status.ROLLED_BACK: {Status.APPROVED, Status.ERASED},
        Status.ERASED: set(),
    }

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="claims")
    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="claims")
    section = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    version = models.PositiveIntegerField(default=1)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    evidence = models.ManyToManyField(Episode, related_name="claims", blank=True)
    source_refs = models.JSONField(
        default=list, blank=True, help_text="[{source_id, sha256, path, locator}]"
    )
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    approved_at = models.DateTimeField(default=timezone.now)
    review_by = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.APPROVED)
    subject_key = models.CharField(max_length=200, blank=True, db_index=True)
    security_class = models.CharField(
        max_length=10, choices=SecurityClass.choices, default=SecurityClass.INTERNAL
    )

    objects = ClaimQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["project", "status"])]
        ordering = ["page__key", "section", "id"]

    def __str__(self) -> str:
        return f"Claim #{self.pk} v{self.version}"

    @property
    def is_approved(self) -> bool:
        return self.status == self.Status.APPROVED

    def can_transition(self, to: str) -> bool:
        return to in self.TRANSITIONS[self.status]

    def transition(
        self, to: str, *, actor: Any, note: str = "", after: dict | None = None, **changes: Any
    ) -> None:
        """Move to status `to` on the locked row and write its audit event (the one writer)."""
        with transaction.atomic():
            locked = Claim.objects.select_for_update().get(pk=self.pk)
            if not locked.can_transition(to):
                raise ValidationError(f"claim {self.pk} is {locked.status}; cannot move to {to}")
            before = {"status": locked.status}
            self.status = to
            for field, value in changes.items():
                setattr(self, field, value)
            self.save(update_fields=["status", *changes])
            AuditEvent.record(
                actor=actor,
                action=f"claim.{to}",
                obj=self,
                before=before,
                after={"status": to, **(after or {})},
                note=note,
            )


class Export(models.Model):
    class Kind(models.TextChoices):
        SYSTEM_PROFILE = "system-profile", "System profile"
        RECEIVER_BRIEF = "receiver-brief", "Receiver brief"
        STARTUP_PACKET = "startup-packet", "Startup packet"
        HANDOFF = "handoff", "Handoff bundle"
        BUNDLE = "bundle", "Starter bundle"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    audience = models.CharField(max_length=10, choices=SecurityClass.choices)
    generated_at = models.DateTimeField(default=timezone.now)
    generated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    generator_version = models.CharField(max_length=40)
    files = models.JSONField(default=list, help_text="[{name, sha256, size}]")
    manifest_sha256 = models.CharField(max_length=64)
    path = models.CharField(max_length=1000, help_text="Directory under the data directory.")
    claims = models.ManyToManyField(Claim, related_name="exports", blank=True)
    revisions = models.ManyToManyField(PageRevision, related_name="exports", blank=True)

    class Meta:
        ordering = ["-generated_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} for {self.audience} ({self.generated_at:%Y-%m-%d %H:%M})"

    def is_stale(self) -> bool:
        """Stale when any claim it depends on is no longer approved or a page moved on."""
        if self.claims.exclude(status=Claim.Status.APPROVED).exists():
            return True
        return self.revisions.exclude(
            pk__in=Page.objects.filter(project=self.project).values("current_revision")
        ).exists()


class RecallTrace(models.Model):
    """A retrieval: the relevance and query-diversity signals of dreaming come from here."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="recall_traces")
    query = models.CharField(max_length=1000)
    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200)
    claim_ids = models.JSONField(default=list)
    episode_ids = models.JSONField(default=list)
    scores = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["project", "at"])]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.actor}: {self.query[:60]}"


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


class ManifestVersion(ImmutableModel):
    """The project's MANIFEST: which revision of each page and which claims are current."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="manifests")
    number = models.PositiveIntegerField()
    content = models.JSONField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="one_manifest_number")
        ]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.project.slug} MANIFEST v{self.number}"


class ChangelogEntry(ImmutableModel):
    """One line of the project's CHANGELOG: what reviewed memory changed and why."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="changelog")
    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200)
    summary = models.CharField(max_length=500)
    claim = models.ForeignKey(Claim, null=True, blank=True, on_delete=models.PROTECT)
    revision = models.ForeignKey(PageRevision, null=True, blank=True, on_delete=models.PROTECT)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d} {self.summary}"
