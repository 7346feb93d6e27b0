"""django-q2 tasks: plain functions taking primitive ids and calling a service."""

from __future__ import annotations

from dreaming import services
from dreaming.models import DreamRun
from llmwiki.models import Project


def dream_run(run_id: int) -> str:
    run = services.dream_execute(run_id=run_id)
    return f"run {run.pk}: {run.status}"


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
