"""Projects and who may do what in them."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone


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
