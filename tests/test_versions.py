"""Re-importing an edited note supersedes what its earlier version said (issue 9, §1)."""

from __future__ import annotations

import re
from datetime import date

import pytest
from django.urls import reverse

from dreaming import services as dreaming
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import AuditEvent, Episode, Source

PATH = "notes/ops.md"
V1 = """# Ops notes

## Hosts
- The shipment worker runs on tw-app-1 behind nginx.
- The staging database runs PostgreSQL 15 on db-staging-2.
- Backups run nightly at 02:00 UTC.
"""
V2 = """# Ops notes

## Hosts
- The shipment worker runs on tw-app-1 behind nginx.
- The staging database runs PostgreSQL 16 on db-staging-2.
"""


def ingest(project, text: str, path: str = PATH):
    return ingest_files(project=project, files=[RawFile(path, text.encode())], actor="system")


def episodes(project, **filters) -> dict[str, str]:
    rows = Episode.objects.filter(project=project, source__path=PATH, **filters)
    return {content: status for content, status in rows.values_list("content", "status")}


def find(project, words: str) -> Episode:
    return Episode.objects.get(project=project, content__contains=words)


@pytest.fixture
def updated(project):
    ingest(project, V1)
    report = ingest(project, V2)
    return project, report


def test_an_edited_note_supersedes_the_paragraphs_it_changed_or_dropped(updated):
    project, report = updated
    v2 = Source.objects.get(project=project, path=PATH, previous__isnull=False)
    old_pg = find(project, "PostgreSQL 15")
    backups = find(project, "Backups run nightly")
    for episode in (old_pg, backups):
        assert episode.status == Episode.Status.SUPERSEDED
        assert episode.superseded_by_source == v2
        assert episode.content  # kept as history, not erased
    worker = find(project, "shipment worker")
    assert worker.status == Episode.Status.ACTIVE  # unchanged: still current, not doubled
    assert Episode.objects.filter(project=project, content__contains="shipment worker").count() == 1
    assert find(project, "PostgreSQL 16").source == v2
    (result,) = report.sources
    assert (result.status, result.episodes, result.superseded) == ("updated", 1, 2)
    assert result.outcome == "imported as a new version (2 earlier episode(s) superseded)"
    event = AuditEvent.objects.get(action="source.ingest", object_id=str(v2.pk))
    assert event.after["superseded"] == 2


def test_a_paragraph_restored_in_a_later_version_is_current_again(updated):
    project, _ = updated
    ingest(project, V2 + "- Backups run nightly at 02:00 UTC.\n")
    backups = Episode.objects.filter(project=project, content__contains="Backups run nightly")
    assert sorted(backups.values_list("status", flat=True)) == ["active", "superseded"]


def test_other_files_and_quarantined_paragraphs_are_left_alone(project):
    ingest(project, V1)
    ingest(project, V1.replace("ops", "dev"), path="notes/dev.md")
    held = find(project, "Backups run nightly")
    Episode.objects.filter(pk=held.pk)._unchecked_update(status=Episode.Status.QUARANTINED)
    ingest(project, V2)
    held.refresh_from_db()
    assert held.status == Episode.Status.QUARANTINED
    assert not Episode.objects.filter(
        source__path="notes/dev.md", status=Episode.Status.SUPERSEDED
    ).exists()


@pytest.mark.parametrize("trigger", ["manual", "backfill"])
def test_the_next_sweep_reads_no_superseded_episode(updated, trigger):
    project, _ = updated
    superseded = set(
        Episode.objects.filter(project=project, status="superseded").values_list("id", flat=True)
    )
    assert superseded
    extra = {}
    if trigger == "backfill":
        extra = {"backfill": (date(2000, 1, 1), date(2100, 1, 1))}
    run = dreaming.dream_request(
        project=project, trigger=trigger, actor="t", enqueue=False, **extra
    )
    run = dreaming.dream_execute(run_id=run.pk)
    assert (
        run.phases["light"]["selected"]
        == Episode.objects.filter(project=project, status="active")
        .exclude(kind__in=Episode.BOOKKEEPING_KINDS)
        .count()
    )
    cited = set(project.candidates.values_list("evidence__episode_id", flat=True)) | set(
        project.conflicts.values_list("sides__evidence", flat=True)
    )
    assert not cited & superseded
    assert "PostgreSQL 15" not in run.diary


def test_the_episode_list_says_which_episodes_a_newer_version_replaced(client, alice, updated):
    project, _ = updated
    client.force_login(alice)
    body = client.get(reverse("episode_list", args=[project.slug])).content.decode()
    old = find(project, "PostgreSQL 15")
    row = body[body.index(f'id="episode-{old.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "superseded" in row
    assert f"replaced by the newer version of {PATH} imported" in re.sub(r"<[^>]+>", "", row)
    current = find(project, "PostgreSQL 16")
    row = body[body.index(f'id="episode-{current.pk}"') :]
    assert "replaced by" not in row[: row.index("</tr>")]
