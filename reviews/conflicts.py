"""Conflicts between sides: resolving them, and the OPEN_QUESTIONS page of what stays open."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.access import Do, Labels, can, is_sensitive
from llmwiki.models import (
    SECURITY_RANK,
    AuditEvent,
    Claim,
    Episode,
    Page,
    PageKey,
    PageRevision,
    Project,
    SecurityClass,
)
from llmwiki.wiki import PagePart, page_recompile, record_change, register_page_part
from reviews import actions
from reviews.errors import ReviewRefused
from reviews.models import Review


def open_questions_part(page: Page) -> PagePart:
    """The conflicts that stay open (escalated or not), as OPEN_QUESTIONS lists them.

    Registered with `llmwiki.wiki`, so every compile of the page (a resolution, an
    approval, a retraction, a rollback, an erasure) lists them beside its own claims.

    The page is shown to every member, so a side quoting restricted, PII- or
    secret-flagged material is compiled as a note (reviewers read it on the conflicts
    page), and so is the subject, which is made of the sides' words.
    """
    conflicts = (
        Conflict.objects.filter(project=page.project_id)
        .unresolved()
        .prefetch_related("sides__evidence", "sides__claim__evidence", "sides__candidate")
        .select_related("owner")
        .order_by("detected_at", "id")
    )
    lines: list[str] = []
    claim_ids: list[int] = []
    for c in conflicts:
        sides = list(c.sides.all())
        sensitive = [is_sensitive(s.labels.security_class, s.labels.flags) for s in sides]
        lines += [f"## {f'Conflict {c.pk}' if any(sensitive) else c.subject}", ""]
        kind = c.get_kind_display().lower()
        lines.append(f"_Conflict {c.pk} ({kind}), detected {c.detected_at:%Y-%m-%d}._")
        if c.status == Conflict.Status.ESCALATED:
            owner = c.owner.get_username() if c.owner else "unassigned"
            due = f", due {c.due:%Y-%m-%d}" if c.due else ""
            lines.append(f"_Escalated: owner {owner}{due}._")
        lines.append("")
        for side, withheld in zip(sides, sensitive, strict=True):
            text = " ".join(side.text.split())
            if withheld:
                text = "_Text withheld: this side quotes restricted or PII-flagged material._"
            lines.append(f"- {text} _({len(side.cited_evidence)} evidence)_")
            if side.claim_id:
                claim_ids.append(side.claim_id)
        lines.append("")
    return PagePart(lines=lines, claim_ids=claim_ids, empty="_No open questions._")


register_page_part(PageKey.OPEN_QUESTIONS, open_questions_part)


def open_questions_publish(*, project: Project, actor: Any, reason: str) -> PageRevision | None:
    page, _ = Page.objects.get_or_create(
        project=project,
        key=PageKey.OPEN_QUESTIONS,
        defaults={"title": PageKey.OPEN_QUESTIONS.label},
    )
    return page_recompile(page=page, actor=actor, reason=reason)


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
    any approval), or, when no side is approved yet, a candidate queued for review. Sides
    both valid become claims that say where each holds. The candidates of the sides that
    lost, or that the outcome took up, leave the review queue in the same transaction.
    """
    with _refusals_audited(conflict, actor, resolution), transaction.atomic():
        locked, sides = _locked(conflict, actor, resolution)
        now = timezone.now()
        scoped: dict[int, Claim] = {}
        closed: list[int] = []
        if resolution == Conflict.Resolution.ESCALATE:
            if owner is None:
                raise ReviewRefused("an escalated question needs an owner", 400)
            locked.status = Conflict.Status.ESCALATED
            locked.owner, locked.due = owner, due
        else:
            scoped, closed = _settle(
                locked, sides, resolution, actor, winner, merged_text, scopes, sensitive_confirmed
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
                "scoped_claims": sorted(c.pk for c in scoped.values()),
                "closed_candidates": closed,
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


def _locked(
    conflict: Conflict, actor: AbstractBaseUser, resolution: str
) -> tuple[Conflict, list[ConflictSide]]:
    """The conflict locked for the decision, with its sides; refused when it cannot be made."""
    if not can(actor, conflict.project, Do.REVIEW):
        raise ReviewRefused("resolving conflicts needs the reviewer role", 403)
    if resolution not in Conflict.Resolution.values:
        raise ReviewRefused(f"unknown resolution {resolution!r}", 400)
    locked = Conflict.objects.select_for_update().select_related("project").get(pk=conflict.pk)
    if locked.status == Conflict.Status.RESOLVED:
        raise ReviewRefused(f"conflict {conflict.pk} is already resolved", 409)
    sides = list(
        locked.sides.select_related("claim__page").prefetch_related("evidence", "claim__evidence")
    )
    return locked, sides


def _settle(
    locked: Conflict,
    sides: list[ConflictSide],
    resolution: str,
    actor: AbstractBaseUser,
    winner: int | None,
    merged_text: str,
    scopes: dict[int, str] | None,
    sensitive_confirmed: bool,
) -> tuple[dict[int, Claim], list[int]]:
    """Carry out a resolution other than escalating: (claims scoped per side, candidates
    closed)."""
    # Each side's own candidate as the sweep linked it, before an outcome relinks it.
    own = {s.pk: s.candidate_id for s in sides}
    R = Conflict.Resolution
    chosen = None
    scoped: dict[int, Claim] = {}
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
        scoped = _both_valid(locked, sides, scopes, actor, sensitive_confirmed)
    return scoped, _close_sides(locked, sides, own, chosen, scoped, resolution, actor)


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
        evidence |= {e.pk for e in old.evidence.all()}
    what = f"accepted side {chosen.position + 1}" if chosen else "accepted merged text"
    candidate = _candidate_for(conflict, chosen, text, evidence, old, actor, what)
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


# A scope a reviewer writes starting with one of these reads as it is ("for EU customers");
# any other ("staging") is a place the side holds in.
SCOPE_PHRASE = re.compile(
    r"(in|on|at|for|during|within|under|when|while|until|before|after|from|since|with"
    r"|without|outside|inside|per)\b",
    re.IGNORECASE,
)


def scoped_text(scope: str, text: str) -> str:
    """A side's text prefixed with the scope it holds in: "In staging: …"."""
    scope = " ".join(scope.split())
    if not SCOPE_PHRASE.match(scope):
        scope = f"in {scope}"
    return f"{scope[0].upper()}{scope[1:]}: {text.strip()}"


def _both_valid(
    conflict: Conflict,
    sides: list[ConflictSide],
    scopes: dict[int, str],
    actor: AbstractBaseUser,
    sensitive_confirmed: bool,
) -> dict[int, Claim]:
    """Approve each side as a claim that says where it holds; returns them by side pk.

    A side that is an approved claim is superseded by its scoped text; each claim cites
    its side's evidence and, for a claim side, that claim's evidence.
    """
    claims: dict[int, Claim] = {}
    for side in sides:
        scope = scopes[side.position].strip()[:300]
        ConflictSide.objects.filter(pk=side.pk).update(scope_note=scope)
        evidence = {e.pk for e in side.cited_evidence}
        old = side.claim if side.claim and side.claim.is_approved else None
        candidate = _candidate_for(
            conflict,
            side,
            scoped_text(scope, side.text),
            evidence,
            old,
            actor,
            f"side {side.position + 1} holds for {scope}",
        )
        claims[side.pk] = actions.candidate_approve(
            candidate=candidate,
            reviewer=actor,
            seen=actions.form_state(candidate),
            supersedes=old,
            note=f"resolved in conflict #{conflict.pk}: holds for {scope}",
            sensitive_confirmed=sensitive_confirmed,
        )
    return claims


def _close_sides(
    conflict: Conflict,
    sides: list[ConflictSide],
    own: dict[int, int | None],
    chosen: ConflictSide | None,
    scoped: dict[int, Claim],
    resolution: str,
    actor: AbstractBaseUser,
) -> list[int]:
    """Take the sides' own candidates out of the queue: rejected where their side lost,
    merged where the outcome took their side up. Returns the ids of those it closed.

    Left open, a losing candidate could still be approved beside the claim that won.
    """
    R = Conflict.Resolution
    where = f"resolved in conflict #{conflict.pk}"
    outcome = (
        f"claim {conflict.accepted_claim_id}"
        if conflict.accepted_claim_id
        else f"candidate #{conflict.accepted_candidate_id}"
    )
    candidates = Candidate.objects.in_bulk([pk for pk in own.values() if pk])
    closed = []
    for side in sides:
        candidate = candidates.get(own[side.pk])
        if candidate is None or candidate.pk == conflict.accepted_candidate_id:
            continue
        claim = None
        if resolution == R.KEEP_EXISTING:
            action, note = Review.Action.REJECT, f"{where}: the existing memory was kept"
        elif resolution == R.ACCEPT_NEW and side is not chosen:
            action = Review.Action.REJECT
            note = f"{where}: side {chosen.position + 1} was accepted instead"
        elif resolution == R.BOTH_VALID:
            claim = scoped[side.pk]
            action = Review.Action.MERGE
            note = f"{where}: approved with its scope as claim {claim.pk}"
        else:  # accepted or merged into text another candidate carries
            claim = conflict.accepted_claim
            action, note = Review.Action.MERGE, f"{where}: taken up as {outcome}"
        if actions.candidate_close(
            candidate=candidate, reviewer=actor, action=action, note=note, claim=claim
        ):
            closed.append(candidate.pk)
    return closed


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
    what: str,
) -> Candidate:
    """The side's own open candidate, or a new one carrying its text and evidence.

    `what` says in the candidate's route reason what the resolution made of the text.
    """
    if chosen is not None and chosen.candidate_id:
        own = Candidate.objects.filter(pk=chosen.candidate_id).first()
        if own is not None and own.is_open and own.text == text:
            return own
    episodes = list(Episode.objects.filter(pk__in=evidence).values_list("security_class", "flags"))
    classes = [c for c, _ in episodes] or [SecurityClass.INTERNAL]
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
            "route_reason": f"{what} of conflict #{conflict.pk}: {conflict.subject}"[:300],
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
