"""Conflicts between sides: resolving them, and the OPEN_QUESTIONS page of what stays open."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dreaming.models import Conflict, ConflictSide
from llmwiki.access import has_role
from llmwiki.models import (
    AuditEvent,
    Page,
    PageKey,
    PageRevision,
    Project,
    Role,
)
from llmwiki.wiki import (
    claim_create,
    page_publish,
    page_recompile,
    record_change,
)
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
