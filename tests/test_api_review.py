"""Review actions, pages and provenance through the JSON API: the web's services and gates."""

from __future__ import annotations

import pytest

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence
from llmwiki.models import AuditEvent, Claim, Episode
from reviews import actions
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed) -> Candidate:
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


@pytest.fixture
def review_token(dreamed, alice):
    return bearer(dreamed, alice, "read", "review")


def seen(client, project, candidate, headers) -> dict:
    document = client.get(url(project, f"candidates/{candidate.pk}"), headers=headers).json()
    return {
        "candidate_version": document["version"],
        "page_revision_id": document["page_revision_id"],
    }


def act(client, project, candidate, action, headers, **body):
    return post(client, url(project, f"candidates/{candidate.pk}/{action}"), body, headers)


def test_approving_through_the_api_makes_the_claim_as_the_tokens_creator(
    client, dreamed, staging, review_token, alice
):
    body = seen(client, dreamed, staging, review_token)
    response = act(client, dreamed, staging, "approve", review_token, **body, note="checked")
    assert response.status_code == 200, response.content
    claim = Claim.objects.get(pk=response.json()["claim_id"])
    assert claim.reviewer == alice and claim.text == staging.text
    staging.refresh_from_db()
    assert staging.status == "approved"
    page = client.get(url(dreamed, "pages/SYSTEM_OVERVIEW"), headers=review_token).json()
    assert staging.text in page["markdown"]
    assert [c["claim_id"] for c in page["claims"]] == [claim.pk]
    old = client.get(url(dreamed, "pages/SYSTEM_OVERVIEW"), {"revision": 1}, headers=review_token)
    assert old.json()["revision"] == 1


def test_a_stale_version_is_409_with_a_denied_row(client, dreamed, staging, review_token):
    body = seen(client, dreamed, staging, review_token)
    body["candidate_version"] -= 1
    response = act(client, dreamed, staging, "approve", review_token, **body)
    assert response.status_code == 409
    assert "no longer awaiting review" in response.json()["message"]
    assert not Claim.objects.exists()
    assert AuditEvent.objects.filter(action="review.denied", object_id=str(staging.pk)).exists()


def test_a_token_without_the_review_scope_is_403_with_a_denied_row(client, dreamed, staging, alice):
    headers = bearer(dreamed, alice, "read", "write-events")
    body = seen(client, dreamed, staging, headers)
    response = act(client, dreamed, staging, "approve", headers, **body)
    assert response.status_code == 403
    assert "review scope" in response.json()["message"]
    denied = AuditEvent.objects.get(action="review.denied", object_id=str(staging.pk))
    assert denied.actor.startswith("agent:agent (API token")
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()


def test_reject_needs_a_reason_and_defer_works(client, dreamed, staging, review_token):
    body = seen(client, dreamed, staging, review_token)
    refused = act(client, dreamed, staging, "reject", review_token, **body)
    assert refused.status_code == 400
    deferred = act(client, dreamed, staging, "defer", review_token, **body, note="later")
    assert deferred.status_code == 200 and deferred.json()["status"] == "deferred"


def test_merge_into_an_approved_claim(client, dreamed, staging, review_token, alice):
    claim = actions.candidate_approve(
        candidate=staging, reviewer=alice, seen=actions.form_state(staging)
    )
    other = Candidate.objects.create(
        project=dreamed,
        text="db-staging-2 is staging.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key="merge-me",
    )
    extra = (
        Episode.objects.filter(project=dreamed, source__isnull=False)
        .exclude(pk__in=claim.evidence.all())
        .first()
    )
    CandidateEvidence.objects.create(candidate=other, episode=extra)
    body = seen(client, dreamed, other, review_token)
    response = act(client, dreamed, other, "merge", review_token, **body, claim=claim.pk)
    assert response.status_code == 200, response.content
    assert response.json() == {"candidate_id": other.pk, "status": "merged", "claim_id": claim.pk}
    assert claim.evidence.filter(pk=extra.pk).exists()


def test_an_unknown_action_or_candidate_is_refused(client, dreamed, staging, review_token):
    body = seen(client, dreamed, staging, review_token)
    unknown = act(client, dreamed, staging, "promote", review_token, **body)
    assert (
        unknown.status_code == 404
        and "one of approve, reject, defer, merge" in unknown.json()["message"]
    )
    missing = post(client, url(dreamed, "candidates/999999/approve"), body, review_token)
    assert missing.status_code == 404
    assert act(client, dreamed, staging, "approve", review_token).status_code == 422


@pytest.mark.parametrize(
    ("action", "field"), [("approve", "edited_text"), ("approve", "section"), ("reject", "note")]
)
def test_a_nul_in_a_review_body_is_400_naming_the_field(
    client, dreamed, staging, review_token, action, field
):
    # Found by the API fuzz test: PostgreSQL cannot store U+0000, so it was a 500 there.
    body = seen(client, dreamed, staging, review_token)
    response = act(client, dreamed, staging, action, review_token, **body, **{field: "a\x00b"})
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()


def test_a_nul_in_a_page_key_is_400(client, dreamed, review_token):
    # A 500 on PostgreSQL, which refuses U+0000 even in a lookup.
    response = client.get(url(dreamed, "pages/SYSTEM%00OVERVIEW"), headers=review_token)
    assert response.status_code == 400
    assert response.json()["field"] == "key"


def test_an_unknown_page_or_revision_is_404(client, dreamed, review_token):
    assert client.get(url(dreamed, "pages/NOPE"), headers=review_token).status_code == 404
    missing = client.get(
        url(dreamed, "pages/SYSTEM_OVERVIEW"), {"revision": 9}, headers=review_token
    )
    assert missing.status_code == 404


# --- Provenance ---------------------------------------------------------------------------


def test_provenance_of_a_claim_names_its_evidence_sources_and_candidate(
    client, dreamed, staging, alice
):
    claim = actions.candidate_approve(
        candidate=staging, reviewer=alice, seen=actions.form_state(staging)
    )
    headers = bearer(dreamed, alice, "read")
    document = client.get(url(dreamed, f"provenance/claim/{claim.pk}"), headers=headers).json()
    assert document["object"] == "claim" and document["text"] == claim.text
    assert document["candidates"] == [staging.pk]
    assert document["reviewer"] == "alice"
    evidence_ids = {e["episode_id"] for e in document["evidence"]}
    assert evidence_ids == set(claim.evidence.values_list("pk", flat=True))
    assert all(e["source"]["sha256"] for e in document["evidence"])


def test_provenance_of_a_candidate_and_an_episode(client, dreamed, staging, alice):
    headers = bearer(dreamed, alice, "read")
    candidate = client.get(url(dreamed, f"provenance/candidate/{staging.pk}"), headers=headers)
    assert candidate.json()["object"] == "candidate"
    first = candidate.json()["evidence"][0]
    assert first["text"] and first["source"]["path"].startswith("memory/")
    episode = client.get(url(dreamed, f"provenance/episode/{first['episode_id']}"), headers=headers)
    assert episode.json()["object"] == "episode"
    assert staging.pk in episode.json()["cited_by"]["candidates"]


@pytest.mark.parametrize("kind", ["claim", "candidate", "episode"])
def test_provenance_of_something_missing_is_404(client, dreamed, alice, kind):
    headers = bearer(dreamed, alice, "read")
    response = client.get(url(dreamed, f"provenance/{kind}/999999"), headers=headers)
    assert response.status_code == 404
    assert "999999" in response.json()["message"]


def test_provenance_of_an_unknown_kind_is_422(client, dreamed, alice):
    episode = Episode.objects.filter(project=dreamed).first()
    response = client.get(
        url(dreamed, f"provenance/source/{episode.pk}"), headers=bearer(dreamed, alice, "read")
    )
    assert response.status_code == 422


def test_review_actions_count_against_the_write_rate(client, dreamed, staging, alice, settings):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 1
    headers = bearer(dreamed, alice, "read", "review")
    body = seen(client, dreamed, staging, headers)
    assert act(client, dreamed, staging, "defer", headers, **body, note="later").status_code == 200
    staging.refresh_from_db()
    body = seen(client, dreamed, staging, headers)
    limited = act(client, dreamed, staging, "reject", headers, **body, note="wrong")
    assert limited.status_code == 429
    staging.refresh_from_db()
    assert staging.status == "deferred"


def test_a_review_token_reads_what_it_reviews_without_the_read_scope(
    client, dreamed, staging, alice
):
    reviewer = bearer(dreamed, alice, "review", name="reviewer")
    listed = client.get(url(dreamed, "candidates"), {"status": "proposed"}, headers=reviewer)
    assert listed.status_code == 200 and staging.pk in [c["id"] for c in listed.json()["items"]]
    where = client.get(url(dreamed, f"provenance/candidate/{staging.pk}"), headers=reviewer)
    assert where.status_code == 200 and where.json()["evidence"]
    body = seen(client, dreamed, staging, reviewer)
    response = act(client, dreamed, staging, "approve", reviewer, **body, note="checked")
    assert response.status_code == 200, response.content
    # Review includes read; nothing else does: a write-events token still reads nothing.
    writer = bearer(dreamed, alice, "write-events", name="writer")
    refused = client.get(url(dreamed, f"candidates/{staging.pk}"), headers=writer)
    assert refused.status_code == 403 and "read scope" in refused.json()["message"]
