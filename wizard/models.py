"""A wizard run: one person's walk through the eight steps, kept so it can be resumed."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from dreaming.models import DreamRun
from llmwiki.models import Project

# (number, slug, title): the slug is the step's URL, the number its place in the indicator.
STEPS = (
    (1, "project", "Project and authority"),
    (2, "import", "Import raw sources"),
    (3, "classify", "Classify memory type"),
    (4, "proposals", "Proposals by page"),
    (5, "preview", "Dream preview"),
    (6, "conflicts", "Conflicts and uncertainties"),
    (7, "commit", "Commit reviewed memory"),
    (8, "exports", "Exports"),
)
STEP_NUMBER = {slug: number for number, slug, _ in STEPS}

Authority = Project.Authority

# What each authority boundary lets the later steps write. Experimental memory stops at
# candidates: nothing it proposes becomes reviewed memory. Handoff/export only writes
# nothing into the project and reads its reviewed layer.
ALLOWED = {
    Authority.REVIEWED: {"import", "relabel", "propose", "preview", "resolve", "commit", "export"},
    Authority.EXPERIMENTAL: {"import", "relabel", "propose", "preview", "export"},
    Authority.HANDOFF: {"export"},
}
ACTION_WORDS = {
    "import": "importing sources",
    "relabel": "relabelling episodes",
    "propose": "generating proposals",
    "preview": "a dream preview",
    "resolve": "resolving conflicts",
    "commit": "committing reviewed memory",
    "export": "generating exports",
}


class WizardRun(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="wizard_runs"
    )
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="wizard_runs"
    )
    boundary = models.CharField(max_length=20, choices=Authority.choices, blank=True)
    # The furthest step shown (where "resume" goes) and the furthest step reached (how far
    # the indicator links: any step up to it may be revisited).
    step = models.PositiveSmallIntegerField(default=1)
    reached = models.PositiveSmallIntegerField(default=1)
    # Per step, what the user chose and what came of it (JSON the step pages render).
    choices = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=dict, blank=True)
    proposal_run = models.ForeignKey(
        DreamRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    preview_run = models.ForeignKey(
        DreamRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return f"Wizard run #{self.pk} (step {self.step})"

    def allows(self, action: str) -> bool:
        return action in ALLOWED.get(self.boundary, set())

    def refusal(self, action: str) -> str:
        """Why the boundary refuses `action`, in words ("" when it allows it)."""
        if self.allows(action):
            return ""
        if not self.boundary:
            return "choose a project and an authority boundary first (step 1)"
        return (
            f"this run's authority boundary is “{self.get_boundary_display()}”: "
            f"it does not allow {ACTION_WORDS[action]}"
        )

    def may_visit(self, number: int) -> bool:
        return number <= self.reached and (number == 1 or self.project_id is not None)

    def result(self, slug: str) -> dict[str, Any]:
        return self.results.get(slug, {})
