"""Review decisions: immutable records of what a human decided about a candidate."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from dreaming.models import Candidate
from llmwiki.models import ImmutableModel


class Review(ImmutableModel):
    class Action(models.TextChoices):
        APPROVE = "approve", "Approve"
        APPROVE_EDIT = "approve-edit", "Approve as edited"
        REJECT = "reject", "Reject"
        DEFER = "defer", "Defer"
        MERGE = "merge", "Merge"

    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    action = models.CharField(max_length=14, choices=Action.choices)
    note = models.TextField(blank=True)
    before_text = models.TextField()
    after_text = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} of candidate #{self.candidate_id} by {self.reviewer}"
