"""Retrieval, exports and the startup packet through the JSON API."""

from __future__ import annotations

import pytest

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Episode, Export, RecallTrace, Role
from llmwiki.services import membership_set
from reviews import actions
from reviews.exports import ExportOptions, export_create
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed

PHONE_NOTE = "# Landlord\n\nCall the landlord about the boiler repair on +44 20 7946 0958 today.\n"


@pytest.fixture
def approved(project, alice):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    staging = Candidate.objects.get(project=project, text__contains="db-staging-2")
    return actions.candidate_approve(
        candidate=staging, reviewer=alice, seen=actions.form_state(staging)
    )


def test_retrieve_returns_approved_claims_first_with_citations_and_a_trace(
    client, project, approved, alice
):
    headers = bearer(project, alice, "read")
    response = client.get(url(project, "retrieve"), {"q": "staging database host"}, headers=headers)
    assert response.status_code == 200, response.content
    items = response.json()["items"]
    assert items[0]["kind"] == "claim" and items[0]["id"] == approved.pk
    assert set(items[0]["citations"]["episode_ids"]) == set(
        approved.evidence.values_list("pk", flat=True)
    )
    assert f"[claim {approved.pk}, reviewed;" in response.json()["context"]
    trace = RecallTrace.objects.get(project=project)
    assert trace.query == "staging database host" and approved.pk in trace.claim_ids
    assert "API token" in trace.actor


@pytest.mark.parametrize(
    ("params", "status"),
    [({}, 422), ({"q": "   "}, 400), ({"q": "x", "k": 0}, 422), ({"q": "x", "k": 101}, 422)],
)
def test_retrieve_refuses_bad_input(client, project, alice, params, status):
    response = client.get(url(project, "retrieve"), params, headers=bearer(project, alice))
    assert response.status_code == status
    assert response.json()["message"]
    assert not RecallTrace.objects.exists()


@pytest.mark.parametrize(
    ("params", "field", "status"),
    [
        # A 500 on PostgreSQL (no U+0000 in a search or a recall trace).
        ({"q": "staging\x00db"}, "q", 400),
        ({"q": " "}, "q", 400),
        # Was answered naming "k"; outside the range the schema declares.
        ({"q": "staging", "budget": 0}, "budget", 422),
        ({"q": "staging", "k": 0}, "k", 422),
    ],
)
def test_retrieve_names_the_refused_parameter(client, project, alice, params, field, status):
    response = client.get(url(project, "retrieve"), params, headers=bearer(project, alice))
    assert response.status_code == status, response.content
    assert response.json()["field"] == field
    assert not RecallTrace.objects.exists()


def test_a_pii_episode_is_retrieved_only_with_the_review_scope(client, project, alice):
    ingest_files(
        project=project, files=[RawFile("notes/landlord.md", PHONE_NOTE.encode())], actor="system"
    )
    episode = Episode.objects.get(project=project, content__contains="boiler")
    query = {"q": "boiler repair landlord"}
    read = client.get(url(project, "retrieve"), query, headers=bearer(project, alice, "read"))
    assert [i["id"] for i in read.json()["items"]] == []
    cleared = bearer(project, alice, "read", "review", name="reviewer")
    seen = client.get(url(project, "retrieve"), query, headers=cleared)
    assert [i["id"] for i in seen.json()["items"]] == [episode.pk]


def test_the_startup_packet_holds_approved_claims_and_stores_nothing(
    client, project, approved, alice
):
    response = client.get(url(project, "startup-packet"), headers=bearer(project, alice))
    assert response.status_code == 200
    assert approved.text in response.json()["markdown"]
    assert approved.pk in response.json()["claim_ids"]
    assert not Export.objects.exists()


def test_an_export_is_generated_listed_and_downloaded(client, project, approved, alice):
    headers = bearer(project, alice, "read", "review")
    response = post(
        client, url(project, "exports"), {"kind": "startup-packet", "budget": 4000}, headers
    )
    assert response.status_code == 201, response.content
    export = Export.objects.get(pk=response.json()["id"])
    assert list(export.claims.values_list("pk", flat=True)) == [approved.pk]
    listed = client.get(url(project, "exports"), headers=headers).json()["items"]
    assert [e["id"] for e in listed] == [export.pk]
    download = client.get(
        url(project, f"exports/{export.pk}/files/STARTUP_PACKET.md"), headers=headers
    )
    assert download.status_code == 200
    assert approved.text in b"".join(download.streaming_content).decode()
    missing = client.get(url(project, f"exports/{export.pk}/files/NOPE.md"), headers=headers)
    assert missing.status_code == 404


def test_exports_need_the_review_scope_and_a_known_kind(client, project, approved, alice):
    read = bearer(project, alice, "read")
    refused = post(client, url(project, "exports"), {"kind": "handoff"}, read)
    assert refused.status_code == 403
    assert client.get(url(project, "exports"), headers=read).status_code == 403
    review = bearer(project, alice, "review", name="r")
    assert post(client, url(project, "exports"), {"kind": "novel"}, review).status_code == 422
    assert not Export.objects.exists()


def test_a_restricted_export_needs_the_restricted_clearance(client, project, approved, alice):
    headers = bearer(project, alice, "review")
    made = export_create(
        project=project, options=ExportOptions("handoff", "restricted"), actor=alice
    )
    project.restricted_clearance = Role.MAINTAINER
    project.save(update_fields=["restricted_clearance"])
    membership_set(project=project, user=alice, role=Role.REVIEWER, actor="system")
    response = post(
        client, url(project, "exports"), {"kind": "handoff", "audience": "restricted"}, headers
    )
    assert response.status_code == 403
    assert "restricted" in response.json()["message"]
    name = made.files[0]["name"]
    download = client.get(url(project, f"exports/{made.pk}/files/{name}"), headers=headers)
    assert download.status_code == 403
    assert Export.objects.count() == 1
