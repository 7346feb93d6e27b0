"""The audit log page (llmwiki.audit_views; erasing a source is llmwiki.erasure_views), through the test client."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import resolve, reverse

from llmwiki.models import AuditEvent


def audit_url(project) -> str:
    return reverse("audit_log", args=[project.slug])


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


def test_the_audit_log_keeps_its_address_and_lives_beside_audit_event(project):
    assert audit_url(project) == "/p/tidewater/audit/"
    assert resolve("/p/tidewater/audit/").func.__module__ == "llmwiki.audit_views"


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
