"""Dream runs, the candidates they propose, and the conflicts they detect."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.functional import cached_property

from dreaming import review_actions
from dreaming.engine.policy import SIGNALS
from llmwiki import access
from llmwiki.models import AuditEvent, Claim, Episode, Page, Project, SecurityClass

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    from dreaming.engine.policy import Policy


class DreamRun(models.Model):
    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Schedule"
        MANUAL = "manual", "Manual"
        PREVIEW = "preview", "Preview"
        BACKFILL = "backfill", "Backfill"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        NOOP = "noop", "Nothing to do"
        FAILED = "failed", "Failed"
        ABANDONED = "abandoned", "Abandoned"

    OPEN_STATUSES = (Status.QUEUED, Status.RUNNING)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="dream_runs")
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    phases = models.JSONField(default=dict, blank=True, help_text="{phase: {status, ms, …}}")
    counts = models.JSONField(default=dict, blank=True)
    watermark_before = models.BigIntegerField(null=True, blank=True)
    watermark_after = models.BigIntegerField(null=True, blank=True)
    backfill_from = models.DateField(null=True, blank=True)
    backfill_to = models.DateField(null=True, blank=True)
    # A sweep of one wizard run's material (llmwiki Episode.wizard_run_id), else None.
    wizard_run_id = models.BigIntegerField(null=True, blank=True)
    bytes_read = models.BigIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    diary = models.TextField(blank=True)
    preview = models.JSONField(null=True, blank=True, help_text="What a preview would do.")
    # Our own lease and attempt counter: django-q2 redelivers a task whose worker died,
    # and would do so forever; the lease expiry frees the project, the cap gives up.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project"],
                condition=Q(status__in=["queued", "running"]),
                name="one_open_dream_run_per_project",
            )
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"Dream run #{self.pk} ({self.trigger}, {self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES

    @property
    def is_preview(self) -> bool:
        return self.trigger == self.Trigger.PREVIEW


@dataclass(frozen=True)
class SignalRow:
    """One line of a candidate's score: the signal, its weight and what it added."""

    name: str
    value: float
    weight: float
    contribution: float


class CandidateQuerySet(models.QuerySet):
    def for_project(self, project: Project) -> CandidateQuerySet:
        return self.filter(project=project)

    def open(self) -> CandidateQuerySet:
        return self.filter(status__in=Candidate.OPEN_STATUSES)


class Candidate(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        DEFERRED = "deferred", "Deferred"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        MERGED = "merged", "Merged"
        SUPERSEDED = "superseded", "Superseded"
        BLOCKED = "blocked", "Blocked"
        QUARANTINED = "quarantined", "Quarantined"

    class Lifecycle(models.TextChoices):
        ACTIVE = "active", "Active"
        WAITING = "waiting", "Waiting"
        DONE = "done", "Done"
        ARCHIVED = "archived", "Archived"
        CLOSED = "closed", "Closed"
        SNOOZED = "snoozed", "Snoozed"

    OPEN_STATUSES = (Status.PROPOSED, Status.DEFERRED)
    TRANSITIONS: dict[str, set[str]] = {
        Status.PROPOSED: {
            Status.DEFERRED,
            Status.APPROVED,
            Status.REJECTED,
            Status.MERGED,
            Status.SUPERSEDED,
            Status.BLOCKED,
            Status.QUARANTINED,
        },
        Status.DEFERRED: {Status.PROPOSED, Status.APPROVED, Status.REJECTED, Status.MERGED},
        Status.BLOCKED: {Status.PROPOSED, Status.REJECTED},
        Status.QUARANTINED: {Status.PROPOSED, Status.REJECTED},
        Status.APPROVED: {Status.SUPERSEDED},
        Status.REJECTED: set(),
        Status.MERGED: set(),
        Status.SUPERSEDED: set(),
    }

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="candidates")
    run = models.ForeignKey(
        DreamRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates"
    )
    text = models.TextField()
    page_target = models.CharField(max_length=64)
    section = models.CharField(max_length=200, blank=True)
    route_reason = models.CharField(max_length=300, blank=True)
    memory_type = models.CharField(max_length=24, choices=Episode.MemoryType.choices)
    score = models.FloatField(default=0.0)
    # The sweep's order within its cap (support and how much the text reads as a claim):
    # the queue lists candidates in it, so a reviewer meets them as the sweep ranked them.
    rank = models.FloatField(default=0.0)
    signals = models.JSONField(default=dict, blank=True)
    lifecycle = models.CharField(max_length=10, choices=Lifecycle.choices, default=Lifecycle.ACTIVE)
    flags = models.JSONField(default=list, blank=True)
    security_class = models.CharField(
        max_length=10, choices=SecurityClass.choices, default=SecurityClass.INTERNAL
    )
    dedupe_key = models.CharField(max_length=64)
    subject_key = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PROPOSED)
    blocked_reason = models.CharField(max_length=300, blank=True)
    claim = models.ForeignKey(
        Claim, null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates"
    )
    # Bumped on every change: a review form carries it, and a stale one is refused.
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    episodes = models.ManyToManyField(Episode, through="CandidateEvidence", related_name="+")

    objects = CandidateQuerySet.as_manager()

    class Meta:
        constraints = [
            # At-least-once task delivery and reruns must not duplicate proposals.
            models.UniqueConstraint(fields=["project", "dedupe_key"], name="one_candidate_per_key")
        ]
        indexes = [
            models.Index(fields=["project", "status", "-score"]),
            models.Index(fields=["project", "status", "-rank"], name="dreaming_ca_rank_idx"),
        ]
        ordering = ["-score", "id"]

    def __str__(self) -> str:
        return f"Candidate #{self.pk} → {self.page_target} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES

    @property
    def is_sensitive(self) -> bool:
        """Restricted or PII/secret-flagged: only a maintainer may approve or merge it."""
        return access.is_sensitive(self.security_class, self.flags)

    def page_for(self) -> Page | None:
        """The project page this candidate would land on, if the project has it."""
        return Page.objects.filter(project=self.project_id, key=self.page_target).first()

    def get_actions(self, user: AbstractBaseUser | AnonymousUser) -> list[str]:
        """The review actions the user may take now (Wagtail's get_actions): the names of
        `dreaming.review_actions`, none when they would be refused anyway."""
        return [a.name for a in review_actions.offered_to(self, user)]

    def on_action(
        self, name: str, user: AbstractBaseUser, seen: Any, decision: review_actions.Decision
    ) -> review_actions.Outcome:
        """Take the review action `name` (Wagtail's on_action), through its gates."""
        action = review_actions.get(name)
        if action is None:
            raise LookupError(f"no review action {name!r}")
        return action.perform(self, user, seen, decision)

    def signal_rows(self, policy: Policy) -> list[SignalRow]:
        """The score broken down per signal under `policy`'s weights, in signal order."""
        weights = policy.weights.as_dict()
        return [
            SignalRow(
                name=name,
                value=self.signals.get(name, 0.0),
                weight=weights[name],
                contribution=self.signals.get(f"{name}.w", 0.0),
            )
            for name in SIGNALS
        ]

    @cached_property
    def queued_by(self) -> Conflict | None:
        """The conflict whose resolution queued this text: a reviewer's decision, no sweep.

        A sweep's candidate names its run (even one a resolution later accepted as it
        stands); only a resolution builds a candidate without one.
        """
        if self.run_id is not None:
            return None
        # An accepted or merged text is the conflict's accepted candidate; a side valid
        # in its scope is that side's candidate.
        return (
            Conflict.objects.filter(project=self.project_id)
            .filter(Q(accepted_candidate=self) | Q(sides__candidate=self))
            .select_related("resolved_by")
            .first()
        )

    def admission(self, policy: Policy) -> str:
        """Which rule let the sweep propose this candidate, in words, with its numbers."""
        if conflict := self.queued_by:
            by = conflict.resolved_by.get_username() if conflict.resolved_by else "a reviewer"
            when = f" on {conflict.resolved_at:%Y-%m-%d}" if conflict.resolved_at else ""
            return (
                f"a reviewer's resolution of conflict #{conflict.pk} "
                f"({conflict.get_resolution_display().lower()}, by {by}{when}), not a dream "
                "sweep: nothing scored it, so the evidence and score thresholds do not apply"
            )
        got = self.signals
        if "authority" in got:
            return (
                f"source authority: written once in a source trusted {got['authority']:g} "
                f"(at least {policy.authority_trust:g} is reference material); the "
                f"{policy.min_evidence}-evidence rule applies to chat and logs"
            )
        return (
            f"independent evidence: {got.get('evidence', 0):g} episodes on "
            f"{got.get('days', 0):g} day(s) (at least {policy.min_evidence} needed), "
            f"score {self.score:.3f} (at least {policy.min_score:g})"
        )

    @property
    def moved_by_reviewers(self) -> str | None:
        """Why the project's reviewers moved this candidate in the queue, in words."""
        got = self.signals
        shift = got.get("worth.reviewers")
        if not shift:
            return None
        side, ids = ("down", "rejected") if shift < 0 else ("up", "approved")
        similar = got.get(f"reviewers.{ids}") or []
        named = ", ".join(f"#{i}" for i in similar) or "none by name"
        return (
            f"ranked {side}: reviewers {ids} similar candidates {named} "
            f"(claim-worthiness {got.get('worth.model', 0):.2f} → {got.get('worth', 0):.2f})"
        )

    @property
    def signal_counts(self) -> dict[str, float]:
        """The evidence counts the sweep kept beside the signals (evidence, days, contexts)."""
        return {
            k: v
            for k, v in self.signals.items()
            if k not in SIGNALS and "." not in k and k != "authority"
        }

    def can_transition(self, to: str) -> bool:
        return to in self.TRANSITIONS[self.status]

    def transition(
        self, to: str, *, actor: Any, note: str = "", locked: bool = False, **changes: Any
    ) -> None:
        """Move to status `to` atomically, bumping the version and writing an audit event.

        `locked` says this instance is the row the caller already holds with
        select_for_update in its transaction, so it is not read and locked again.
        """
        with transaction.atomic():
            locked = self if locked else Candidate.objects.select_for_update().get(pk=self.pk)
            if locked.version != self.version or not locked.can_transition(to):
                raise ValidationError(
                    f"candidate #{self.pk} is {locked.status} (version {locked.version}); "
                    f"cannot move to {to}"
                )
            before = {"status": locked.status, "version": locked.version}
            self.status = to
            self.version = locked.version + 1
            self.updated_at = timezone.now()
            for field, value in changes.items():
                setattr(self, field, value)
            self.save(update_fields=["status", "version", "updated_at", *changes])
            AuditEvent.record(
                actor=actor,
                action=f"candidate.{to}",
                obj=self,
                before=before,
                after={"status": to, "version": self.version},
                note=note,
            )


class CandidateEvidence(models.Model):
    class Role(models.TextChoices):
        SUPPORT = "support", "Supports"
        CONTRADICT = "contradict", "Contradicts"

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="evidence")
    episode = models.ForeignKey(Episode, on_delete=models.PROTECT, related_name="+")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.SUPPORT)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["candidate", "episode"], name="one_evidence_row")
        ]

    def __str__(self) -> str:
        return f"episode #{self.episode_id} {self.role}s candidate #{self.candidate_id}"


class CandidateTerm(models.Model):
    """One grouping term of a candidate awaiting review, as a 64-bit hash of the term.

    A sweep asks which waiting candidates share its drafts' rare terms (a restatement
    shares them) through this index, instead of reading and parsing every waiting
    candidate's text each run. Rows live only while their candidate waits: a sweep drops
    those of decided candidates, so the table follows the review queue. A candidate with
    no term keeps one row of key 0, so it is not parsed again.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="terms")
    key = models.BigIntegerField()

    class Meta:
        constraints = [
            # A run whose lease lapsed may still index beside the run that took over.
            models.UniqueConstraint(fields=["candidate", "key"], name="one_row_per_term")
        ]
        indexes = [models.Index(fields=["project", "key"], name="dreaming_term_key_idx")]

    def __str__(self) -> str:
        return f"term {self.key} of candidate #{self.candidate_id}"


class ConflictQuerySet(models.QuerySet):
    def unresolved(self) -> ConflictQuerySet:
        """Open and escalated conflicts: what OPEN_QUESTIONS lists."""
        return self.exclude(status=Conflict.Status.RESOLVED)


class Conflict(models.Model):
    class Kind(models.TextChoices):
        VALUE = "value", "Different value"
        REVERSAL = "reversal", "Reversal"
        NEGATION = "negation", "Negation"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        ESCALATED = "escalated", "Escalated (open question)"
        RESOLVED = "resolved", "Resolved"

    class Resolution(models.TextChoices):
        KEEP_EXISTING = "keep-existing", "Keep existing"
        ACCEPT_NEW = "accept-new", "Accept new (supersede)"
        BOTH_VALID = "both-valid", "Both valid in different scopes"
        MERGE = "merge", "Merge"
        ESCALATE = "escalate", "Escalate as open question"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="conflicts")
    run = models.ForeignKey(
        DreamRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="conflicts"
    )
    subject = models.CharField(max_length=300)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    dedupe_key = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    detected_at = models.DateTimeField(default=timezone.now)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    due = models.DateField(null=True, blank=True)
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    resolution_note = models.TextField(blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Where an accepted (or merged) text went: an approved claim, or a candidate in the queue.
    accepted_position = models.PositiveSmallIntegerField(null=True, blank=True)
    accepted_claim = models.ForeignKey(
        Claim, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    accepted_candidate = models.ForeignKey(
        "Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The resolved conflict this one raises again: a sweep re-opens a resolved dispute only
    # with evidence its resolution did not weigh.
    reopens = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reopened_by"
    )

    objects = ConflictQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "dedupe_key"], name="one_conflict_per_key")
        ]
        ordering = ["-detected_at", "-id"]

    def __str__(self) -> str:
        return f"Conflict #{self.pk}: {self.subject}"


class ConflictSide(models.Model):
    conflict = models.ForeignKey(Conflict, on_delete=models.CASCADE, related_name="sides")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()
    claim = models.ForeignKey(Claim, null=True, blank=True, on_delete=models.SET_NULL)
    candidate = models.ForeignKey(Candidate, null=True, blank=True, on_delete=models.SET_NULL)
    evidence = models.ManyToManyField(Episode, related_name="+", blank=True)
    scope_note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["conflict", "position"], name="one_side_per_position")
        ]

    def __str__(self) -> str:
        return f"side {self.position} of conflict #{self.conflict_id}"

    @property
    def cited_evidence(self) -> list[Episode]:
        """The episodes the side rests on: its own, and those of the claim it is.

        A side that is an approved claim carries no episodes of its own; its claim's
        evidence is what a reader weighs. Reads the prefetched `evidence` and
        `claim__evidence`.
        """
        episodes = {e.pk: e for e in self.evidence.all()}
        if self.claim_id:
            for e in self.claim.evidence.all():
                episodes.setdefault(e.pk, e)
        return sorted(episodes.values(), key=lambda e: e.pk)

    @property
    def labels(self) -> access.Labels:
        """What clearance reads for this side's text: an approved claim's own labels (it
        inherits its evidence's), else the strictest of the candidate and the evidence quoted.
        Prefetch `claim` or `candidate` and `evidence` when reading many."""
        if self.claim_id:
            return side_labels(self.claim, None, ())
        return side_labels(None, self.candidate, self.evidence.all())


def side_labels(claim: Any, candidate: Any, evidence: Iterable[Any]) -> access.Labels:
    """The labels of a conflict side from its parts (rows, dicts or `Labels`): the approved
    claim's own when it is one, else the strictest of its candidate and quoted evidence."""
    if claim is not None:
        return access.Labels.of(claim)
    return access.Labels.strictest([candidate, *evidence])


class WorkerHeartbeat(models.Model):
    """Last time a django-q2 worker ran the heartbeat task: "blocked" means it is stale."""

    name = models.CharField(max_length=40, primary_key=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} seen {self.seen_at:%Y-%m-%d %H:%M:%S}"
