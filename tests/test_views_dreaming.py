from __future__ import annotations

import json

from django.urls import reverse

from dreaming import services
from dreaming.models import Candidate, DreamRun
from llmwiki.models import AuditEvent, Project
from tests.dreaming_data import seed


def url(name, project, *args):
    return reverse(f"dreaming:{name}", args=[project.slug, *args])


def dreamed(project) -> DreamRun:
    seed(project)
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    return services.dream_execute(run_id=run.pk)


def test_the_status_page_shows_counts_schedule_and_runs(client, carol, project):
    run = dreamed(project)
    client.force_login(carol)
    response = client.get(url("status", project))
    assert response.status_code == 200
    assert response.context["counts"]["grounded"] >= 1
    assert f"#{run.pk}".encode() in response.content
    assert b"daily at 03:00</strong> UTC" in response.content
    assert response.context["next_run"] is not None
    assert b"Dream now" not in response.content  # viewers cannot trigger


def test_the_status_page_says_blocked_without_a_worker(client, alice, project, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    client.force_login(alice)
    assert b"blocked: no worker seen" in client.get(url("status", project)).content
    services.heartbeat_beat()
    assert b"blocked: no worker seen" not in client.get(url("status", project)).content


def test_a_reviewer_previews_and_is_taken_to_the_run(
    client, bob, project, django_capture_on_commit_callbacks
):
    seed(project)
    client.force_login(bob)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url("trigger", project), {"kind": "preview"})
    run = DreamRun.objects.get(project=project)
    assert response.status_code == 302 and response.url == url("run", project, run.pk)
    assert run.trigger == "preview" and run.status == "succeeded"
    assert not Candidate.objects.exists()
    page = client.get(response.url)
    assert b"what a real run would do" in page.content


def test_a_second_trigger_shows_the_open_run(client, bob, project):
    client.force_login(bob)
    open_run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    response = client.post(url("trigger", project), {"kind": "dream"}, follow=True)
    assert response.redirect_chain[-1][0] == url("run", project, open_run.pk)
    assert b"already queued" in response.content
    assert DreamRun.objects.count() == 1


def test_a_viewer_cannot_trigger(client, carol, project):
    client.force_login(carol)
    assert client.post(url("trigger", project), {"kind": "dream"}).status_code == 403
    assert not DreamRun.objects.exists()


def test_trigger_needs_post(client, bob, project):
    client.force_login(bob)
    assert client.get(url("trigger", project)).status_code == 405


def test_a_bad_backfill_range_is_explained(client, bob, project):
    client.force_login(bob)
    response = client.post(
        url("trigger", project),
        {"kind": "backfill", "since": "2026-11-10", "until": "2026-11-01"},
        follow=True,
    )
    assert b"starts after it ends" in response.content
    assert not DreamRun.objects.exists()


def test_the_run_page_polls_while_open_and_returns_only_the_fragment(client, carol, project):
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    client.force_login(carol)
    response = client.get(url("run", project, run.pk), headers={"HX-Request": "true"})
    assert response.content.lstrip().startswith(b'<div id="run-progress"')
    assert b'hx-trigger="every 2s"' in response.content
    assert b"Candidates from this run" not in response.content
    services.dream_execute(run_id=run.pk)
    response = client.get(url("run", project, run.pk), headers={"HX-Request": "true"})
    assert b"every 2s" not in response.content


def test_the_poll_that_sees_the_run_finish_brings_its_candidates(client, bob, carol, project):
    seed(project)
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    services.dream_execute(run_id=run.pk)
    candidates = list(Candidate.objects.filter(run=run))
    assert candidates
    client.force_login(bob)
    response = client.get(url("run", project, run.pk), headers={"HX-Request": "true"})
    html = response.content.decode()
    assert "Candidates from this run" in html
    for c in candidates:
        assert url("explain", project, c.pk) in html
    assert f'href="{reverse("reviews:queue", args=[project.slug])}"' in html
    # A viewer may not open the queue; the link goes to the candidate list instead.
    client.force_login(carol)
    html = client.get(url("run", project, run.pk), headers={"HX-Request": "true"}).content
    assert reverse("reviews:queue", args=[project.slug]).encode() not in html
    assert url("candidates", project).encode() in html


def test_a_finished_run_that_proposed_nothing_says_so(client, bob, project):
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    services.dream_execute(run_id=run.pk)
    client.force_login(bob)
    response = client.get(url("run", project, run.pk))
    assert b"This run proposed nothing new." in response.content


def test_the_run_page_shows_the_diary(client, carol, project):
    run = dreamed(project)
    client.force_login(carol)
    response = client.get(url("run", project, run.pk))
    assert run.diary[:40].encode() in response.content


def test_a_run_of_another_project_is_404(client, carol, project, other_project):
    run = dreamed(other_project)
    client.force_login(carol)
    assert client.get(url("run", project, run.pk)).status_code == 404


def test_the_candidate_list_runs_a_constant_number_of_queries(
    client, carol, project, django_assert_max_num_queries
):
    dreamed(project)
    client.force_login(carol)
    with django_assert_max_num_queries(8):
        response = client.get(url("candidates", project))
    assert response.status_code == 200
    assert response.context["page"].paginator.count >= 1


def test_the_explain_view_shows_every_signal_and_its_evidence(client, carol, project):
    dreamed(project)
    candidate = Candidate.objects.filter(project=project, text__contains="db-staging-2").get()
    client.force_login(carol)
    response = client.get(url("explain", project, candidate.pk))
    assert response.status_code == 200
    for name in (
        "relevance",
        "frequency",
        "query_diversity",
        "recency",
        "recurrence",
        "source_trust",
        "richness",
    ):
        assert name.encode() in response.content
    assert response.content.count(b"sha256 ") == 5


def test_explain_is_404_for_outsiders(client, mallory, project):
    dreamed(project)
    candidate = Candidate.objects.filter(project=project).first()
    client.force_login(mallory)
    assert client.get(url("explain", project, candidate.pk)).status_code == 404


def test_a_maintainer_edits_the_policy_and_toggles_dreaming(client, alice, project):
    client.force_login(alice)
    response = client.get(url("policy", project))
    policy = json.loads(response.context["form"].initial["policy"])
    policy["max_proposals"] = 7
    response = client.post(url("policy", project), {"policy": json.dumps(policy)})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.dream_policy["max_proposals"] == 7
    assert project.dreaming_enabled is False
    assert AuditEvent.objects.filter(action="project.dreaming").exists()


def test_an_invalid_policy_is_refused_with_the_field_named(client, alice, project):
    client.force_login(alice)
    response = client.post(
        url("policy", project),
        {"policy": '{"weights": {"relevance": -1}}', "dreaming_enabled": "on"},
    )
    assert response.status_code == 200
    assert b"weights.relevance" in response.content
    response = client.post(url("policy", project), {"policy": "{nope", "dreaming_enabled": "on"})
    assert b"not valid JSON" in response.content
    assert Project.objects.get(pk=project.pk).dream_policy == {}


def test_a_policy_nested_too_deep_is_a_form_error_not_a_500(client, alice, project):
    client.force_login(alice)
    deep = '{"weights": ' + "[" * 2000 + "]" * 2000 + "}"
    response = client.post(url("policy", project), {"policy": deep, "dreaming_enabled": "on"})
    assert response.status_code == 200
    assert b"JSON nested deeper than 100 levels" in response.content
    assert Project.objects.get(pk=project.pk).dream_policy == {}


def test_a_reviewer_cannot_edit_the_policy(client, bob, project):
    client.force_login(bob)
    assert client.get(url("policy", project)).status_code == 403
    assert client.post(url("policy", project), {"policy": "{}"}).status_code == 403


def test_setup_schedules_is_idempotent(project):
    from django.core.management import call_command
    from django_q.models import Schedule

    call_command("setup_schedules")
    call_command("setup_schedules")
    schedule = Schedule.objects.get(name=f"dream:{project.slug}")
    assert (schedule.cron, schedule.func) == ("0 3 * * *", "dreaming.tasks.dream_scheduled")
    assert Schedule.objects.filter(name="llmwiki-heartbeat").count() == 1
    Project.objects.filter(pk=project.pk).update(dreaming_enabled=False)
    call_command("setup_schedules")
    assert not Schedule.objects.filter(name=f"dream:{project.slug}").exists()
