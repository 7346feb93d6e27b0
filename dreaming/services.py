"""Dream sweeps: the run's life from request to settling (with a lease and an attempt cap).

The engine (`dreaming.engine`) is pure; this module runs it on what `sweep_input` loads from
the database, and settles the run with what `sweep_persist` writes (or, for a preview,
what `sweep_preview` describes). A sweep writes candidates, conflicts and evidence links
only — never claims or pages: approved memory changes only through a human review.
"""

from __future__ import annotations

import logging
import time
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models.functions import Length
from django.utils import timezone

from dreaming import engine
from dreaming.engine import pipeline, select
from dreaming.engine.policy import Policy, PolicyError
from dreaming.engine.types import ApprovedClaim
from dreaming.models import DreamRun, WorkerHeartbeat
from dreaming.sweep_input import (  # noqa: F401 (the names tests and views use here)
    RECALL_WINDOW,
    SOURCE_TRUST,
    TRUST_LABEL,
    _Computed,
    _decided,
    _load_episodes,
    _recall_stats,
    keeps_notes,
    plan_bounded,
)
from dreaming.sweep_persist import _persist
from dreaming.sweep_preview import _preview
from llmwiki.models import AuditEvent, Claim, Episode, Project

log = logging.getLogger(__name__)

# A run's lease outlives the task timeout, so a worker killed mid-sweep frees the project
# once the lease lapses; django-q2 redelivers after `retry`, which is longer still.
LEASE = timedelta(seconds=settings.Q_CLUSTER["timeout"] + 60)
# django-q2 would redeliver a task that kills its worker forever (django-q2#327).
MAX_ATTEMPTS = 3
HEARTBEAT_STALE = timedelta(minutes=3)
PHASES = ("light", "rem", "deep", "settle")


class DreamBusy(Exception):
    """A sweep is already queued or running for the project."""

    def __init__(self, run: DreamRun) -> None:
        self.run = run
        super().__init__(
            f"dream run #{run.pk} is already {run.status} for {run.project.slug}; "
            "wait for it to finish"
        )


def project_policy(project: Project) -> Policy:
    """The project's validated policy (raises PolicyError naming the bad field)."""
    return Policy.from_dict(project.dream_policy or None)


@transaction.atomic
def policy_update(*, project: Project, policy: dict, actor: Any) -> Policy:
    """Validate and store a dreaming policy; the audit row keeps before and after."""
    validated = Policy.from_dict(policy)
    before = project.dream_policy
    project.dream_policy = validated.to_dict()
    project.save(update_fields=["dream_policy"])
    AuditEvent.record(
        actor=actor, action="project.policy", obj=project, before=before, after=project.dream_policy
    )
    return validated


def dream_request(
    *,
    project: Project,
    trigger: str,
    actor: Any = None,
    backfill: tuple[date, date] | None = None,
    enqueue: bool = True,
    wizard_run_id: int | None = None,
) -> DreamRun:
    """Create a queued run (one open run per project) and hand it to a worker on commit.

    `wizard_run_id`: read all of that wizard run's episodes, leave the watermark alone.
    """
    if backfill is not None and backfill[0] > backfill[1]:
        raise ValueError(f"backfill range starts after it ends: {backfill[0]} > {backfill[1]}")
    if trigger == DreamRun.Trigger.SCHEDULE and not project.dreaming_enabled:
        raise ValueError(f"dreaming is disabled for {project.slug}")
    now = timezone.now()
    with transaction.atomic():
        _abandon_expired(project, now)
        try:
            with transaction.atomic():
                run = DreamRun.objects.create(
                    project=project,
                    trigger=trigger,
                    requested_by=actor if getattr(actor, "pk", None) else None,
                    backfill_from=backfill[0] if backfill else None,
                    backfill_to=backfill[1] if backfill else None,
                    lease_expires_at=now + LEASE,
                    wizard_run_id=wizard_run_id,
                    phases={p: {"status": "pending"} for p in PHASES},
                )
        except IntegrityError:
            raise DreamBusy(open_run(project)) from None
        AuditEvent.record(actor=actor, action=f"dream.{trigger}", obj=run, after={"run": run.pk})
    if enqueue:
        from django_q.tasks import async_task

        transaction.on_commit(lambda: async_task("dreaming.tasks.dream_run", run.pk))
    return run


def dream_continue(run: DreamRun) -> DreamRun | None:
    """Queue the next run of the backlog this run left, so a backlog larger than one
    batch drains run by run without anyone asking again. Returns the queued run.

    Only a sweep past the watermark that settled and is still the project's latest: a
    preview, backfill or wizard sweep reads a scope, not the backlog; a failed run waits
    for the schedule or a person; a redelivered task of an older run finds the watermark
    moved on. One open run per project holds as ever: if a run is already queued or
    running, it takes the next batch and nothing more is queued.
    """
    scoped = run.backfill_from is not None or run.wizard_run_id is not None
    if run.status != DreamRun.Status.SUCCEEDED or run.is_preview or scoped:
        return None
    if not (run.counts or {}).get("remaining"):
        return None
    project = Project.objects.get(pk=run.project_id)
    if project.dream_watermark != run.watermark_after:
        return None
    try:
        queued = dream_request(project=project, trigger=run.trigger, actor="system")
    except DreamBusy:
        return None
    except ValueError:  # dreaming was disabled since the schedule started this backlog
        return None
    run.counts = {**run.counts, "next_run": queued.pk}
    DreamRun.objects.filter(pk=run.pk).update(counts=run.counts)
    return queued


def _abandon_expired(project: Project, now) -> None:
    for run in DreamRun.objects.filter(
        project=project, status__in=DreamRun.OPEN_STATUSES, lease_expires_at__lt=now
    ):
        run.status = DreamRun.Status.ABANDONED
        run.error = f"lease expired at {run.lease_expires_at:%Y-%m-%d %H:%M:%S} (worker gone?)"
        run.finished_at = now
        run.save(update_fields=["status", "error", "finished_at"])
        AuditEvent.record(actor="system", action="dream.abandon", obj=run, note=run.error)


def dream_execute(*, run_id: int) -> DreamRun:
    """Run one sweep; safe to call twice for the same run (at-least-once delivery)."""
    run = _claim(run_id)
    if run is None:
        return DreamRun.objects.get(pk=run_id)
    started = time.perf_counter()
    try:
        _settle(run, _compute(run), started)
    except Exception as exc:
        log.exception("dream run %s failed", run.pk)
        _fail(run, f"{type(exc).__name__}: {exc}", started)
    finally:
        # A worker runs sweep after sweep: its memory is one batch's, not the backlog's.
        engine.forget()
    run.refresh_from_db()
    return run


def _claim(run_id: int) -> DreamRun | None:
    """Take the lease, or return None when the run is finished or someone else holds it."""
    now = timezone.now()
    with transaction.atomic():
        run = DreamRun.objects.select_for_update().select_related("project").get(pk=run_id)
        if not run.is_open:
            return None
        if run.status == DreamRun.Status.RUNNING and run.lease_expires_at > now:
            return None
        run.attempts += 1
        if run.attempts > MAX_ATTEMPTS:
            run.status = DreamRun.Status.FAILED
            run.error = f"gave up after {MAX_ATTEMPTS} attempts (the worker kept dying)"
            run.finished_at = now
            run.save(update_fields=["attempts", "status", "error", "finished_at"])
            AuditEvent.record(actor="system", action="dream.gave_up", obj=run, note=run.error)
            return None
        run.status = DreamRun.Status.RUNNING
        run.started_at = run.started_at or now
        run.lease_expires_at = now + LEASE
        run.watermark_before = run.project.dream_watermark
        run.phases = {p: {"status": "pending"} for p in PHASES}
        run.phases["light"] = {"status": "running"}
        run.save(
            update_fields=[
                "attempts",
                "status",
                "started_at",
                "lease_expires_at",
                "watermark_before",
                "phases",
            ]
        )
    return run


def _compute(run: DreamRun) -> _Computed:
    project = run.project
    policy = project_policy(project)
    backfill = (run.backfill_from, run.backfill_to) if run.backfill_from else None
    # Our own bookkeeping (approvals, retrievals) is not project material to consolidate.
    dreamable = (
        Episode.objects.dreamable()
        .filter(project=project)
        .exclude(kind__in=Episode.BOOKKEEPING_KINDS)
    )
    if backfill:
        in_range = dreamable.filter(
            occurred_at__date__gte=backfill[0], occurred_at__date__lte=backfill[1]
        )
        rows = (
            (pk, occurred.date(), n)
            for pk, occurred, n in in_range.values_list("id", "occurred_at", Length("content"))
            .order_by("id")
            .iterator(chunk_size=5000)
        )
        batch = select.plan_batch(rows, policy, backfill=backfill)
    else:
        wizard = run.wizard_run_id is not None
        pending = (
            dreamable.filter(wizard_run_id=run.wizard_run_id)
            if wizard
            else dreamable.filter(id__gt=project.dream_watermark)
        )
        first_run = project.dream_watermark == 0 or wizard
        batch = plan_bounded(pending, policy, first_run=first_run)
    episodes, security = _load_episodes(project, batch.ids)
    _phase(run, "light", status="running", selected=len(episodes), note=batch.note)
    claims = [
        ApprovedClaim(pk, text, page, subject or None)
        for pk, text, page, subject in Claim.objects.filter(project=project)
        .approved()
        .values_list("id", "text", "page__key", "subject_key")
    ]
    result = pipeline.run_sweep(
        episodes.values(),
        approved_claims=claims,
        recall=_recall_stats(project, set(episodes)),
        policy=policy,
        now=timezone.now(),
        live_episode_ids=set(episodes),
        decided=_decided(project),
        keeps_notes=keeps_notes(project),
    )
    return _Computed(
        result=result,
        batch=batch,
        bytes_read=sum(len(e.content.encode()) for e in episodes.values()),
        security=security,
    )


def _phase(run: DreamRun, name: str, **state: Any) -> None:
    run.phases[name] = {**run.phases.get(name, {}), **state}
    DreamRun.objects.filter(pk=run.pk).update(phases=run.phases)


def _settle(run: DreamRun, computed: _Computed, started: float) -> None:
    result, batch = computed.result, computed.batch
    timings = result.timings
    for phase in ("light", "rem", "deep"):
        run.phases[phase] = {
            **run.phases.get(phase, {}),
            "status": "done",
            "seconds": round(sum(v for k, v in timings.items() if k.startswith(phase)), 3),
        }
    counts = {
        "selected": len(batch.ids),
        "proposed": sum(1 for c in result.candidates if c.status == "proposed"),
        "deferred": sum(1 for c in result.candidates if c.status == "deferred"),
        "blocked": sum(1 for c in result.candidates if c.status == "blocked"),
        "duplicates": result.duplicates_folded,
        "conflicts": len(result.conflicts),
        "reinforced": len(result.reinforced),
        "older_left": batch.older_left,
        "remaining": batch.remaining,
        **{f"engine_{k}": v for k, v in result.counts.items()},
    }
    with transaction.atomic():
        if not run.is_preview:
            counts.update(_persist(run, computed))
        run.status = DreamRun.Status.SUCCEEDED if batch.ids else DreamRun.Status.NOOP
        run.counts = counts
        run.bytes_read = computed.bytes_read
        run.diary = result.diary
        run.preview = _preview(run.project, result, computed.security) if run.is_preview else None
        run.phases["settle"] = {"status": "done"}
        run.finished_at = timezone.now()
        run.duration_ms = int((time.perf_counter() - started) * 1000)
        run.lease_expires_at = None
        scoped = run.backfill_from is not None or run.wizard_run_id is not None
        advance = not run.is_preview and batch.watermark_after is not None and not scoped
        run.watermark_after = batch.watermark_after if advance else run.watermark_before
        run.save()
        if advance:
            Project.objects.filter(pk=run.project_id).update(dream_watermark=batch.watermark_after)
        AuditEvent.record(
            actor="system",
            action="dream.settle",
            obj=run,
            after={k: counts[k] for k in ("selected", "proposed", "conflicts", "blocked")},
        )


def _fail(run: DreamRun, error: str, started: float) -> None:
    with transaction.atomic():
        DreamRun.objects.filter(pk=run.pk).update(
            status=DreamRun.Status.FAILED,
            error=error[:2000],
            finished_at=timezone.now(),
            duration_ms=int((time.perf_counter() - started) * 1000),
            lease_expires_at=None,
        )
        AuditEvent.record(actor="system", action="dream.fail", obj=run, note=error[:2000])


def heartbeat_beat(name: str = "default") -> None:
    WorkerHeartbeat.objects.update_or_create(name=name, defaults={"seen_at": timezone.now()})


def worker_alive() -> bool:
    """True when a worker ran the heartbeat task recently (sync mode always counts)."""
    if settings.Q_CLUSTER.get("sync"):
        return True
    return WorkerHeartbeat.objects.filter(seen_at__gte=timezone.now() - HEARTBEAT_STALE).exists()


def open_run(project: Project) -> DreamRun | None:
    return DreamRun.objects.filter(project=project, status__in=DreamRun.OPEN_STATUSES).first()


def promoted_today(project: Project) -> int:
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return Claim.objects.filter(project=project, approved_at__gte=today).count()


__all__ = [
    "DreamBusy",
    "PolicyError",
    "dream_continue",
    "dream_execute",
    "dream_request",
    "policy_update",
]
