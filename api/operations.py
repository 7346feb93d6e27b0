"""What the JSON API and the MCP server do, given a checked `Caller`.

Both front ends call these, so an agent meets the same services, gates and clearance rules
whichever way it comes in. Text a caller may not read is replaced by None with the reason
in `withheld`, exactly where the web pages show "Text withheld".
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from django.db.models import Prefetch

from api.models import ApiToken
from api.services import Caller, NotFound, paged, write_allowed
from dreaming import review_actions
from dreaming.models import Candidate, CandidateEvidence, DreamRun
from dreaming.selectors import candidate_document
from dreaming.services import DreamBusy, dream_request
from llmwiki.access import withheld
from llmwiki.errors import InputError, Refused, refuse_unstorable
from llmwiki.models import AuditEvent
from llmwiki.record import episode_record
from reviews import actions

Scope = ApiToken.Scope


def masked(caller: Caller, item: Any, text: str) -> dict[str, Any]:
    """`text` and an empty reason, or None and why the caller may not read it."""
    reason = withheld(caller.project, item, caller.role)
    return {"text": None if reason else text, "withheld": reason or None}


# --- Events -------------------------------------------------------------------------------


def record_event(
    caller: Caller,
    *,
    kind: str,
    content: str,
    occurred_at: datetime | None = None,
    locator: dict | None = None,
    tags: list[str] | None = None,
    agent: str = "",
) -> dict[str, Any]:
    # Counted before anything is checked, as every write attempt is (see `review`).
    write_allowed(caller.token)
    if occurred_at is not None and occurred_at.tzinfo is None:
        raise InputError("occurred_at", "needs a timezone offset (e.g. 2026-11-02T10:00:00Z)")
    if occurred_at is not None:
        # In UTC, as it is stored: PostgreSQL refuses an offset past 15:59 (Python takes up
        # to 23:59), and 0001-01-01T00:00+14:00 or 9999-12-31T23:59-14:00 fall outside the
        # years a datetime holds.
        try:
            occurred_at = occurred_at.astimezone(UTC)
        except OverflowError:
            raise InputError("occurred_at", "is outside years 1-9999 in UTC") from None
    episode = episode_record(
        project=caller.project,
        actor=caller.actor,
        agent=agent,
        kind=kind,
        content=content,
        occurred_at=occurred_at,
        locator=locator,
        tags=tags or (),
    )
    return {
        "episode_id": episode.pk,
        "status": episode.status,
        "memory_type": episode.memory_type,
        "security_class": episode.security_class,
        "flags": episode.flags,
        "source_sha256": episode.source.sha256,
    }


# --- Candidates and review ----------------------------------------------------------------


def _candidates(caller: Caller):
    return Candidate.objects.filter(project=caller.project).prefetch_related(
        Prefetch(
            "evidence",
            queryset=CandidateEvidence.objects.select_related("episode__source").order_by(
                "episode__occurred_at", "episode_id"
            ),
        )
    )


def candidate_out(caller: Caller, candidate: Candidate) -> dict[str, Any]:
    document = candidate_document(candidate)
    document.update(masked(caller, candidate, candidate.text))
    document["version"] = candidate.version
    document["security_class"] = candidate.security_class
    return document


def candidate_list(caller: Caller, *, status: str, limit: int, offset: int) -> dict[str, Any]:
    qs = _candidates(caller)
    if status:
        if status not in Candidate.Status.values:
            raise InputError(
                "status", f"unknown status {status!r}; one of {', '.join(Candidate.Status.values)}"
            )
        qs = qs.filter(status=status)
    return paged(
        qs, ("-score", "id"), limit=limit, offset=offset, out=lambda c: candidate_out(caller, c)
    )


def candidate_get(caller: Caller, candidate_id: int) -> dict[str, Any]:
    candidate = _candidates(caller).filter(pk=candidate_id).first()
    if candidate is None:
        raise NotFound(f"no candidate #{candidate_id} in {caller.project.slug}")
    document = candidate_out(caller, candidate)
    # What a review action must send back: the version token of the web form.
    document["page_revision_id"] = actions.form_state(candidate).page_revision_id
    return document


def review(caller: Caller, candidate_id: int, action: str, body: dict[str, Any]) -> dict[str, Any]:
    """One review action of `dreaming.review_actions`, as the person the token acts for."""
    # Counted before anything is checked: a refusal writes an audit row, so a flood of
    # refused attempts is writes too.
    write_allowed(caller.token)
    candidate = Candidate.objects.filter(project=caller.project, pk=candidate_id).first()
    if candidate is None:
        raise NotFound(f"no candidate #{candidate_id} in {caller.project.slug}")
    spec = review_actions.get(action)
    if spec is None or not spec.everywhere:
        names = ", ".join(a.name for a in review_actions.all_actions(everywhere_only=True))
        raise NotFound(f"no review action {action!r}; one of {names}")
    if not caller.token.allows(Scope.REVIEW):
        refusal = f"{action}: this needs an API token with the review scope"
        AuditEvent.record(actor=caller.actor(), action="review.denied", obj=candidate, note=refusal)
        raise Refused(refusal, 403)
    for field in ("note", "edited_text", "section"):
        refuse_unstorable(field, body.get(field))
    edited = body.get("edited_text")
    decision = review_actions.Decision(
        note=body.get("note") or "",
        edited_text=edited,
        as_edited=edited is not None,  # an agent sends a text only to approve it as edited
        section=body.get("section"),
        claim_id=body.get("claim"),
        sensitive_confirmed=bool(body.get("sensitive_confirmed")),
    )
    seen = actions.FormState(body["candidate_version"], body.get("page_revision_id"))
    outcome = candidate.on_action(spec.name, caller.user, seen, decision)
    return {
        "candidate_id": candidate.pk,
        "status": outcome.status,
        "claim_id": outcome.claim.pk if outcome.claim is not None else None,
    }


# --- Dreaming -----------------------------------------------------------------------------


def run_out(caller: Caller, run: DreamRun) -> dict[str, Any]:
    counts = run.counts or {}
    document: dict[str, Any] = {
        "run_id": run.pk,
        "trigger": run.trigger,
        "status": run.status,
        "phases": run.phases,
        **{k: counts.get(k, 0) for k in ("selected", "proposed", "duplicates", "conflicts")},
        "blocked": counts.get("blocked", 0),
        "watermark_before": run.watermark_before,
        "watermark_after": run.watermark_after,
        "error": run.error or None,
        "preview": None,
    }
    if run.preview:
        preview = dict(run.preview)
        preview["candidates"] = [
            {**c, **masked(caller, c, c.get("text", ""))} for c in preview.get("candidates", [])
        ]
        preview["conflicts"] = [
            {**c, "sides": c.get("sides") if not withheld(caller.project, c, caller.role) else None}
            for c in preview.get("conflicts", [])
        ]
        preview.pop("stays_episodic", None)  # episode text, not needed to judge a sweep
        document["preview"] = preview
    return document


def dream_trigger(
    caller: Caller, *, preview: bool, backfill: tuple[date, date] | None
) -> dict[str, Any]:
    """Queue a sweep for the worker, as Dream now / Preview / Backfill on the web do."""
    write_allowed(caller.token)
    trigger = (
        DreamRun.Trigger.PREVIEW
        if preview
        else DreamRun.Trigger.BACKFILL
        if backfill
        else DreamRun.Trigger.MANUAL
    )
    try:
        run = dream_request(
            project=caller.project, trigger=trigger, actor=caller.user, backfill=backfill
        )
    except DreamBusy as busy:
        raise Refused(str(busy), 409) from None
    except ValueError as exc:
        raise InputError("backfill", str(exc)) from None
    return run_out(caller, run)


def run_get(caller: Caller, run_id: int) -> dict[str, Any]:
    run = DreamRun.objects.filter(project=caller.project, pk=run_id).first()
    if run is None:
        raise NotFound(f"no dream run #{run_id} in {caller.project.slug}")
    return run_out(caller, run)
