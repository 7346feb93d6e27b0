"""Wiki views: page list, page, history, diff, rollback, claim panel, retraction, by role."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming.models import Candidate, CandidateEvidence
from llmwiki import wiki
from llmwiki.errors import Refused
from llmwiki.models import AuditEvent, Claim, Page, PageRevision
from llmwiki.wiki import page_publish
from reviews import actions
from tests.dreaming_data import seed


def url(name, project, *args):
    return reverse(f"reviews:{name}", args=[project.slug, *args])


@pytest.fixture
def seeded(project):
    seed(project)
    return project


def approve_many(project, reviewer, n: int, start: int = 0) -> list[Claim]:
    """Approve `n` fresh claims on SYSTEM_OVERVIEW through the real review path."""
    episodes = list(project.episodes.filter(source__isnull=False)[:3])
    claims = []
    for i in range(start, start + n):
        candidate = Candidate.objects.create(
            project=project,
            text=f"Service tw-svc-{i} listens on port {8000 + i}.",
            page_target="SYSTEM_OVERVIEW",
            section=f"Services {i % 4}",
            memory_type="semantic-candidate",
            dedupe_key=f"many-{i}",
        )
        for episode in episodes:
            CandidateEvidence.objects.create(candidate=candidate, episode=episode)
        claims.append(
            actions.candidate_approve(
                candidate=candidate, reviewer=reviewer, seen=actions.form_state(candidate)
            )
        )
    return claims


# --- query counts --------------------------------------------------------------------------


def test_the_page_view_runs_a_constant_number_of_queries(
    client, alice, bob, carol, seeded, django_assert_num_queries
):
    approve_many(seeded, bob, 2)
    approve_many(seeded, alice, 1, start=2)
    client.force_login(carol)
    # One of them reads the labels of the claims the page cites, to withhold any above
    # the viewer's clearance.
    with django_assert_num_queries(7) as few:
        response = client.get(url("page", seeded, "SYSTEM_OVERVIEW"))
    assert response.content.count(b"approved by bob") == 2
    approve_many(seeded, bob, 27, start=3)
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(url("page", seeded, "SYSTEM_OVERVIEW"))
    assert response.content.count(b"approved by bob") == 29
    assert response.content.count(b"approved by alice") == 1


def test_history_and_claim_views_run_a_constant_number_of_queries(
    client, bob, carol, seeded, django_assert_num_queries
):
    first = approve_many(seeded, bob, 3)[0]
    client.force_login(carol)
    with django_assert_num_queries(6) as history_few:
        response = client.get(url("page_history", seeded, "SYSTEM_OVERVIEW"))
    assert response.content.count(b"<td>bob</td>") == 3
    with django_assert_num_queries(11) as claim_few:
        response = client.get(url("claim", seeded, first.pk))
    assert b"r3, r2, r1" in response.content
    approve_many(seeded, bob, 27, start=3)
    with django_assert_num_queries(len(history_few.captured_queries)):
        response = client.get(url("page_history", seeded, "SYSTEM_OVERVIEW"))
    assert response.content.count(b"<td>bob</td>") == 30
    with django_assert_num_queries(len(claim_few.captured_queries)):
        response = client.get(url("claim", seeded, first.pk))
    assert b"r30, r29" in response.content


# --- who may read ------------------------------------------------------------------------


@pytest.fixture
def claim(seeded, bob) -> Claim:
    return approve_many(seeded, bob, 1)[0]


def readable_urls(claim) -> list[str]:
    project = claim.project
    return [
        url("pages", project),
        url("page", project, "SYSTEM_OVERVIEW"),
        url("page_history", project, "SYSTEM_OVERVIEW"),
        url("page_diff", project, "SYSTEM_OVERVIEW"),
        url("claim", project, claim.pk),
    ]


def test_anonymous_users_are_sent_to_log_in(client, claim):
    for address in readable_urls(claim):
        response = client.get(address)
        assert response.status_code == 302 and response.url.startswith("/accounts/login/")


def test_an_outsider_gets_404_everywhere(client, mallory, claim):
    client.force_login(mallory)
    for address in readable_urls(claim):
        assert client.get(address).status_code == 404, address
    project = claim.project
    rollback = url("page_rollback", project, "SYSTEM_OVERVIEW")
    assert client.get(rollback, {"revision": 1}).status_code == 404
    assert client.post(rollback, {"revision": 1, "reason": "x"}).status_code == 404
    assert client.post(url("claim_retract", project, claim.pk), {"reason": "x"}).status_code == 404
    claim.refresh_from_db()
    assert claim.status == "approved"


@pytest.mark.parametrize("who", ["carol", "bob", "alice"])
def test_every_member_reads_pages_history_and_claims(client, claim, who, request):
    client.force_login(request.getfixturevalue(who))
    for address in readable_urls(claim):
        assert client.get(address).status_code == 200, address
    for name, args in (("page", ["SYSTEM_OVERVIEW"]), ("claim", [claim.pk])):
        assert claim.text.encode() in client.get(url(name, claim.project, *args)).content


def test_controls_follow_the_role(client, alice, bob, carol, claim):
    history = url("page_history", claim.project, "SYSTEM_OVERVIEW")
    claim_page = url("claim", claim.project, claim.pk)
    approve_many(claim.project, bob, 1, start=1)  # a second revision to roll back from
    client.force_login(carol)
    assert b"Roll back to" not in client.get(history).content
    assert b">Retract</button>" not in client.get(claim_page).content
    client.force_login(bob)
    assert b"Roll back to" not in client.get(history).content
    assert b">Retract</button>" in client.get(claim_page).content
    client.force_login(alice)
    assert b"Roll back to r1" in client.get(history).content
    assert b">Retract</button>" in client.get(claim_page).content


def test_an_unknown_page_claim_or_revision_is_404(client, carol, claim, other_project):
    client.force_login(carol)
    project = claim.project
    assert client.get(url("page", project, "NO_SUCH_PAGE")).status_code == 404
    assert client.get(url("page_diff", project, "SYSTEM_OVERVIEW"), {"a": 99}).status_code == 404
    assert client.get(url("claim", project, claim.pk + 1000)).status_code == 404
    response = client.get(url("page_diff", project, "SYSTEM_OVERVIEW"), {"a": "x", "b": "y"})
    assert response.status_code == 200  # unreadable numbers fall back to the latest change


# --- rolling back (maintainers) ------------------------------------------------------------


def test_pages_render_history_diff_and_roll_back(client, alice, bob, claim):
    wiki.claim_retract(claim=claim, actor=bob, reason="renamed")
    project = claim.project
    client.force_login(alice)
    response = client.get(url("page", project, "SYSTEM_OVERVIEW"))
    assert response.status_code == 200 and b"No reviewed claims yet" in response.content
    response = client.get(url("page_history", project, "SYSTEM_OVERVIEW"))
    assert b"r2" in response.content and b"Roll back to r1" in response.content
    response = client.get(url("page_diff", project, "SYSTEM_OVERVIEW"), {"a": 1, "b": 2})
    assert response.status_code == 200 and b'<tr class="del">' in response.content
    response = client.post(
        url("page_rollback", project, "SYSTEM_OVERVIEW"),
        {"revision": 1, "reason": "the rename was premature"},
    )
    assert response.status_code == 302
    assert response.url == url("page", project, "SYSTEM_OVERVIEW")
    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    assert page.current_revision.number == 3
    assert page.current_revision.markdown == PageRevision.objects.get(page=page, number=1).markdown
    assert page.current_revision.reason == "rollback to r1: the rename was premature"
    event = AuditEvent.objects.get(action="page.rollback", object_id=str(page.pk))
    assert event.note == "the rename was premature"
    assert event.after == {"revision": 3, "restored_from": 1}
    claim.refresh_from_db()
    assert claim.status == "approved"
    response = client.get(url("page_history", project, "SYSTEM_OVERVIEW"))
    assert b"rollback to r1: the rename was premature" in response.content


def test_rolling_back_asks_for_confirmation_and_a_reason_first(client, alice, bob, claim):
    approve_many(claim.project, bob, 1, start=1)
    address = url("page_rollback", claim.project, "SYSTEM_OVERVIEW")
    client.force_login(alice)
    history = client.get(url("page_history", claim.project, "SYSTEM_OVERVIEW")).content.decode()
    assert f'href="{address}?revision=1">Roll back to r1</a>' in history
    assert f'action="{address}"' not in history  # one click on the history publishes nothing
    response = client.get(address, {"revision": 1})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="rollback-form"' in html
    assert '<input type="hidden" name="revision" value="1"' in html
    assert 'name="reason"' in html and "required" in html
    assert 'data-testid="reason-error"' not in html  # no error before a first try
    assert 'data-testid="rollback-diff"' in html  # what will change
    for reason in ({}, {"reason": "   "}):
        response = client.post(address, {"revision": 1, **reason})
        assert response.status_code == 200
        assert b"Say why the page is rolled back." in response.content
    page = Page.objects.get(project=claim.project, key="SYSTEM_OVERVIEW")
    assert page.current_revision.number == 2
    assert not AuditEvent.objects.filter(action="page.rollback").exists()


def test_a_rollback_without_a_reason_is_refused_by_the_service(alice, bob, claim):
    approve_many(claim.project, bob, 1, start=1)
    page = Page.objects.get(project=claim.project, key="SYSTEM_OVERVIEW")
    with pytest.raises(Refused, match="say why the page is rolled back"):
        wiki.page_rollback(
            page=page, revision=page.revisions.get(number=1), actor=alice, reason=" "
        )
    page.refresh_from_db()
    assert page.current_revision.number == 2


@pytest.mark.parametrize("who", ["carol", "bob"])
def test_viewers_and_reviewers_cannot_roll_back(client, bob, claim, who, request):
    approve_many(claim.project, bob, 1, start=1)
    client.force_login(request.getfixturevalue(who))
    address = url("page_rollback", claim.project, "SYSTEM_OVERVIEW")
    assert client.get(address, {"revision": 1}).status_code == 403
    response = client.post(address, {"revision": 1, "reason": "x"})
    assert response.status_code == 403
    assert (
        Page.objects.get(project=claim.project, key="SYSTEM_OVERVIEW").current_revision.number == 2
    )


def test_a_rollback_needs_a_revision(client, alice, claim):
    client.force_login(alice)
    address = url("page_rollback", claim.project, "SYSTEM_OVERVIEW")
    assert client.put(address).status_code == 405
    for response in (
        client.get(address, follow=True),
        client.post(address, {"revision": "x", "reason": "x"}, follow=True),
    ):
        assert b"Choose a revision to roll back to." in response.content
    assert client.get(address, {"revision": 99}).status_code == 404
    response = client.post(address, {"revision": 1, "reason": "x"}, follow=True)
    assert b"r1 is already the current revision" in response.content
    assert (
        Page.objects.get(project=claim.project, key="SYSTEM_OVERVIEW").current_revision.number == 1
    )


# --- retracting (reviewers and maintainers) ------------------------------------------------


def test_the_claim_panel_shows_provenance(client, carol, claim):
    client.force_login(carol)
    response = client.get(url("claim", claim.project, claim.pk))
    assert response.status_code == 200
    assert response.content.count(b'data-testid="evidence"') == claim.evidence.count() == 3
    for episode in claim.evidence.select_related("source"):
        assert episode.source.sha256.encode() in response.content
    assert b"by bob" in response.content


def test_a_viewer_cannot_retract(client, carol, claim):
    client.force_login(carol)
    response = client.post(url("claim_retract", claim.project, claim.pk), {"reason": "x"})
    assert response.status_code == 403
    claim.refresh_from_db()
    assert claim.status == "approved"


@pytest.mark.parametrize("who", ["bob", "alice"])
def test_reviewers_and_maintainers_retract_with_a_reason(client, claim, who, request):
    client.force_login(request.getfixturevalue(who))
    address = url("claim_retract", claim.project, claim.pk)
    assert client.get(address).status_code == 405
    response = client.post(address, {"reason": ""}, follow=True)
    assert b"Say why the claim is retracted." in response.content
    claim.refresh_from_db()
    assert claim.status == "approved"
    response = client.post(address, {"reason": "host renamed"}, follow=True)
    assert f"Claim {claim.pk} retracted.".encode() in response.content
    claim.refresh_from_db()
    assert claim.status == "retracted"
    assert AuditEvent.objects.filter(action="claim.retracted", object_id=str(claim.pk)).exists()
    response = client.post(address, {"reason": "again"}, follow=True)
    assert b"not approved" in response.content


def test_the_page_renders_markdown_safely(client, carol, project):
    page = Page.objects.get(project=project, key="GLOSSARY")
    page_publish(
        page=page,
        markdown="# G\n\n<script>alert(1)</script> [x](javascript:alert(1))\n",
        claim_ids=[],
        actor="t",
        reason="t",
    )
    client.force_login(carol)
    response = client.get(url("page", project, "GLOSSARY"))
    assert b"<script>alert" not in response.content
    assert b'href="javascript:' not in response.content
