"""The reviewed semantic layer: pages, their revisions, claims, and what is built from them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.utils import timezone

from llmwiki import vocabulary
from llmwiki.models.audit import AuditEvent
from llmwiki.models.base import ImmutableModel, sha256_hex
from llmwiki.models.episodes import Episode, SecurityClass
from llmwiki.models.projects import Project

# Members named as the keys (PageKey.SYSTEM_OVERVIEW), labelled with the page titles.
PageKey = models.TextChoices("PageKey", [(p.key, (p.key, p.title)) for p in vocabulary.PAGES])


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

    def approved_on(self, project: Project | int, moment: datetime) -> ClaimQuerySet:
        """The project's claims that were approved memory at `moment`, read from the audit
        log: a claim rolled back and brought back again has two spans, which one pair of
        dates could not tell apart. Erased claims are gone from every date."""
        events = AuditEvent.objects.filter(
            project=project, object_type="Claim", at__lte=moment, action__in=STATUS_ACTIONS
        ).order_by("at", "id")
        last: dict[str, str] = {}
        for object_id, action in events.values_list("object_id", "action").iterator():
            last[object_id] = action
        approved = Claim.Status.APPROVED
        held = [int(pk) for pk, action in last.items() if STATUS_ACTIONS[action] == approved]
        return self.filter(project=project, pk__in=held).exclude(status=Claim.Status.ERASED)


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
    # The highest class of its evidence and their PII and secret flags: what clearance
    # (`llmwiki.access`) reads, so approved text is never shown above its evidence's class.
    security_class = models.CharField(
        max_length=10, choices=SecurityClass.choices, default=SecurityClass.INTERNAL
    )
    flags = models.JSONField(default=list, blank=True)
    # Two time axes. Recorded: from `approved_at` until `retired_at`, the decision that
    # superseded, retracted, rolled back or erased it (null while approved). Held: when
    # what it says was true as its evidence tells, from the earliest evidence's occurrence
    # until the evidence of the claim that superseded it (null where nobody said).
    retired_at = models.DateTimeField(null=True, blank=True)
    held_from = models.DateTimeField(null=True, blank=True)
    held_until = models.DateTimeField(null=True, blank=True)

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
            if to == Claim.Status.APPROVED:
                changes["retired_at"] = None
            elif locked.status == Claim.Status.APPROVED:
                changes["retired_at"] = timezone.now()
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

    def supersession_chain(self) -> list[Claim]:
        """Every version of this claim, oldest first, through `supersedes` both ways: two
        queries however long the chain (one when nothing supersedes or is superseded)."""
        links = dict(
            Claim.objects.filter(project=self.project_id, supersedes__isnull=False).values_list(
                "supersedes_id", "id"
            )
        )
        back = {new: old for old, new in links.items()}
        ids = [self.pk]
        while ids[0] in back:
            ids.insert(0, back[ids[0]])
        while ids[-1] in links:
            ids.append(links[ids[-1]])
        if len(ids) == 1:
            return [self]
        rows = Claim.objects.in_bulk(ids)
        return [rows[pk] for pk in ids]


# The audit actions that set a claim's status, and the status each leaves it in.
STATUS_ACTIONS = {
    "claim.approve": Claim.Status.APPROVED,
    **{f"claim.{status}": status for status in Claim.Status.values},
}


class Export(models.Model):
    """A stored export. Whether it is stale is `reviews.exports.service.stale_reasons`:
    that reads open questions, which live in `dreaming`, above this app."""

    Kind = models.TextChoices(
        "Kind",
        [(v.upper().replace("-", "_"), (v, lab)) for v, lab in vocabulary.stored_export_kinds()],
    )

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


class RecallTrace(models.Model):
    """A retrieval: the relevance and query-diversity signals of dreaming come from here."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="recall_traces")
    query = models.CharField(max_length=1000)
    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=200)
    claim_ids = models.JSONField(default=list)
    episode_ids = models.JSONField(default=list)
    scores = models.JSONField(default=list)
    duration_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="Wall time of the retrieval, for the latency figures."
    )

    class Meta:
        indexes = [models.Index(fields=["project", "at"])]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.actor}: {self.query[:60]}"


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
