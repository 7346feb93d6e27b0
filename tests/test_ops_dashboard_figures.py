"""Each dashboard figure against data that makes it non-trivial (ops/dashboard_figures.py).

Rows are placed on chosen days directly; the tests that go through the real services
show that what the services write is what the figures read.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from dreaming import services as dreaming
from dreaming.models import Conflict
from llmwiki import wiki
from llmwiki.models import Claim, Episode, Export, Page, PageRevision
from ops.dashboard_figures import METRICS, Scope, export_status, percentile
from reviews import actions, conflicts
from reviews.errors import ReviewRefused
from reviews.exports.service import stale_export_ids
from tests.dashboard_data import (
    audit,
    candidate,
    conflict,
    day_at,
    orphan_episode,
    run,
    trace,
)
from tests.dreaming_data import seed


def series(key, project, days=7, now=None):
    scope = Scope.last([project.pk], days, now=now)
    return METRICS[key].values(scope)


def approve(c, user):
    return actions.candidate_approve(candidate=c, reviewer=user, seen=actions.form_state(c))


def dream(project):
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    return dreaming.dream_execute(run_id=run.pk)


def test_percentile_is_nearest_rank():
    assert percentile(list(range(100, 2001, 100)), 95) == 1900  # interpolation says 1905
    assert percentile([7], 95) == 7
    assert percentile([], 95) is None
    assert percentile([5, 1, 3], 50) == 3


def test_episodes_ingested_counts_by_recorded_day_without_bookkeeping(project, other_project):
    seed(project)  # 13 episodes today
    seed(other_project, ["memory/2026-11-02.md"])
    early = list(Episode.objects.filter(project=project).order_by("id")[:4])
    Episode.objects.filter(pk__in=[e.pk for e in early])._unchecked_update(recorded_at=day_at(2))
    Episode.objects.create(
        project=project,
        occurred_at=timezone.now(),
        actor="system",
        kind=Episode.Kind.APPROVAL,
        content="Approved claim 1.",
        content_hash="1" * 64,
    )
    assert series("episodes", project) == [0, 0, 0, 0, 4, 0, 9]


def test_review_services_write_what_promoted_rejected_refused_and_acceptance_read(
    project, alice, bob
):
    seed(project)
    sourced = list(Episode.objects.filter(project=project).order_by("id")[:3])
    one, two, three = (
        candidate(project, k, evidence=[e], text=f"Fact {k} about staging.")
        for k, e in zip("abc", sourced, strict=True)
    )
    orphan = candidate(project, "orphan", evidence=[orphan_episode(project)])
    approve(one, bob)
    approve(two, bob)
    actions.candidate_reject(
        candidate=three, reviewer=bob, seen=actions.form_state(three), reason="wrong"
    )
    for _ in range(2):  # refused twice: one candidate
        with pytest.raises(ReviewRefused, match="provenance incomplete"):
            approve(orphan, bob)
    audit(project, "candidate.rejected", day_at(3))
    assert series("promoted", project) == [0] * 6 + [2]
    assert series("rejected", project) == [0, 0, 0, 1, 0, 0, 1]
    assert series("provenance", project) == [0] * 6 + [1]
    assert series("proposed", project) == [0] * 6 + [4]
    rate = series("acceptance", project)
    assert rate[3] == 0.0 and rate[-1] == pytest.approx(2 / 3)
    assert rate[:3] == [None] * 3  # no decisions is no rate, not 0%
    scope = Scope.last([project.pk], 7)
    assert METRICS["acceptance"].summary(scope) == pytest.approx(2 / 4)
    assert METRICS["promoted"].summary(scope) == 2


def test_a_page_rollback_counts_once_on_its_day(project, alice, bob):
    seed(project)
    sourced = list(Episode.objects.filter(project=project).order_by("id")[:2])
    first, second = (
        candidate(project, k, evidence=[e]) for k, e in zip("ab", sourced, strict=True)
    )
    approve(first, bob)
    approve(second, bob)
    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    wiki.page_rollback(page=page, revision=page.revisions.get(number=1), actor=alice, reason="x")
    audit(project, "page.rollback", day_at(5), obj_type="Page")
    assert series("rollbacks", project) == [0, 1, 0, 0, 0, 0, 1]


def test_proposed_and_blocked_count_by_creation_day(project, other_project):
    candidate(project, "a", created=day_at(1))
    candidate(project, "b", created=day_at(1), status="blocked", blocked_reason="flag secret:x")
    # Unblocked since: still a candidate the sweep blocked that day.
    candidate(project, "c", created=day_at(4), status="proposed", blocked_reason="flag pii:x")
    candidate(project, "d", created=day_at(9))  # before the window
    candidate(other_project, "e", created=day_at(1), status="blocked", blocked_reason="x")
    assert series("proposed", project) == [0, 0, 1, 0, 0, 2, 0]
    assert series("blocked", project) == [0, 0, 1, 0, 0, 1, 0]


def test_duplicate_compression_reads_the_counts_a_real_sweep_records(project):
    seed(project)
    dream(project)  # 13 usable sentences, 0 folded, 8 facts
    assert series("compression", project)[-1] == pytest.approx(13 / 8)


def test_duplicate_compression_pools_the_days_sweeps_and_skips_previews(project):
    kw = {"engine_sentences": 13, "engine_junk_sentences": 1, "duplicates": 2, "engine_clusters": 7}
    run(project, day_at(2), **kw)
    run(project, day_at(2, hour=18), engine_sentences=5, engine_clusters=5)
    run(project, day_at(2, hour=20), trigger="preview", engine_sentences=90, engine_clusters=1)
    run(project, day_at(2, hour=21), status="failed", engine_sentences=90, engine_clusters=1)
    values = series("compression", project)
    assert values[4] == pytest.approx((12 + 2 + 5) / 12)
    assert values[:4] == [None] * 4


def test_p95_latencies_per_day_and_pooled_across_projects(project, other_project):
    for ms in range(100, 2001, 100):
        run(project, day_at(1), duration_ms=ms)
    run(project, day_at(1), duration_ms=60_000, trigger="preview")  # previews count too
    for ms in (5, 6, 7, 40):
        trace(project, day_at(3), ms)
    trace(other_project, day_at(3), 900)
    assert series("dream_p95", project)[-2] == 2000  # 21 samples: rank 20 of 21
    assert series("recall_p95", project)[-4] == 40
    everyone = Scope.last(None, 7)
    assert METRICS["recall_p95"].values(everyone)[-4] == 900
    assert METRICS["recall_p95"].summary(everyone, [project.pk]) == 40


def test_contradictions_questions_ages_and_resolution_time(project, other_project):
    now = timezone.now()
    a = conflict(project, "a", day_at(5))  # open all along
    b = conflict(project, "b", day_at(4), resolved=day_at(1, hour=9))
    audit(project, "conflict.escalate", day_at(2), obj_type="Conflict", obj_id=b.pk)
    conflict(project, "c", day_at(3, hour=8), resolved=day_at(3, hour=20))  # same day
    conflict(project, "old", day_at(40), resolved=day_at(30))  # before the window
    conflict(other_project, "z", day_at(5))
    assert series("contradictions", project, now=now) == [0, 1, 2, 2, 1, 1, 1]
    assert series("questions", project, now=now) == [0, 0, 0, 0, 1, 0, 0]
    oldest = series("contradiction_oldest", project, now=now)
    assert oldest[0] is None
    assert oldest[1] == pytest.approx(0.5)  # detected at noon, read at midnight
    assert oldest[-1] == pytest.approx((now - a.detected_at).total_seconds() / 86400)
    median = series("contradiction_median", project, now=now)
    assert median[2] == pytest.approx((1.5 + 0.5) / 2)
    resolution = series("resolution_days", project, now=now)
    assert resolution[3] == pytest.approx(0.5)
    assert resolution[5] == pytest.approx(3 - 3 / 24)
    assert resolution[-1] is None


def test_an_escalation_through_the_service_moves_a_conflict_to_the_backlog(project, bob):
    seed(project)
    dream(project)
    found = Conflict.objects.get(project=project)
    assert series("contradictions", project)[-1] == 1
    conflicts.conflict_resolve(conflict=found, actor=bob, resolution="escalate", owner=bob)
    assert series("contradictions", project)[-1] == 0
    assert series("questions", project)[-1] == 1


@pytest.fixture
def page(project):
    return Page.objects.get(project=project, key="SYSTEM_OVERVIEW")


def claim(page, bob, *, approved, cited, status="approved"):
    c = Claim.objects.create(
        project_id=page.project_id,
        page=page,
        text="x",
        reviewer=bob,
        approved_at=approved,
        status=status,
    )
    if cited:
        c.evidence.add(orphan_episode(page.project, content=f"evidence for {c.pk}"))
    return c


def revision(page, number, at, claims):
    return PageRevision.objects.create(
        page=page,
        number=number,
        markdown=f"r{number}",
        reason="t",
        claim_ids=[c.pk for c in claims],
        created_at=at,
    )


def test_citation_coverage_follows_each_pages_latest_revision(project, page, bob):
    c1 = claim(page, bob, approved=day_at(10), cited=True)
    c2 = claim(page, bob, approved=day_at(10), cited=False)
    c3 = claim(page, bob, approved=day_at(3), cited=True)
    gone = claim(page, bob, approved=day_at(3), cited=False, status="erased")
    revision(page, 1, day_at(10), [c1, c2])  # before the window: its state carries in
    revision(page, 2, day_at(3, hour=9), [c1])
    revision(page, 3, day_at(3, hour=15), [c1, c2, c3, gone])
    other = Page.objects.get(project=project, key="RUNBOOKS")
    c4 = claim(other, bob, approved=day_at(1), cited=True)
    revision(other, 1, day_at(1), [c4])
    claim(other, bob, approved=day_at(1, hour=13), cited=False)  # on no revision yet
    coverage = series("coverage", project)
    assert coverage[:3] == [0.5] * 3
    assert coverage[3] == pytest.approx(2 / 3)  # r3 is the day's last
    assert coverage[5] == pytest.approx(3 / 4)  # both pages
    unsupported = series("unsupported", project)
    assert unsupported[3] == 0.0  # c3; the erased claim is no claim any more
    assert unsupported[5] == pytest.approx(1 / 2)
    assert unsupported[0] is None


def test_coverage_of_pages_that_cite_no_claims_is_no_value(project, page):
    revision(page, 1, day_at(2), [])
    assert series("coverage", project) == [None] * 7


def export(project, at, **kw):
    return Export.objects.create(
        project=project,
        kind="handoff",
        audience="internal",
        generated_at=at,
        generator_version="t",
        manifest_sha256="0" * 64,
        path="x",
        **kw,
    )


def test_export_age_counts_from_the_newest_export_of_each_day(project, other_project):
    now = timezone.now()
    export(project, day_at(10))
    export(project, day_at(2))
    ages = series("export_age", project, now=now)
    assert ages[0] == pytest.approx(4.5)  # end of day 6 ago, export 10 days ago at noon
    assert ages[4] == pytest.approx(0.5)
    assert ages[-1] == pytest.approx((now - day_at(2)).total_seconds() / 86400)
    assert series("export_age", other_project) == [None] * 7


def test_export_status_marks_the_newest_stale_across_projects(project, other_project, bob):
    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    c = claim(page, bob, approved=day_at(5), cited=True)
    r = revision(page, 1, day_at(5), [c])
    Page.objects.filter(pk=page.pk).update(current_revision=r)
    theirs = Page.objects.get(project=other_project, key="SYSTEM_OVERVIEW")
    r2 = revision(theirs, 1, day_at(5), [])
    Page.objects.filter(pk=theirs.pk).update(current_revision=r2)
    export(project, day_at(9))
    newest = export(project, day_at(1))
    newest.claims.add(c)
    newest.revisions.add(r)
    their = export(other_project, day_at(1))
    their.revisions.add(r2)
    assert stale_export_ids([newest.pk, their.pk]) == set()  # one call, two projects
    status = export_status()
    assert status[project.pk].export_id == newest.pk and not status[project.pk].stale
    c.transition(Claim.Status.RETRACTED, actor="t")
    assert export_status([project.pk])[project.pk].stale
    assert not export_status()[other_project.pk].stale


def test_every_metric_is_registered_with_a_definition():
    assert len(METRICS) >= 18
    for m in METRICS.values():
        assert len(m.definition) > 40, m.key
        assert m.unit in {"count", "percent", "ms", "days", "ratio"}


def test_the_scope_ends_today_in_the_configured_time_zone(settings):
    settings.TIME_ZONE = "Pacific/Auckland"
    now = timezone.now()
    with timezone.override("Pacific/Auckland"):
        scope = Scope.last(None, 7, now=now)
        assert scope.days[-1] == timezone.localdate(now)
        assert scope.end - scope.start == timedelta(days=7)


def test_metrics_endpoint_exports_the_dashboards_export_staleness(client, project, bob):
    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    c = claim(page, bob, approved=day_at(5), cited=True)
    newest = export(project, day_at(1))
    newest.claims.add(c)
    body = client.get("/metrics").content.decode()
    assert 'llmwiki_export_stale{project="tidewater"} 0' in body
    age = int(body.split('llmwiki_export_age_seconds{project="tidewater"} ')[1].split()[0])
    assert abs(age - (timezone.now() - day_at(1)).total_seconds()) < 60
    c.transition(Claim.Status.RETRACTED, actor="t")
    assert 'llmwiki_export_stale{project="tidewater"} 1' in client.get("/metrics").content.decode()
    assert "elsewhere" not in body  # no export, no series
