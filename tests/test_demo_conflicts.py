"""Conflicts a reviewer found missing in the demo, checked on the demo corpus itself.

The demo is ingested as ``load_demo`` does it, the staging-database fact is approved, and
two later logs state new values for settings the demo already holds: a database
version, a port, a job's schedule and host. A denial of the demo's queue decision is
swept with the demo. Each must come out as a conflict between the two statements, never
as one statement supporting the other.
"""

from __future__ import annotations

import pytest

from dreaming import services
from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.ingest import RawFile, collect_paths, ingest_files
from llmwiki.management.commands.load_demo import CORPUS
from llmwiki.services import project_create
from reviews import actions

DENIAL = """# 2026-11-15 — agent:scout

## Notes
- 18:30 We do not use Redis Streams for the shipment event queue.
"""
EARLIER = """# 2026-11-16 — agent:builder

## Notes
- 09:30 The events Redis listens on port 6380, separate from the cache.
- 10:00 The invoice export job runs every Monday 06:00 on tw-app-1.
"""
LATER = """# 2026-11-18 — agent:scout

## Notes
- 09:10 Staging runs on Postgres 15 after the restore test.
- 09:40 The events Redis listens on port 6379.
- 10:05 The invoice export job runs every Friday 16:00 on tw-app-2.
"""


def _sweep(project) -> DreamRun:
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    run = services.dream_execute(run_id=run.pk)
    assert run.status == DreamRun.Status.SUCCEEDED, run.error
    return run


@pytest.fixture
def demo(db, alice):
    project = project_create(slug="demo", name="Tidewater", actor="system", owner=alice)
    files = [f for f in collect_paths([CORPUS]) if f.path != "SEEDED.md"]
    files.append(RawFile("memory/2026-11-15-late.md", DENIAL.encode()))
    ingest_files(project=project, files=files, actor="system")
    _sweep(project)
    staging = next(
        c
        for c in Candidate.objects.filter(project=project, status=Candidate.Status.PROPOSED)
        if "db-staging-2" in c.text and "16" in c.text
    )
    actions.candidate_approve(candidate=staging, reviewer=alice, seen=actions.form_state(staging))
    new = [RawFile("memory/2026-11-16.md", EARLIER.encode())]
    new.append(RawFile("memory/2026-11-18.md", LATER.encode()))
    ingest_files(project=project, files=new, actor="system")
    _sweep(project)
    return project


def _conflict(project, *words: str) -> Conflict:
    """The one conflict with a side holding each of ``words`` (in any side)."""
    found = []
    for c in Conflict.objects.filter(project=project).prefetch_related("sides"):
        texts = [s.text for s in c.sides.all()]
        if all(any(w in t for t in texts) for w in words):
            found.append(c)
    assert len(found) == 1, [(c.subject, [s.text for s in c.sides.all()]) for c in found]
    return found[0]


def _sides_apart(conflict: Conflict, a: str, b: str) -> None:
    texts = [s.text for s in conflict.sides.all()]
    assert any(a in t and b not in t for t in texts), texts
    assert any(b in t and a not in t for t in texts), texts


def test_a_new_version_contradicts_the_approved_one(demo):
    c = _conflict(demo, "Postgres 15", "16")
    assert any(s.claim_id for s in c.sides.all())  # the approved claim is a side


def test_two_ports_of_one_instance_conflict(demo):
    _sides_apart(_conflict(demo, "port 6379", "port 6380"), "6379", "6380")


def test_two_schedules_of_one_job_conflict_and_are_not_filed_as_both_true(demo):
    _sides_apart(_conflict(demo, "Monday 06:00", "Friday 16:00"), "Monday", "Friday")
    for job in Candidate.objects.filter(project=demo, text__contains="invoice export job"):
        assert job.page_target == "OPEN_QUESTIONS", job.text


def test_a_denial_is_evidence_against_the_decision_not_for_it(demo):
    denial = "We do not use Redis Streams"
    _conflict(demo, "moved from RabbitMQ to Redis Streams", denial)
    moved = [
        c
        for c in Candidate.objects.filter(project=demo).prefetch_related("evidence__episode")
        if "moved from RabbitMQ to Redis Streams" in c.text
    ]
    assert moved
    for cand in moved:
        for ev in cand.evidence.all():
            if denial in ev.episode.content:
                assert ev.role == "contradict", (cand.text, ev.role)
