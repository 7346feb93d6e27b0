"""Faults: a task delivered twice, and a task that kills its worker every time.

django-q2 delivers at least once, and redelivers a task whose worker died forever
(django-q2#327); the app's own attempt cap has to stop it.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

import django_q.tasks
from django.urls import reverse
from django.utils import timezone
from django_q.models import Task

from dreaming import services
from dreaming.models import DreamRun
from llmwiki.models import AuditEvent
from tests.dreaming_data import seed
from tests.reliability.digest import STORED, SWEPT, django_digest


class WorkerDied(BaseException):
    """Stands for the process ending: not an Exception, so no handler in the app sees it."""


def test_the_same_task_payload_delivered_twice_sweeps_once(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    seed(project)
    packs = []
    real_sync = django_q.tasks._sync

    def deliver(pack):
        packs.append(pack)
        return real_sync(pack)

    monkeypatch.setattr(django_q.tasks, "_sync", deliver)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.dream_request(project=project, trigger="manual", actor="t")
    assert len(packs) == 1
    run.refresh_from_db()
    assert run.status == DreamRun.Status.SUCCEEDED
    before = django_digest(STORED + SWEPT + ("dreaming_dreamrun",))

    # The broker hands the very same signed payload (same task id) to a worker again.
    task_id = real_sync(packs[0])

    assert django_digest(STORED + SWEPT + ("dreaming_dreamrun",)) == before
    assert Task.objects.get(id=task_id).result == f"run {run.pk}: succeeded"
    run.refresh_from_db()
    assert run.attempts == 1


def test_a_task_that_always_kills_its_worker_stops_at_the_attempt_cap(
    client, alice, project, monkeypatch
):
    seed(project)
    stored = django_digest(STORED)

    def crash(run):
        raise WorkerDied

    monkeypatch.setattr(services, "_compute", crash)
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    for attempt in range(1, services.MAX_ATTEMPTS + 1):
        with contextlib.suppress(WorkerDied):
            services.dream_execute(run_id=run.pk)
        run.refresh_from_db()
        assert (run.status, run.attempts) == (DreamRun.Status.RUNNING, attempt)
        # The dead worker's lease lapses; django-q2 redelivers after `retry`.
        DreamRun.objects.filter(pk=run.pk).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )

    run = services.dream_execute(run_id=run.pk)  # one delivery too many: not run again
    assert run.status == DreamRun.Status.FAILED
    assert run.error == f"gave up after {services.MAX_ATTEMPTS} attempts (the worker kept dying)"
    assert AuditEvent.objects.filter(action="dream.gave_up", object_id=str(run.pk)).count() == 1
    assert django_digest(STORED) == stored
    assert not project.candidates.exists()

    # The state is visible to people, and the project is free for the next sweep.
    client.force_login(alice)
    page = client.get(reverse("dreaming:run", args=[project.slug, run.pk]))
    assert b"gave up after 3 attempts" in page.content
    monkeypatch.undo()
    again = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    assert services.dream_execute(run_id=again.pk).status == DreamRun.Status.SUCCEEDED
