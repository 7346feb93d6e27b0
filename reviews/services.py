"""Review refusals and the reviewed wiki's own operations: retracting a claim, rolling back.

Candidate decisions are in `reviews.actions`, conflicts in `reviews.conflicts`.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from llmwiki.access import has_role
from llmwiki.models import (
    AuditEvent,
    Claim,
    Page,
    PageRevision,
    Role,
)
from llmwiki.wiki import (
    page_publish,
    page_recompile,
    record_change,
)


class ReviewRefused(Exception):
    """A gate said no. `status` is the HTTP status a view should answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


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
