"""Rows placed on chosen days, for the dashboard figures (services write only "now")."""

from __future__ import annotations

from datetime import datetime, time, timedelta

from django.utils import timezone

from dreaming.models import Candidate, CandidateEvidence, Conflict, DreamRun
from llmwiki.models import AuditEvent, Episode, Project, RecallTrace


def day_at(days_ago: int, hour: int = 12, now: datetime | None = None) -> datetime:
    """Noon (or `hour`) of the local day `days_ago` before today; days_ago >= 1."""
    today = timezone.localdate(now or timezone.now())
    return timezone.make_aware(datetime.combine(today - timedelta(days=days_ago), time(hour)))


def candidate(project: Project, key: str, *, created=None, evidence=(), **fields) -> Candidate:
    c = Candidate.objects.create(
        project=project,
        text=fields.pop("text", f"Fact {key}."),
        page_target=fields.pop("page_target", "SYSTEM_OVERVIEW"),
        memory_type="semantic-candidate",
        dedupe_key=key,
        created_at=created or timezone.now(),
        **fields,
    )
    for episode in evidence:
        CandidateEvidence.objects.create(candidate=c, episode=episode)
    return c


def audit(project: Project, action: str, at: datetime, obj_type="Candidate", obj_id="1", note=""):
    return AuditEvent.objects.create(
        project=project,
        at=at,
        actor="user:bob",
        action=action,
        object_type=obj_type,
        object_id=str(obj_id),
        note=note,
    )


def run(
    project: Project, finished, *, duration_ms=1000, trigger="manual", status="succeeded", **counts
):
    return DreamRun.objects.create(
        project=project,
        trigger=trigger,
        status=status,
        finished_at=finished,
        created_at=finished,
        duration_ms=duration_ms,
        counts=counts,
    )


def trace(project: Project, at, duration_ms) -> RecallTrace:
    return RecallTrace.objects.create(
        project=project, query="q", at=at, actor="agent:x", duration_ms=duration_ms
    )


def conflict(project: Project, key: str, detected, resolved=None) -> Conflict:
    return Conflict.objects.create(
        project=project,
        subject=f"subject {key}",
        kind=Conflict.Kind.VALUE,
        dedupe_key=key,
        detected_at=detected,
        status=Conflict.Status.RESOLVED if resolved else Conflict.Status.OPEN,
        resolved_at=resolved,
    )


def orphan_episode(project: Project, content="An orphan fact.") -> Episode:
    """An episode without a source: approving a candidate built on it is refused."""
    return Episode.objects.create(
        project=project,
        occurred_at=timezone.now(),
        actor="agent:x",
        kind="note",
        content=content,
        content_hash="0" * 64,
    )


def busy_project(project: Project, *, now=None) -> None:
    """A little of everything over the last ten days, for the page and query-count tests."""
    from llmwiki.models import Export

    for d in (1, 3, 8):
        candidate(project, f"{project.slug}-{d}", created=day_at(d, now=now))
        audit(project, "candidate.approved", day_at(d, now=now))
        run(
            project, day_at(d, now=now), duration_ms=500 * d, engine_sentences=10, engine_clusters=4
        )
        trace(project, day_at(d, now=now), 3 * d)
    audit(project, "candidate.rejected", day_at(2, now=now))
    audit(project, "page.rollback", day_at(2, now=now), obj_type="Page")
    conflict(project, f"{project.slug}-a", day_at(6, now=now))
    conflict(project, f"{project.slug}-b", day_at(5, now=now), resolved=day_at(1, now=now))
    Export.objects.create(
        project=project,
        kind="handoff",
        audience="internal",
        generated_at=day_at(4, now=now),
        generator_version="t",
        manifest_sha256="0" * 64,
        path="x",
    )
