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
from llmwiki.access import Do, may, role_in
from llmwiki.models import (
    AuditEvent,
    Claim,
    Episode,
    Page,
    PageRevision,
    Project,
)
from llmwiki.record import episode_record_system
from llmwiki.wiki import (
    GENERAL_SECTION,
    claim_create,
    claim_lines,
    page_recompile,
    record_change,
    section_block,
)
from reviews.errors import ReviewRefused
from reviews.models import Review

# The refusal's wording, also how the dashboards count provenance refusals in the audit log.
PROVENANCE_INCOMPLETE = "provenance incomplete"


@dataclass(frozen=True)
class FormState:
    """What the reviewer saw: the candidate's version and the page's revision."""

    candidate_version: int
    page_revision_id: int | None


def form_state(candidate: Candidate) -> FormState:
    page = candidate.page_for()
    return FormState(candidate.version, page.current_revision_id if page else None)


@dataclass(frozen=True)
class _Gated:
    """The locked candidate, the locked page it lands on (approvals), the reviewer's role."""

    candidate: Candidate
    page: Page | None
    role: str


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
    section: str | None = None,
    merge_into: Claim | None = None,
) -> _Gated:
    """Run every gate against the locked, current rows (candidate, then page)."""
    current = Candidate.objects.select_for_update().select_related("project").get(pk=candidate.pk)
    project = current.project
    role = role_in(reviewer, project)
    if not may(role, Do.REVIEW):
        raise ReviewRefused("reviewing needs the reviewer role", 403)
    if not current.is_open or current.version != seen.candidate_version:
        raise ReviewRefused(
            f"candidate #{current.pk} is no longer awaiting review as you saw it "
            f"(now {current.status}, version {current.version}); reload and look again",
            409,
        )
    page = None
    if action.startswith("approve") or merge_into is not None:
        page = _page_as_seen(current, seen, section=section, merge_into=merge_into)
    if action in {"approve", "approve-edit", "merge"}:
        if current.is_sensitive:
            if not may(role, Do.DECIDE_SENSITIVE):
                raise ReviewRefused("restricted or PII-flagged material needs a maintainer", 403)
            if not sensitive_confirmed:
                raise ReviewRefused(
                    "confirm that you reviewed the sensitive content (PII / restricted) first",
                    400,
                )
        evidence = list(
            CandidateEvidence.objects.filter(candidate=current).values_list(
                "episode_id", "episode__source_id", "episode__source__imported_by"
            )
        )
        missing = [episode for episode, source, _ in evidence if source is None]
        if missing or not evidence:
            listed = ", ".join(f"#{i}" for i in missing) or "(none)"
            raise ReviewRefused(
                f"{PROVENANCE_INCOMPLETE}: evidence episode(s) {listed} have no hashed source",
                400,
            )
        if project.four_eyes and {importer for _, _, importer in evidence} == {reviewer.pk}:
            raise ReviewRefused("four-eyes rule: you cannot review your own submission", 403)
    return _Gated(current, page, role)


def _page_as_seen(
    candidate: Candidate, seen: FormState, *, section: str | None, merge_into: Claim | None
) -> Page:
    """Lock the target page; refuse only if it changed where this decision lands.

    Other reviewers' approvals elsewhere on the page are no reason to refuse: the decision
    is re-based onto the current revision. What the reviewer saw must be unchanged: the
    section the claim lands in, or the claim a merge folds into.
    """
    pages = Page.objects.select_for_update(of=("self",)).select_related("current_revision")
    if merge_into is not None:
        page = pages.get(pk=merge_into.page_id)
    else:
        page = pages.filter(project=candidate.project_id, key=candidate.page_target).first()
        if page is None:
            raise ReviewRefused(f"this project has no page {candidate.page_target}", 409)
    if page.current_revision_id == seen.page_revision_id:
        return page
    was = PageRevision.objects.filter(pk=seen.page_revision_id).first()
    if merge_into is not None and (was is None or was.page_id != page.pk):
        return page  # the claim is on a page other than the one the form showed
    if seen.page_revision_id is not None and (was is None or was.page_id != page.pk):
        raise ReviewRefused("the form names a revision of another page; reload it", 409)
    before = was.markdown if was else ""
    after = page.current_revision.markdown if page.current_revision else ""
    if merge_into is not None:
        touched = claim_lines(before, merge_into.pk) != claim_lines(after, merge_into.pk)
        where = f"claim {merge_into.pk}"
    else:
        landing = section if section is not None else candidate.section
        touched = section_block(before, landing) != section_block(after, landing)
        where = f"section “{landing or GENERAL_SECTION}”"
    if touched:
        raise ReviewRefused(
            f"page {page.key} changed in {where} since you opened this candidate; "
            "reload it and look again",
            409,
        )
    return page


def candidate_approve(
    *,
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    seen: FormState,
    edited_text: str | None = None,
    as_edited: bool = True,
    section: str | None = None,
    supersedes: Claim | None = None,
    note: str = "",
    sensitive_confirmed: bool = False,
) -> Claim:
    """Approve (optionally with an edit): claim, page revision, MANIFEST, CHANGELOG, audit.

    With `supersedes` (an accepted conflict side), the new claim replaces that approved
    claim, which must still be approved.

    An `edited_text` that differs from the candidate's is approved only `as_edited`; a
    plain approval with a changed text is refused rather than dropping the edit. `section`
    names the wiki section the claim goes in (default: the one proposed).
    """
    edited = edited_text is not None and edited_text.strip() != candidate.text
    action = "approve-edit" if edited else "approve"
    with _refusals_audited(candidate, reviewer, action), transaction.atomic():
        gated = _check(
            candidate,
            reviewer,
            action,
            seen,
            sensitive_confirmed=sensitive_confirmed,
            section=section,
        )
        current, page = gated.candidate, gated.page
        text = _approved_text(current, edited_text if edited else None, as_edited)
        if supersedes is not None:
            supersedes = _still_approved(supersedes, page)
        claim = claim_create(
            page=page,
            text=text,
            evidence=CandidateEvidence.objects.filter(
                candidate=current, role=CandidateEvidence.Role.SUPPORT
            ).values_list("episode_id", flat=True),
            reviewer=reviewer,
            supersedes=supersedes,
            section=section.strip()[:200] if section is not None else current.section,
            subject_key=current.subject_key,
            security_class=current.security_class,
            flags=current.flags,
            note=f"candidate #{current.pk}",
        )
        revision = page_recompile(
            page=page, actor=reviewer, reason=f"approved candidate #{current.pk}", locked=True
        )
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=action,
            note=note,
            before_text=current.text,
            after_text=text,
        )
        current.transition(
            Candidate.Status.APPROVED, actor=reviewer, note=note, claim=claim, locked=True
        )
        record_change(
            project=current.project,
            actor=reviewer,
            summary=f"{page.key}: approved claim {claim.pk}" + (" (edited)" if edited else ""),
            claim=claim,
            revision=revision,
        )
        _approval_episode(current.project, reviewer, claim)
        return claim


def _approved_text(candidate: Candidate, edited_text: str | None, as_edited: bool) -> str:
    """The claim's text: the candidate's, or the edit when the reviewer approves it as such."""
    if edited_text is not None and not as_edited:
        raise ReviewRefused(
            "you changed the text: approve it as edited, or revert the edit first", 400
        )
    text = candidate.text if edited_text is None else edited_text.strip()
    if not text:
        raise ReviewRefused("the edited text is empty: write the claim, or revert the edit", 400)
    return text


def _still_approved(claim: Claim, page: Page) -> Claim:
    """`claim`, locked, when it is still an approved claim of `page` (it is to be superseded)."""
    claim = Claim.objects.select_for_update().get(pk=claim.pk)
    if not claim.is_approved or claim.page_id != page.pk:
        raise ReviewRefused(f"claim {claim.pk} is no longer an approved claim of {page.key}", 409)
    return claim


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
        current = _check(candidate, reviewer, action, seen).candidate
        if (refusal := refuse(current)) is not None:
            raise ReviewRefused(*refusal)
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=action,
            note=note,
            before_text=current.text,
        )
        current.transition(status, actor=reviewer, note=note, locked=True)


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
    claim: Claim | None,
    note: str = "",
    sensitive_confirmed: bool = False,
) -> Claim:
    """Fold a candidate into an existing approved claim: the claim gains its evidence."""
    with _refusals_audited(candidate, reviewer, "merge"), transaction.atomic():
        if claim is None or claim.project_id != candidate.project_id:
            raise ReviewRefused("choose an approved claim of this project to merge into", 400)
        claim = Claim.objects.select_for_update().get(pk=claim.pk)
        if not claim.is_approved:
            raise ReviewRefused(
                f"claim {claim.pk} is {claim.get_status_display().lower()}, not approved; "
                "merge into an approved claim",
                400,
            )
        gated = _check(
            candidate,
            reviewer,
            "merge",
            seen,
            sensitive_confirmed=sensitive_confirmed,
            merge_into=claim,
        )
        current, page = gated.candidate, gated.page
        episodes = list(
            CandidateEvidence.objects.filter(
                candidate=current, role=CandidateEvidence.Role.SUPPORT
            ).values_list("episode_id", flat=True)
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
        current.transition(
            Candidate.Status.MERGED, actor=reviewer, note=note, claim=claim, locked=True
        )
        AuditEvent.record(
            actor=reviewer,
            action="claim.merge",
            obj=claim,
            after={"candidate": current.pk, "episodes": episodes},
        )
        # The page cites each claim's evidence, so it gains a revision too.
        revision = page_recompile(
            page=page, actor=reviewer, reason=f"merged candidate #{current.pk}", locked=True
        )
        record_change(
            project=current.project,
            actor=reviewer,
            summary=f"{page.key}: merged candidate {current.pk} into claim {claim.pk}",
            claim=claim,
            revision=revision,
        )
        return claim


def candidate_close(
    *,
    candidate: Candidate,
    reviewer: AbstractBaseUser,
    action: str,
    note: str,
    claim: Claim | None = None,
) -> bool:
    """Close an open candidate a conflict resolution decided on; False if it was not open.

    `action` is a rejection (its side lost) or a merge (the resolution took its side up
    into other text, approved as `claim` or queued). The resolution checked the reviewer's
    role and put what it approves through the approval gates; this records the decision on
    the candidate: a review row and the audited transition, both carrying `note`.
    """
    status = {
        Review.Action.REJECT: Candidate.Status.REJECTED,
        Review.Action.MERGE: Candidate.Status.MERGED,
    }[action]
    with transaction.atomic():
        current = Candidate.objects.select_for_update().get(pk=candidate.pk)
        if not current.is_open:
            return False
        Review.objects.create(
            candidate=current,
            reviewer=reviewer,
            action=action,
            note=note,
            before_text=current.text,
            after_text=claim.text if claim else "",
        )
        changes = {"claim": claim} if claim else {}
        current.transition(status, actor=reviewer, note=note, locked=True, **changes)
        return True
