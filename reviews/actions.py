"""Candidate decisions: the only path by which anything becomes approved memory.

Every action is one transaction that checks its gates first and changes nothing when it
refuses; a refusal leaves a `review.denied` audit row so attempts are visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from dreaming.models import Candidate, CandidateEvidence
from llmwiki.access import has_role, role_in
from llmwiki.models import (
    AuditEvent,
    Claim,
    Episode,
    Page,
    Project,
    Role,
)
from llmwiki.services import episode_record_system
from llmwiki.wiki import (
    claim_create,
    page_recompile,
    record_change,
)
from reviews.models import Review
from reviews.services import ReviewRefused


@dataclass(frozen=True)
class FormState:
    """What the reviewer saw: a changed candidate or page makes the form stale."""

    candidate_version: int
    page_revision_id: int | None


def form_state(candidate: Candidate) -> FormState:
    page = candidate.page_for()
    return FormState(candidate.version, page.current_revision_id if page else None)


@contextmanager
def _refusals_audited(candidate: Candidate, reviewer: Any, action: str) -> Iterator[None]:
    """Record a refusal after the action's transaction rolled back, so only it remains."""
    try:
        yield
    except ReviewRefused as exc:
        AuditEvent.record(
            actor=reviewer, action="review.denied", obj=candidate, note=f"{action}: {exc}"
        )
        raise


def _check(
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    action: str,
    seen: FormState,
    *,
    sensitive_confirmed: bool = False,
) -> Candidate:
    """Run every gate against the locked, current row; return it."""
    current = Candidate.objects.select_for_update().get(pk=candidate.pk)
    project = current.project
    if not has_role(reviewer, project, Role.REVIEWER):
        raise ReviewRefused("reviewing needs the reviewer role", 403)
    if not current.is_open or current.version != seen.candidate_version:
        raise ReviewRefused(
            f"candidate #{current.pk} is no longer awaiting review as you saw it "
            f"(now {current.status}, version {current.version}); reload and look again",
            409,
        )
    page = current.page_for()
    if action.startswith("approve") and (
        page is None or page.current_revision_id != seen.page_revision_id
    ):
        raise ReviewRefused(
            f"page {current.page_target} changed since you opened this candidate; reload it",
            409,
        )
    if action in {"approve", "approve-edit", "merge"}:
        if current.is_sensitive:
            if role_in(reviewer, project) != Role.MAINTAINER:
                raise ReviewRefused(
                    "restricted or PII-flagged material needs a maintainer",
                    403,
                )
            if not sensitive_confirmed:
                raise ReviewRefused(
                    "confirm that you reviewed the sensitive content (PII / restricted) first",
                    400,
                )
        missing = list(
            CandidateEvidence.objects.filter(candidate=current)
            .filter(episode__source__isnull=True)
            .values_list("episode_id", flat=True)
        )
        if missing or not CandidateEvidence.objects.filter(candidate=current).exists():
            listed = ", ".join(f"#{i}" for i in missing) or "(none)"
            raise ReviewRefused(
                f"provenance incomplete: evidence episode(s) {listed} have no hashed source", 400
            )
        if project.four_eyes and _own_material(current, reviewer):
            raise ReviewRefused(
                "four-eyes rule: you cannot review your own submission",
                403,
            )
    return current


def _own_material(candidate: Candidate, reviewer: AbstractBaseUser) -> bool:
    importers = set(
        CandidateEvidence.objects.filter(candidate=candidate).values_list(
            "episode__source__imported_by", flat=True
        )
    )
    return importers == {reviewer.pk}


def candidate_approve(
    *,
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    seen: FormState,
    edited_text: str | None = None,
    note: str = "",
    sensitive_confirmed: bool = False,
) -> Claim:
    """Approve (optionally with an edit): claim, page revision, MANIFEST, CHANGELOG, audit."""
    action = "approve-edit" if edited_text and edited_text.strip() != candidate.text else "approve"
    with _refusals_audited(candidate, reviewer, action), transaction.atomic():
        current = _check(candidate, reviewer, action, seen, sensitive_confirmed=sensitive_confirmed)
        text = edited_text.strip() if action == "approve-edit" else current.text
        claim = _claim_from(current, text, reviewer)
        revision = page_recompile(
            page=claim.page, actor=reviewer, reason=f"approved candidate #{current.pk}"
        )
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=action,
            note=note,
            before_text=current.text,
            after_text=text,
        )
        current.transition(Candidate.Status.APPROVED, actor=reviewer, note=note, claim=claim)
        record_change(
            project=current.project,
            actor=reviewer,
            summary=f"{claim.page.key}: approved claim {claim.pk}"
            + (" (edited)" if action == "approve-edit" else ""),
            claim=claim,
            revision=revision,
        )
        _approval_episode(current.project, reviewer, claim)
        return claim


def _claim_from(candidate: Candidate, text: str, reviewer: AbstractBaseUser) -> Claim:
    evidence = CandidateEvidence.objects.filter(
        candidate=candidate, role=CandidateEvidence.Role.SUPPORT
    ).values_list("episode_id", flat=True)
    return claim_create(
        page=Page.objects.get(project=candidate.project_id, key=candidate.page_target),
        text=text,
        evidence=evidence,
        reviewer=reviewer,
        section=candidate.section,
        subject_key=candidate.subject_key,
        security_class=candidate.security_class,
        note=f"candidate #{candidate.pk}",
    )


def _approval_episode(project: Project, reviewer: AbstractBaseUser, claim: Claim) -> None:
    episode_record_system(
        project=project,
        actor=f"user:{reviewer.get_username()}",
        kind=Episode.Kind.APPROVAL,
        content=f"Approved claim {claim.pk} on {claim.page.key}.",
        locator={"claim_id": claim.pk},
    )


def _decide(
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    seen: FormState,
    *,
    action: str,
    status: str,
    note: str,
    refuse: Callable[[Candidate], tuple[str, int] | None] = lambda current: None,
) -> None:
    """A decision that ends in a status change and a review row (reject, defer)."""
    with _refusals_audited(candidate, reviewer, action), transaction.atomic():
        current = _check(candidate, reviewer, action, seen)
        if (refusal := refuse(current)) is not None:
            raise ReviewRefused(*refusal)
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=action,
            note=note,
            before_text=current.text,
        )
        current.transition(status, actor=reviewer, note=note)


def candidate_reject(
    *, candidate: Candidate, reviewer: AbstractBaseUser, seen: FormState, reason: str
) -> None:
    _decide(
        candidate,
        reviewer,
        seen,
        action=Review.Action.REJECT,
        status=Candidate.Status.REJECTED,
        note=reason,
        refuse=lambda current: (
            None if reason.strip() else ("say why you reject it (a reason is required)", 400)
        ),
    )


def candidate_defer(
    *, candidate: Candidate, reviewer: AbstractBaseUser, seen: FormState, note: str = ""
) -> None:
    _decide(
        candidate,
        reviewer,
        seen,
        action=Review.Action.DEFER,
        status=Candidate.Status.DEFERRED,
        note=note,
        refuse=lambda current: (
            ("already deferred", 409) if current.status == Candidate.Status.DEFERRED else None
        ),
    )


def candidate_merge(
    *,
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    seen: FormState,
    claim: Claim,
    note: str = "",
    sensitive_confirmed: bool = False,
) -> Claim:
    """Fold a candidate into an existing approved claim: the claim gains its evidence."""
    with _refusals_audited(candidate, reviewer, "merge"), transaction.atomic():
        current = _check(
            candidate, reviewer, "merge", seen, sensitive_confirmed=sensitive_confirmed
        )
        if claim.project_id != current.project_id or not claim.is_approved:
            raise ReviewRefused("merge target must be an approved claim of this project", 400)
        episodes = list(
            CandidateEvidence.objects.filter(candidate=current, role="support").values_list(
                "episode_id", flat=True
            )
        )
        claim.evidence.add(*episodes)
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=Review.Action.MERGE,
            note=note,
            before_text=current.text,
            after_text=claim.text,
        )
        current.transition(Candidate.Status.MERGED, actor=reviewer, note=note, claim=claim)
        AuditEvent.record(
            actor=reviewer,
            action="claim.merge",
            obj=claim,
            after={"candidate": current.pk, "episodes": episodes},
        )
        # The page cites each claim's evidence, so it gains a revision too.
        revision = page_recompile(
            page=claim.page, actor=reviewer, reason=f"merged candidate #{current.pk}"
        )
        record_change(
            project=current.project,
            actor=reviewer,
            summary=f"{claim.page.key}: merged candidate {current.pk} into claim {claim.pk}",
            claim=claim,
            revision=revision,
        )
        return claim
