"""Fault: a web write arrives while a long sweep holds SQLite's write lock.

Expected: the request waits (IMMEDIATE transactions plus the busy timeout) and succeeds;
when the lock outlasts the timeout it answers 503 "busy, try again" with Retry-After —
never a 500 — and writes nothing, so repeating it later works.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from dreaming import services
from dreaming.models import DreamRun
from llmwiki.models import Source
from tests.api_data import bearer
from tests.dreaming_data import seed
from tests.reliability.digest import STORED, SWEPT, django_digest

NOTE = b"# Ops\n\n- Deploys to tw-app-1 happen at 14:00 on weekdays.\n"

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's single-writer lock")


class LongSweep(threading.Thread):
    """A real sweep whose write transaction stays open for `hold` seconds."""

    def __init__(self, run_id: int, hold: float, monkeypatch) -> None:
        super().__init__(daemon=True)
        self.run_id, self.hold = run_id, hold
        self.holding = threading.Event()
        self.result: DreamRun | None = None
        real = services._persist

        def slow(run, computed):
            counts = real(run, computed)
            self.holding.set()
            time.sleep(self.hold)
            return counts

        monkeypatch.setattr(services, "_persist", slow)

    def run(self) -> None:
        from django.db import connection as own

        try:
            self.result = services.dream_execute(run_id=self.run_id)
        finally:
            self.holding.set()
            own.close()


@pytest.fixture
def sweeping(transactional_db, project, monkeypatch):
    seed(project)
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)

    def start(hold: float) -> LongSweep:
        sweep = LongSweep(run.pk, hold, monkeypatch)
        sweep.start()
        assert sweep.holding.wait(60)
        return sweep

    return start


def upload(client, project, name: str):
    return client.post(
        reverse("upload", args=[project.slug]), {"files": [SimpleUploadedFile(name, NOTE)]}
    )


def test_a_web_write_during_a_sweep_waits_and_succeeds(client, alice, project, sweeping):
    client.force_login(alice)
    sweep = sweeping(hold=1.0)
    started = time.perf_counter()
    response = upload(client, project, "ops.md")
    waited = time.perf_counter() - started
    sweep.join(60)

    assert response.status_code == 200
    assert waited >= 0.5  # it really queued behind the sweep's transaction
    assert sweep.result.status == DreamRun.Status.SUCCEEDED
    assert Source.objects.filter(project=project, path="ops.md").count() == 1
    assert project.candidates.exists()


def test_a_web_write_that_outwaits_the_timeout_is_told_to_retry(client, alice, project, sweeping):
    client.force_login(alice)
    token = bearer(project, alice, "write-events")
    stored = django_digest(STORED)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 200")
    try:
        sweep = sweeping(hold=2.0)
        response = upload(client, project, "ops.md")
        api = client.post(
            f"/api/projects/{project.slug}/events",
            {"content": "Deploys to tw-app-1 happen at 15:00 now."},
            content_type="application/json",
            headers=token,
        )
        sweep.join(60)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA busy_timeout = 20000")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"Busy, try again" in response.content
    assert b"database is busy" in response.content
    assert api.status_code == 503
    assert api.json()["message"].startswith("The database is busy")
    assert f"try again in {api['Retry-After']} s" in api.json()["message"]
    # Nothing of the refused upload was stored; the sweep went through whole.
    assert django_digest(STORED) == stored
    assert sweep.result.status == DreamRun.Status.SUCCEEDED
    swept = django_digest(SWEPT)
    # Repeating the request once the sweep is done works.
    assert upload(client, project, "ops.md").status_code == 200
    assert Source.objects.filter(project=project, path="ops.md").count() == 1
    assert django_digest(SWEPT) == swept
