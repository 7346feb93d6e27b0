"""The conflict queue (reviews/views/conflicts.py): who may read it, who may resolve, what moves."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming.models import Conflict, ConflictSide
from llmwiki.models import AuditEvent, Episode, Page
from llmwiki.wiki import claim_create
from reviews import conflicts
from tests.dreaming_data import seed


def url(project) -> str:
    return reverse("reviews:conflicts", args=[project.slug])


def make_conflict(project, n: int) -> Conflict:
    """A two-sided value conflict, each side citing one of the project's episodes."""
    episodes = list(project.episodes.filter(source__isnull=False)[:2])
    conflict = Conflict.objects.create(
        project=project, subject=f"port of tw-svc-{n}", kind="value", dedupe_key=f"c-{n}"
    )
    for position, (value, episode) in enumerate(zip((8000, 9000), episodes, strict=True)):
        side = ConflictSide.objects.create(
            conflict=conflict, position=position, text=f"tw-svc-{n} listens on {value + n}."
        )
        side.evidence.add(episode)
    return conflict


@pytest.fixture
def conflict(project) -> Conflict:
    seed(project, ["memory/2026-11-02.md"])
    conflict = make_conflict(project, 1)
    conflicts.open_questions_publish(project=project, actor="system", reason="detected")
    return conflict


def keep_existing(conflict) -> dict:
    return {"conflict": conflict.pk, "resolution": "keep-existing", "note": "ops confirmed"}


def open_questions(project) -> str:
    return Page.objects.get(project=project, key="OPEN_QUESTIONS").current_revision.markdown


def against_a_claim(conflict, reviewer, evidence=None):
    """Side 0 becomes approved memory, so accepting side 1 (or a merge) approves at once."""
    old_side, new_side = conflict.sides.all()
    old = claim_create(
        page=Page.objects.get(project=conflict.project, key="SYSTEM_OVERVIEW"),
        text=old_side.text,
        evidence=evidence
        if evidence is not None
        else old_side.evidence.values_list("id", flat=True),
        reviewer=reviewer,
    )
    ConflictSide.objects.filter(pk=old_side.pk).update(claim=old)
    return old, new_side


# --- reading -------------------------------------------------------------------------------


def test_it_sends_anonymous_users_to_log_in(client, conflict):
    for response in (client.get(url(conflict.project)), client.post(url(conflict.project))):
        assert response.status_code == 302 and response.url.startswith("/accounts/login/")


def test_an_outsider_gets_404_and_changes_nothing(client, mallory, conflict):
    client.force_login(mallory)
    assert client.get(url(conflict.project)).status_code == 404
    assert client.post(url(conflict.project), keep_existing(conflict)).status_code == 404
    conflict.refresh_from_db()
    assert conflict.status == "open"


def test_a_viewer_reads_both_sides_without_a_resolve_form(client, carol, conflict):
    client.force_login(carol)
    response = client.get(url(conflict.project))
    assert response.status_code == 200
    body = response.content.decode()
    assert "port of tw-svc-1" in body
    assert "tw-svc-1 listens on 8001." in body and "tw-svc-1 listens on 9001." in body
    assert "Resolve conflict" not in body


def test_a_reviewer_gets_the_resolve_form(client, bob, conflict):
    client.force_login(bob)
    assert b"Resolve conflict" in client.get(url(conflict.project)).content


def test_resolved_conflicts_are_listed_apart(client, bob, conflict):
    client.force_login(bob)
    card = f'id="conflict-{conflict.pk}"'.encode()
    client.post(url(conflict.project), keep_existing(conflict), follow=True)
    assert card not in client.get(url(conflict.project)).content
    resolved = client.get(url(conflict.project), {"show": "resolved"})
    assert card in resolved.content and b"resolved by bob" in resolved.content


@pytest.mark.parametrize(("approved", "queries"), [(False, 9), (True, 11)])
def test_the_queue_runs_a_constant_number_of_queries(
    client, bob, carol, conflict, approved, queries, django_assert_num_queries
):
    # With an approved side, the claim and its evidence are read too (for the confirmation).
    if approved:
        against_a_claim(conflict, bob)
    for n in range(2, 4):
        made = make_conflict(conflict.project, n)
        if approved:
            against_a_claim(made, bob)
    client.force_login(carol)
    with django_assert_num_queries(queries) as few:
        response = client.get(url(conflict.project))
    assert response.content.count(b'class="card conflict"') == 3
    for n in range(4, 26):
        made = make_conflict(conflict.project, n)
        if approved:
            against_a_claim(made, bob)
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(url(conflict.project))
    assert response.content.count(b'class="card conflict"') == 25


def test_other_methods_are_refused(client, bob, conflict):
    client.force_login(bob)
    assert client.put(url(conflict.project)).status_code == 405


# --- resolving -----------------------------------------------------------------------------


def test_a_viewer_post_is_403_and_changes_nothing(client, carol, conflict):
    client.force_login(carol)
    assert client.post(url(conflict.project), keep_existing(conflict)).status_code == 403
    conflict.refresh_from_db()
    assert conflict.status == "open" and conflict.resolved_by is None
    assert "port of tw-svc-1" in open_questions(conflict.project)


def test_a_reviewer_keeps_the_existing_side(client, bob, conflict):
    client.force_login(bob)
    response = client.post(url(conflict.project), keep_existing(conflict), follow=True)
    assert response.redirect_chain == [(url(conflict.project), 302)]
    assert (
        f"Conflict #{conflict.pk}: port of tw-svc-1 — keep-existing." in response.content.decode()
    )
    conflict.refresh_from_db()
    assert (conflict.status, conflict.resolution) == ("resolved", "keep-existing")
    assert conflict.resolved_by.username == "bob" and conflict.resolution_note == "ops confirmed"
    assert "port of tw-svc-1" not in open_questions(conflict.project)


def test_a_maintainer_escalates_to_an_owner_with_a_due_date(client, alice, conflict):
    client.force_login(alice)
    response = client.post(
        url(conflict.project),
        {"conflict": conflict.pk, "resolution": "escalate", "owner": "bob", "due": "2027-01-15"},
    )
    assert response.status_code == 302
    conflict.refresh_from_db()
    assert conflict.status == "escalated" and conflict.owner.username == "bob"
    assert "_Escalated: owner bob, due 2027-01-15._" in open_questions(conflict.project)


def test_a_reviewer_scopes_both_sides(client, bob, conflict):
    client.force_login(bob)
    client.post(
        url(conflict.project),
        {
            "conflict": conflict.pk,
            "resolution": "both-valid",
            "scope_0": "staging",
            "scope_1": "prod",
        },
    )
    conflict.refresh_from_db()
    assert conflict.status == "resolved"
    assert list(conflict.sides.values_list("scope_note", flat=True)) == ["staging", "prod"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"resolution": ""}, "Choose a resolution."),
        ({"resolution": "escalate", "owner": "nobody"}, "No user named &#x27;nobody&#x27;."),
        ({"resolution": "escalate"}, "an escalated question needs an owner"),
        ({"resolution": "both-valid", "scope_0": "staging"}, "say for each side in which scope"),
        (
            {"resolution": "both-valid", "scope_x": "a", "scope_²": "b"},
            "say for each side in which",
        ),
        (
            {"resolution": "escalate", "owner": "bob", "due": "2027-13-01"},
            "due: Enter a valid date.",
        ),
    ],
)
def test_an_incomplete_resolution_is_named_and_changes_nothing(
    client, bob, conflict, data, message
):
    client.force_login(bob)
    response = client.post(url(conflict.project), {"conflict": conflict.pk, **data}, follow=True)
    assert response.status_code == 200 and message in response.content.decode()
    conflict.refresh_from_db()
    assert conflict.status == "open" and conflict.resolution == ""
    assert not conflict.sides.exclude(scope_note="").exists()


def test_an_unknown_conflict_is_404(client, bob, conflict, other_project):
    client.force_login(bob)
    assert (
        client.post(url(conflict.project), {"conflict": "x", "resolution": "merge"}).status_code
        == 404
    )
    elsewhere = Conflict.objects.create(
        project=other_project, subject="s", kind="value", dedupe_key="o"
    )
    response = client.post(url(conflict.project), keep_existing(elsewhere))
    assert response.status_code == 404


# --- the sensitive-content confirmation ------------------------------------------------------

CHECKBOX = 'name="sensitive_confirmed"'


def accept(conflict, side, **extra) -> dict:
    return {"conflict": conflict.pk, "resolution": "accept-new", "winner": side.position, **extra}


def flag_pii(episodes) -> None:
    Episode.objects.filter(pk__in=[e.pk for e in episodes])._unchecked_update(flags=["pii:email"])


def denials(conflict) -> list[str]:
    events = AuditEvent.objects.filter(action="review.denied", object_type="Conflict")
    return list(events.filter(object_id=str(conflict.pk)).values_list("note", flat=True))


def test_without_a_sensitive_side_there_is_no_checkbox_and_none_is_needed(
    client, alice, bob, conflict
):
    old, side = against_a_claim(conflict, bob)
    client.force_login(alice)
    body = client.get(url(conflict.project)).content.decode()
    assert "Resolve conflict" in body and CHECKBOX not in body
    response = client.post(url(conflict.project), accept(conflict, side), follow=True)
    assert "It is approved as claim" in response.content.decode()
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.accepted_claim.supersedes == old


def test_a_sensitive_side_shows_the_checkbox_and_accepting_it_needs_it(
    client, alice, bob, conflict
):
    old, side = against_a_claim(conflict, bob)
    flag_pii(side.evidence.all())
    client.force_login(alice)
    assert CHECKBOX in client.get(url(conflict.project)).content.decode()
    response = client.post(url(conflict.project), accept(conflict, side), follow=True)
    assert "confirm that you reviewed the sensitive content" in response.content.decode()
    conflict.refresh_from_db()
    old.refresh_from_db()
    assert conflict.status == "open" and old.status == "approved"
    assert len(denials(conflict)) == 1
    client.post(url(conflict.project), accept(conflict, side, sensitive_confirmed="on"))
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.accepted_claim.supersedes == old


def test_a_merge_over_a_claim_cited_from_sensitive_episodes_shows_the_checkbox(
    client, alice, bob, conflict
):
    # The sides quote clean episodes; the approved claim they contradict cites a flagged
    # one, and a merge carries that claim's evidence into the approved text.
    sides = {e.pk for s in conflict.sides.all() for e in s.evidence.all()}
    cited = conflict.project.episodes.filter(source__isnull=False).exclude(pk__in=sides).first()
    against_a_claim(conflict, bob, evidence=[cited.pk])
    flag_pii([cited])
    client.force_login(alice)
    assert CHECKBOX in client.get(url(conflict.project)).content.decode()
    merge = {"conflict": conflict.pk, "resolution": "merge", "merged_text": "tw-svc-1: 8001."}
    response = client.post(url(conflict.project), merge, follow=True)
    assert "confirm that you reviewed the sensitive content" in response.content.decode()
    client.post(url(conflict.project), {**merge, "sensitive_confirmed": "on"})
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.accepted_claim.text == "tw-svc-1: 8001."
