"""The review actions: each one declared here, once, and registered with dreaming's
registry (`dreaming.review_actions`), which every front end reads.

Adding an action is one entry: its service, label, role, key and the fields it reads;
the web buttons and form view, the API route and schema, the `review` command's flags
and the audit labels follow from it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dreaming.models import Candidate
from dreaming.review_actions import Decision, Outcome, ReviewAction, register
from llmwiki.models import Claim, PageRevision
from reviews import actions
from reviews.models import Review


def approved_message(claim: Claim, seen: actions.FormState) -> str:
    """The confirmation; it says so when the approval was re-based onto a newer revision."""
    published = claim.page.current_revision
    message = f"Approved: claim {claim.pk} on {claim.page.key}."
    if published is not None and published.parent_id != seen.page_revision_id:
        was = PageRevision.objects.filter(pk=seen.page_revision_id).first()
        message += (
            f" The page had changed since you opened the candidate"
            f" (you saw {f'r{was.number}' if was else 'no revision'}; others published up to "
            f"r{published.number - 1}) but not in the claim's section, so it was added to the "
            f"current page as r{published.number}."
        )
    return message


def _approve(as_edited: bool):
    def perform(candidate: Candidate, reviewer: Any, seen: Any, d: Decision) -> Outcome:
        claim = actions.candidate_approve(
            candidate=candidate,
            reviewer=reviewer,
            seen=seen,
            edited_text=d.edited_text,
            as_edited=as_edited or d.as_edited,
            section=d.section,
            note=d.note,
            sensitive_confirmed=d.sensitive_confirmed,
        )
        return Outcome("approved", approved_message(claim, seen), claim)

    return perform


def _reject(candidate: Candidate, reviewer: Any, seen: Any, d: Decision) -> Outcome:
    actions.candidate_reject(candidate=candidate, reviewer=reviewer, seen=seen, reason=d.note)
    return Outcome("rejected", f"Rejected candidate #{candidate.pk}.")


def _defer(candidate: Candidate, reviewer: Any, seen: Any, d: Decision) -> Outcome:
    actions.candidate_defer(candidate=candidate, reviewer=reviewer, seen=seen, note=d.note)
    return Outcome("deferred", f"Deferred candidate #{candidate.pk}.")


def _merge(candidate: Candidate, reviewer: Any, seen: Any, d: Decision) -> Outcome:
    target = Claim.objects.filter(project=candidate.project_id, pk=d.claim_id or 0).first()
    claim = actions.candidate_merge(
        candidate=candidate,
        reviewer=reviewer,
        seen=seen,
        claim=target,
        note=d.note,
        sensitive_confirmed=d.sensitive_confirmed,
    )
    return Outcome("merged", f"Merged into claim {claim.pk}.", claim)


A = Review.Action

APPROVE = register(
    ReviewAction(
        name=A.APPROVE.value,
        label=A.APPROVE.label,
        perform=_approve(as_edited=False),
        fields=("note", "edited_text", "section", "sensitive_confirmed"),
        key="A",
        style="primary",
        shown="unedited",
        help="approve into the wiki (with `edited_text`: as edited)",
    )
)
# The web's second approve button, shown once the text was edited; the API and the command
# line approve with an edited text instead.
register(
    replace(
        APPROVE,
        name=A.APPROVE_EDIT.value,
        label=A.APPROVE_EDIT.label,
        perform=_approve(as_edited=True),
        shown="edited",
        everywhere=False,
        help="",
    )
)
register(
    ReviewAction(
        name=A.REJECT.value,
        label=A.REJECT.label,
        perform=_reject,
        key="R",
        needs_note=True,
        help="reject; `note` says why",
    )
)
register(
    ReviewAction(
        name=A.DEFER.value,
        label=A.DEFER.label,
        perform=_defer,
        key="D",
        offered=lambda candidate: candidate.status != Candidate.Status.DEFERRED,
        help="defer to a later review",
    )
)
register(
    ReviewAction(
        name=A.MERGE.value,
        label=A.MERGE.label,
        perform=_merge,
        fields=("note", "claim_id", "sensitive_confirmed"),
        key="M",
        help="merge into the approved claim `claim` as new evidence",
    )
)
