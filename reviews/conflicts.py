"""Conflicts between sides: resolving them, and the OPEN_QUESTIONS page of what stays open."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.access import Labels, has_role, is_sensitive
from llmwiki.models import (
    SECURITY_RANK,
    AuditEvent,
    Claim,
    Episode,
    Page,
    PageKey,
    PageRevision,
    Project,
    Role,
    SecurityClass,
)
from llmwiki.wiki import page_publish, page_recompile, record_change
from reviews import actions
from reviews.services import ReviewRefused


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


@contextmanager
def _refusals_audited(conflict: Conflict, actor: Any, resolution: str) -> Iterator[None]:
    """Record a refusal after the transaction rolled back, so only it remains."""
    try:
        yield
    except ReviewRefused as exc:
        AuditEvent.record(
            actor=actor, action="review.denied", obj=conflict, note=f"{resolution}: {exc}"
        )
        raise


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
    sensitive_confirmed: bool = False,
) -> Conflict:
    """Resolve (or escalate) a conflict; OPEN_QUESTIONS is recompiled from what stays open.

    An accepted side or a merged text always ends somewhere a reader can follow: approved
    as a claim superseding the approved claim it contradicts (through the same gates as
    any approval), or, when no side is approved yet, a candidate queued for review.
    """
    with _refusals_audited(conflict, actor, resolution), transaction.atomic():
        if not has_role(actor, conflict.project, Role.REVIEWER):
            raise ReviewRefused("resolving conflicts needs the reviewer role", 403)
        if resolution not in Conflict.Resolution.values:
            raise ReviewRefused(f"unknown resolution {resolution!r}", 400)
        locked = Conflict.objects.select_for_update().select_related("project").get(pk=conflict.pk)
        if locked.status == Conflict.Status.RESOLVED:
            raise ReviewRefused(f"conflict {conflict.pk} is already resolved", 409)
        sides = list(locked.sides.select_related("claim__page").prefetch_related("evidence"))
        now = timezone.now()
        R = Conflict.Resolution
        if resolution == R.ESCALATE:
            if owner is None:
                raise ReviewRefused("an escalated question needs an owner", 400)
            locked.status = Conflict.Status.ESCALATED
            locked.owner, locked.due = owner, due
        else:
            if resolution == R.ACCEPT_NEW:
                chosen = next((s for s in sides if s.position == winner), None)
                if chosen is None:
                    raise ReviewRefused("choose which side to accept", 400)
                locked.accepted_position = chosen.position
                _accept(locked, chosen, sides, chosen.text, actor, sensitive_confirmed)
            elif resolution == R.MERGE:
                if not merged_text.strip():
                    raise ReviewRefused("merging needs the merged text", 400)
                _accept(locked, None, sides, merged_text.strip(), actor, sensitive_confirmed)
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
                "accepted_position": locked.accepted_position,
                "claim": locked.accepted_claim_id,
                "candidate": locked.accepted_candidate_id,
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


def _accept(
    conflict: Conflict,
    chosen: ConflictSide | None,
    sides: list[ConflictSide],
    text: str,
    actor: AbstractBaseUser,
    sensitive_confirmed: bool,
) -> None:
    """Put `text` (side `chosen`, or a merge of all sides when None) where it can be read."""
    losing = [s for s in sides if s is not chosen]
    if chosen is not None and chosen.claim and chosen.claim.is_approved:
        # The accepted side is approved memory already; the other approved sides give way.
        for side in losing:
            if side.claim and side.claim.is_approved:
                side.claim.transition(
                    Claim.Status.RETRACTED,
                    actor=actor,
                    note=f"conflict {conflict.pk}: claim {chosen.claim_id} accepted instead",
                )
                page_recompile(page=side.claim.page, actor=actor, reason=f"conflict {conflict.pk}")
        conflict.accepted_claim = chosen.claim
        return
    old = next((s.claim for s in losing if s.claim and s.claim.is_approved), None)
    evidence = {e.pk for s in ([chosen] if chosen else sides) for e in s.evidence.all()}
    if chosen is None and old is not None:
        evidence |= set(old.evidence.values_list("id", flat=True))
    candidate = _candidate_for(conflict, chosen, text, evidence, old, actor)
    conflict.accepted_candidate = candidate
    if old is None:
        return  # no approved side to replace: the text waits in the review queue
    conflict.accepted_claim = actions.candidate_approve(
        candidate=candidate,
        reviewer=actor,
        seen=actions.form_state(candidate),
        supersedes=old,
        note=f"accepted in conflict {conflict.pk}",
        sensitive_confirmed=sensitive_confirmed,
    )


def needs_sensitive_confirmation(sides: Iterable[ConflictSide]) -> bool:
    """Whether resolving could approve sensitive text, so the form asks for the confirmation.

    The candidate an accept or a merge approves carries the labels of its sides' evidence
    (or a side's own candidate), plus, for a merge, the evidence of the approved claim it
    supersedes: `_candidate_for` builds it from exactly these. Expects the sides with
    `evidence`, `candidate` and `claim__evidence` prefetched.
    """
    labels = Labels.strictest(
        item
        for side in sides
        for item in (
            side.candidate,
            *side.evidence.all(),
            *(side.claim.evidence.all() if side.claim else ()),
        )
    )
    return is_sensitive(labels.security_class, labels.flags)


def _candidate_for(
    conflict: Conflict,
    chosen: ConflictSide | None,
    text: str,
    evidence: set[int],
    old: Claim | None,
    actor: AbstractBaseUser,
) -> Candidate:
    """The side's own open candidate, or a new one carrying its text and evidence."""
    if chosen is not None and chosen.candidate_id:
        own = Candidate.objects.filter(pk=chosen.candidate_id).first()
        if own is not None and own.is_open and own.text == text:
            return own
    episodes = list(Episode.objects.filter(pk__in=evidence).values_list("security_class", "flags"))
    classes = [c for c, _ in episodes] or [SecurityClass.INTERNAL]
    what = f"side {chosen.position + 1}" if chosen else "merged text"
    if old is not None:
        page_key, section = old.page.key, old.section
    else:
        page_key = (
            PageKey.DECISION_LOG
            if conflict.kind == Conflict.Kind.REVERSAL
            else PageKey.SYSTEM_OVERVIEW
        )
        section = ""
    key = f"conflict:{conflict.pk}:{chosen.position if chosen else 'merge'}"
    candidate, created = Candidate.objects.get_or_create(
        project=conflict.project,
        dedupe_key=key,
        defaults={
            "text": text,
            "page_target": page_key,
            "section": section,
            "route_reason": f"accepted {what} of conflict #{conflict.pk}: {conflict.subject}"[:300],
            "memory_type": Episode.MemoryType.SEMANTIC,
            "subject_key": (old.subject_key if old else conflict.subject)[:200],
            "security_class": max(classes, key=SECURITY_RANK.__getitem__),
            "flags": sorted({f for _, flags in episodes for f in flags or []}),
        },
    )
    if not created:
        raise ReviewRefused(
            f"conflict {conflict.pk} already queued this text as candidate #{candidate.pk}", 409
        )
    CandidateEvidence.objects.bulk_create(
        [CandidateEvidence(candidate=candidate, episode_id=i) for i in sorted(evidence)]
    )
    AuditEvent.record(
        actor=actor,
        action="candidate.proposed",
        obj=candidate,
        after={"conflict": conflict.pk, "episodes": sorted(evidence)},
    )
    if chosen is not None:
        ConflictSide.objects.filter(pk=chosen.pk).update(candidate=candidate)
    return candidate
