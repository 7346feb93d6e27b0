"""django-q2 tasks: plain functions taking primitive ids and calling a service."""

from __future__ import annotations

from dreaming import services
from dreaming.models import DreamRun
from llmwiki.models import Project


def dream_run(run_id: int) -> str:
    """One run in a worker; a run that leaves backlog queues the next one."""
    run = services.dream_execute(run_id=run_id)
    queued = services.dream_continue(run)
    after = f", run {queued.pk} queued for the {run.counts['remaining']} left" if queued else ""
    return f"run {run.pk}: {run.status}{after}"


def dream_scheduled(project_id: int) -> str:
    """The nightly sweep of one project (a django-q2 Schedule per project calls this)."""
    project = Project.objects.get(pk=project_id)
    if not project.dreaming_enabled:
        return f"{project.slug}: dreaming disabled"
    try:
        run = services.dream_request(
            project=project, trigger=DreamRun.Trigger.SCHEDULE, actor="schedule", enqueue=False
        )
    except services.DreamBusy as busy:
        return str(busy)
    return dream_run(run.pk)


def heartbeat() -> str:
    services.heartbeat_beat()
    return "ok"
