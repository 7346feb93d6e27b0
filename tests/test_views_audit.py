"""The audit log page and the erasure confirmation, through the test client."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from llmwiki.blobs import blob_path
from llmwiki.models import AuditEvent, Episode, Source
from tests.dreaming_data import seed

# Until reviews/urls.py routes the audit views; harmless afterwards.

ERASED_PATH = "memory/2026-11-02.md"


def audit_url(project) -> str:
    return reverse("reviews:audit_log", args=[project.slug])


def erase_url(project, source) -> str:
    return reverse("reviews:erase_source", args=[project.slug, source.pk])


def record(project, n: int, action: str = "candidate.approved", actor: str = "agent:x") -> None:
    for i in range(n):
        AuditEvent.record(
            actor=actor,
            action=action,
            obj=project,
            before={"status": "proposed", "version": i},
            after={"status": "approved", "version": i + 1},
            note=f"event {i}",
        )


@pytest.fixture
def source(project) -> Source:
    seed(project, [ERASED_PATH])
    return Source.objects.get(project=project, path=ERASED_PATH)


# --- Audit log ------------------------------------------------------------------------------


def test_a_reviewer_sees_events_newest_first_with_json_and_note(client, bob, project):
    AuditEvent.record(
        actor=bob,
        action="claim.retract",
        obj=project,
        before={"status": "approved"},
        after={"status": "retracted"},
        note="host was renamed",
    )
    client.force_login(bob)
    response = client.get(audit_url(project))
    assert response.status_code == 200
    rows = response.context["rows"]
    assert rows[0]["event"].action == "claim.retract"  # the newest
    ats = [r["event"].at for r in rows]
    assert ats == sorted(ats, reverse=True)
    body = response.content.decode()
    assert "<code>{&quot;status&quot;: &quot;approved&quot;}</code>" in body
    assert "host was renamed" in body and "user:bob" in body
    assert response.context["nav"] == "audit" and response.context["project"] == project


def test_a_maintainer_sees_it_too(client, alice, project):
    client.force_login(alice)
    assert client.get(audit_url(project)).status_code == 200


def test_filters_by_action_prefix_actor_and_date(client, bob, project):
    record(project, 2, action="candidate.approved", actor="user:alice")
    record(project, 3, action="page.revision", actor="user:bob")
    AuditEvent.objects.create(
        project=project,
        at=datetime(2025, 1, 15, 12, tzinfo=UTC),
        actor="system",
        action="dream.settle",
        object_type="DreamRun",
        object_id="7",
    )
    client.force_login(bob)
    response = client.get(audit_url(project))
    choices = [value for value, _ in response.context["form"].fields["action"].choices]
    assert {"candidate.", "page.", "dream.", "project.", "membership."} <= set(choices)

    def actions(**params) -> list[str]:
        r = client.get(audit_url(project), params)
        assert r.status_code == 200
        return [row["event"].action for row in r.context["rows"]]

    assert actions(action="page.") == ["page.revision"] * 3
    assert actions(actor="ALICE") == ["candidate.approved"] * 2
    assert actions(since="2025-01-01", until="2025-01-31") == ["dream.settle"]
    assert actions(until="2024-12-31") == []
    assert actions(action="page.", actor="alice") == []
    # An unknown prefix is reported, and the valid filters still apply.
    r = client.get(audit_url(project), {"action": "nope.", "actor": "alice"})
    assert r.context["form"].errors["action"]
    assert {row["event"].actor for row in r.context["rows"]} == {"user:alice"}


def test_an_empty_result_says_so(client, bob, project):
    client.force_login(bob)
    response = client.get(audit_url(project), {"actor": "nobody-at-all"})
    assert b"Nothing matches these filters" in response.content


def test_htmx_gets_only_the_results_region(client, bob, project):
    client.force_login(bob)
    response = client.get(
        audit_url(project), {"action": "project."}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    body = response.content.decode().strip()
    assert body.startswith('<section id="audit-results"')
    assert "<html" not in body and "<form" not in body
    assert "project.create" in body and "membership.set" not in body
    assert "HX-Request" in response["Vary"]
    full = client.get(audit_url(project)).content.decode()
    assert 'hx-get="/p/tidewater/audit/"' in full and 'hx-push-url="true"' in full
    assert 'action="/p/tidewater/audit/"' in full and 'hx-target="#audit-results"' in full


def test_fifty_per_page_with_real_links(client, bob, project):
    record(project, 60)
    total = AuditEvent.objects.filter(project=project).count()
    client.force_login(bob)
    first = client.get(audit_url(project), {"action": "candidate."})
    assert len(first.context["rows"]) == 50
    assert b'href="?action=candidate.&amp;page=2"' in first.content
    second = client.get(audit_url(project), {"action": "candidate.", "page": 2})
    assert len(second.context["rows"]) == 10
    assert b'href="?action=candidate.&amp;page=1"' in second.content
    assert client.get(audit_url(project), {"page": 99}).context["page"].number == (
        (total + 49) // 50
    )


def test_the_query_count_does_not_grow_with_rows(client, bob, project, django_assert_num_queries):
    client.force_login(bob)
    record(project, 5)
    client.get(audit_url(project))  # warm up session and content-type caches
    with CaptureQueriesContext(connection) as few:
        assert client.get(audit_url(project)).status_code == 200
    record(project, 55)
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(audit_url(project))
    assert len(response.context["rows"]) == 50


def test_anonymous_users_are_sent_to_log_in(client, project):
    response = client.get(audit_url(project))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_outsiders_get_404_and_viewers_403(client, mallory, carol, project):
    client.force_login(mallory)
    assert client.get(audit_url(project)).status_code == 404
    client.force_login(carol)
    assert client.get(audit_url(project)).status_code == 403


def test_the_audit_log_is_get_only(client, bob, project):
    client.force_login(bob)
    assert client.post(audit_url(project)).status_code == 405


# --- Erasure ---------------------------------------------------------------------------------


def test_the_confirmation_page_says_what_will_happen(client, alice, project, source):
    client.force_login(alice)
    response = client.get(erase_url(project, source))
    assert response.status_code == 200
    body = response.content.decode()
    assert source.path in body and source.sha256 in body
    assert response.context["impact"]["episodes"] == 3
    assert "lose their content" in body and 'name="confirm"' in body
    assert 'action="/p/tidewater/sources/' in body


def test_erasing_redirects_to_the_audit_log(
    client, alice, project, source, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            erase_url(project, source),
            {"note": "subject access request", "confirm": source.original_name},
        )
    assert response.status_code == 302 and response.url == audit_url(project)
    source.refresh_from_db()
    assert source.status == "erased"
    assert not blob_path(source.sha256).exists()
    assert set(Episode.objects.filter(source=source).values_list("content", flat=True)) == {""}
    page = client.get(response.url)
    assert b"Erased memory/2026-11-02.md: 3 episode(s)" in page.content
    event = page.context["rows"][0]["event"]
    assert event.action == "source.erase" and event.note == "subject access request"
    # Afterwards the confirmation page says it is done and offers no form.
    again = client.get(erase_url(project, source))
    assert b"Already erased" in again.content and b'name="confirm"' not in again.content


def test_a_wrong_confirmation_changes_nothing(client, alice, project, source):
    client.force_login(alice)
    before = list(Episode.objects.filter(source=source).values_list("content", "status"))
    for data in (
        {"note": "subject access request", "confirm": "2026-11-03.md"},
        {"note": "subject access request", "confirm": ""},
        {"note": "   ", "confirm": source.original_name},
    ):
        response = client.post(erase_url(project, source), data)
        assert response.status_code == 400
        assert response.context["form"].errors
    assert (
        b"That is not the file name"
        in client.post(erase_url(project, source), {"note": "x", "confirm": "nope.md"}).content
    )
    source.refresh_from_db()
    assert source.status == "active" and blob_path(source.sha256).exists()
    assert list(Episode.objects.filter(source=source).values_list("content", "status")) == before
    assert not AuditEvent.objects.filter(action="source.erase").exists()


def test_posting_to_an_erased_source_is_refused(client, alice, project, source):
    client.force_login(alice)
    data = {"note": "subject access request", "confirm": source.original_name}
    client.post(erase_url(project, source), data)
    response = client.post(erase_url(project, source), data)
    assert response.status_code == 400
    assert AuditEvent.objects.filter(action="source.erase").count() == 1


def test_only_maintainers_may_erase(client, bob, carol, mallory, project, source):
    data = {"note": "please", "confirm": source.original_name}
    for user, status in ((bob, 403), (carol, 403), (mallory, 404)):
        client.force_login(user)
        assert client.get(erase_url(project, source)).status_code == status
        assert client.post(erase_url(project, source), data).status_code == status
    source.refresh_from_db()
    assert source.status == "active"


def test_another_projects_source_is_404(client, alice, project, other_project):
    seed(other_project, [ERASED_PATH])
    theirs = Source.objects.get(project=other_project)
    client.force_login(alice)
    assert client.get(erase_url(project, theirs)).status_code == 404
    assert client.get(erase_url(other_project, theirs)).status_code == 404


def test_erase_accepts_only_get_and_post(client, alice, project, source):
    client.force_login(alice)
    assert client.put(erase_url(project, source)).status_code == 405
    assert client.delete(erase_url(project, source)).status_code == 405


def test_anonymous_users_cannot_reach_the_erase_page(client, project, source):
    response = client.get(erase_url(project, source))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
