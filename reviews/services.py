"""Human review: the only path by which anything becomes approved memory.

Every action is one transaction that checks its gates first and changes nothing when it
refuses; a refusal leaves a `review.denied` audit row so attempts are visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.access import has_role, role_in
from llmwiki.models import (
    AuditEvent,
    Claim,
    Episode,
    Page,
    PageKey,
    PageRevision,
    Project,
    Role,
)
from llmwiki.services import episode_record_system
from llmwiki.wiki import (
    claim_create,
    compile_claims_page,
    page_publish,
    page_recompile,
    record_change,
)
from reviews.models import Review


class ReviewRefused(Exception):
    """A gate said no. `status` is the HTTP status a view should answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


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


# --- Claims and pages ------------------------------------------------------------------------


def claim_retract(*, claim: Claim, actor: AbstractBaseUser, reason: str) -> PageRevision | None:
    if not has_role(actor, claim.project, Role.REVIEWER):
        raise ReviewRefused("retracting needs the reviewer role", 403)
    if not reason.strip():
        raise ReviewRefused("say why the claim is retracted", 400)
    with transaction.atomic():
        locked = Claim.objects.select_for_update().get(pk=claim.pk)
        if not locked.is_approved:
            raise ReviewRefused(f"claim {claim.pk} is {locked.status}, not approved", 409)
        locked.transition(Claim.Status.RETRACTED, actor=actor, note=reason)
        revision = page_recompile(
            page=locked.page, actor=actor, reason=f"retracted claim {claim.pk}: {reason}"
        )
        record_change(
            project=locked.project,
            actor=actor,
            summary=f"{locked.page.key}: retracted claim {claim.pk}",
            claim=locked,
            revision=revision,
        )
        return revision


def page_rollback(
    *, page: Page, revision: PageRevision, actor: AbstractBaseUser, reason: str = ""
) -> PageRevision:
    """Publish `revision`'s text again as a new revision; claim states follow it."""
    if not has_role(actor, page.project, Role.MAINTAINER):
        raise ReviewRefused("rolling back a page needs the maintainer role", 403)
    if revision.page_id != page.pk:
        raise ReviewRefused("that revision belongs to another page", 400)
    with transaction.atomic():
        page = Page.objects.select_for_update().get(pk=page.pk)
        current = page.current_revision
        if current is not None and current.pk == revision.pk:
            raise ReviewRefused(f"r{revision.number} is already the current revision", 409)
        target_ids = set(revision.claim_ids)
        current_ids = set(current.claim_ids) if current else set()
        why = f"rollback of {page.key} to r{revision.number}"
        # A claim the target revision does not list leaves the page: rolled back, not
        # superseded, since nothing replaces it. An erased claim stays erased.
        for claim in Claim.objects.filter(pk__in=current_ids - target_ids).approved():
            claim.transition(Claim.Status.ROLLED_BACK, actor=actor, note=why)
        restored = (
            Claim.objects.filter(pk__in=target_ids)
            .exclude(status__in=[Claim.Status.APPROVED, Claim.Status.ERASED])
            .order_by("id")
        )
        for claim in restored:
            claim.transition(Claim.Status.APPROVED, actor=actor, note=why)
        new = page_publish(
            page=page,
            markdown=revision.markdown,
            claim_ids=sorted(target_ids),
            actor=actor,
            reason=f"rollback to r{revision.number}" + (f": {reason}" if reason else ""),
        )
        if new is None:  # same text as now, but the claim states still moved
            new = page.current_revision
        AuditEvent.record(
            actor=actor,
            action="page.rollback",
            obj=page,
            project=page.project,
            before={"revision": current.number if current else None},
            after={"revision": new.number, "restored_from": revision.number},
        )
        record_change(
            project=page.project,
            actor=actor,
            summary=f"{page.key}: rolled back to r{revision.number}",
            revision=new,
        )
        return new


# --- Conflicts ------------------------------------------------------------------------------


def open_questions_markdown(project: Project) -> tuple[str, list[int]]:
    conflicts = (
        Conflict.objects.filter(project=project)
        .unresolved()
        .prefetch_related("sides__evidence")
        .select_related("owner")
        .order_by("detected_at", "id")
    )
    lines = ["# Open questions", ""]
    claim_ids: list[int] = []
    if not conflicts:
        lines += ["_No open questions._", ""]
    for c in conflicts:
        lines += [f"## {c.subject}", ""]
        kind = c.get_kind_display().lower()
        lines.append(f"_Conflict {c.pk} ({kind}), detected {c.detected_at:%Y-%m-%d}._")
        if c.status == Conflict.Status.ESCALATED:
            owner = c.owner.get_username() if c.owner else "unassigned"
            due = f", due {c.due:%Y-%m-%d}" if c.due else ""
            lines.append(f"_Escalated: owner {owner}{due}._")
        lines.append("")
        for side in c.sides.all():
            text = " ".join(side.text.split())
            lines.append(f"- {text} _({side.evidence.count()} evidence)_")
            if side.claim_id:
                claim_ids.append(side.claim_id)
        lines.append("")
    return "\n".join(lines), claim_ids


def open_questions_publish(*, project: Project, actor: Any, reason: str) -> PageRevision | None:
    page, _ = Page.objects.get_or_create(
        project=project,
        key=PageKey.OPEN_QUESTIONS,
        defaults={"title": PageKey.OPEN_QUESTIONS.label},
    )
    markdown, claim_ids = open_questions_markdown(project)
    return page_publish(
        page=page, markdown=markdown, claim_ids=claim_ids, actor=actor, reason=reason
    )


def conflict_resolve(
    *,
    conflict: Conflict,
    actor: AbstractBaseUser,
    resolution: str,
    note: str = "",
    winner: int | None = None,
    merged_text: str = "",
    scopes: dict[int, str] | None = None,
    owner: AbstractBaseUser | None = None,
    due: date | None = None,
) -> Conflict:
    """Resolve (or escalate) a conflict; OPEN_QUESTIONS is recompiled from what stays open."""
    if not has_role(actor, conflict.project, Role.REVIEWER):
        raise ReviewRefused("resolving conflicts needs the reviewer role", 403)
    if resolution not in Conflict.Resolution.values:
        raise ReviewRefused(f"unknown resolution {resolution!r}", 400)
    with transaction.atomic():
        locked = Conflict.objects.select_for_update().get(pk=conflict.pk)
        if locked.status == Conflict.Status.RESOLVED:
            raise ReviewRefused(f"conflict {conflict.pk} is already resolved", 409)
        sides = list(locked.sides.select_related("claim").prefetch_related("evidence"))
        now = timezone.now()
        R = Conflict.Resolution
        if resolution == R.ESCALATE:
            if owner is None:
                raise ReviewRefused("an escalated question needs an owner", 400)
            locked.status = Conflict.Status.ESCALATED
            locked.owner, locked.due = owner, due
        else:
            if resolution == R.ACCEPT_NEW:
                _accept_side(locked, sides, winner, actor)
            elif resolution == R.MERGE:
                if not merged_text.strip():
                    raise ReviewRefused("merging needs the merged text", 400)
                _supersede_with(locked, sides, merged_text.strip(), actor)
            elif resolution == R.BOTH_VALID:
                scopes = scopes or {}
                if any(not scopes.get(s.position, "").strip() for s in sides):
                    raise ReviewRefused("say for each side in which scope it holds", 400)
                for s in sides:
                    ConflictSide.objects.filter(pk=s.pk).update(
                        scope_note=scopes[s.position].strip()[:300]
                    )
            locked.status = Conflict.Status.RESOLVED
            locked.resolved_at, locked.resolved_by = now, actor
        locked.resolution = resolution
        locked.resolution_note = note
        locked.save()
        AuditEvent.record(
            actor=actor,
            action=f"conflict.{resolution}",
            obj=locked,
            after={
                "status": locked.status,
                "age_hours": round((now - locked.detected_at).total_seconds() / 3600, 1),
            },
            note=note,
        )
        open_questions_publish(
            project=locked.project, actor=actor, reason=f"conflict {locked.pk}: {resolution}"
        )
        record_change(
            project=locked.project,
            actor=actor,
            summary=f"OPEN_QUESTIONS: conflict {locked.pk} {resolution}",
        )
        return locked


def _accept_side(conflict: Conflict, sides: list[ConflictSide], winner: int | None, actor) -> None:
    """Accept side `winner` (a position); it supersedes the claim on the other side, if any."""
    chosen = next((s for s in sides if s.position == winner), None)
    if chosen is None:
        raise ReviewRefused("choose which side to accept", 400)
    _supersede_with(
        conflict, [s for s in sides if s is not chosen], chosen.text, actor, evidence_from=chosen
    )


def _supersede_with(
    conflict: Conflict, losing: list[ConflictSide], text: str, actor, evidence_from=None
) -> None:
    old = next((s.claim for s in losing if s.claim and s.claim.is_approved), None)
    if old is None:
        return  # nothing approved to replace: the accepted side goes through normal review
    episodes = [e.pk for e in (evidence_from.evidence.all() if evidence_from else [])]
    episodes += [e.pk for s in losing for e in s.evidence.all()] if evidence_from is None else []
    new = claim_create(
        page=old.page,
        text=text,
        evidence=set(episodes) | set(old.evidence.values_list("id", flat=True)),
        reviewer=actor,
        supersedes=old,
        note=f"conflict {conflict.pk}",
    )
    revision = page_recompile(
        page=old.page,
        actor=actor,
        reason=f"conflict {conflict.pk}: claim {old.pk} superseded by {new.pk}",
    )
    record_change(
        project=old.project,
        actor=actor,
        summary=f"{old.page.key}: claim {new.pk} supersedes {old.pk}",
        claim=new,
        revision=revision,
    )


__all__ = [
    "FormState",
    "ReviewRefused",
    "candidate_approve",
    "candidate_defer",
    "candidate_merge",
    "candidate_reject",
    "claim_retract",
    "compile_claims_page",
    "conflict_resolve",
    "form_state",
    "page_rollback",
]
