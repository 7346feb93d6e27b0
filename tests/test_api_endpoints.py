"""The JSON API's read and write endpoints, with the web's clearance rules and fixed query counts."""

from __future__ import annotations

import pytest

from dreaming import services as dreaming
from dreaming.models import Candidate, Conflict, ConflictSide, DreamRun
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import AuditEvent, Episode, Role
from llmwiki.services import membership_set
from reviews import actions
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed

EMAIL = "pager.oncall@tidewater.example"
PII_DAYS = {
    f"memory/2026-11-0{d}.md": (
        f"# 2026-11-0{d} — agent:builder\n\n## Notes\n"
        f"- The on-call pager contact for shipments is {EMAIL}.\n"
        # Kept from the seed's day, so a fact beside the PII stays claim-worthy: said on
        # two days of logs alone it would be gated.
        "- The staging database runs PostgreSQL 16 on db-staging-2.\n"
    ).encode()
    for d in (2, 4, 6)
}
AWS_KEY = "AKIAZ7TIDEWATERTEST1"


def sweep(project) -> DreamRun:
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    return dreaming.dream_execute(run_id=run.pk)


@pytest.fixture
def dreamed(project):
    seed(project)
    ingest_files(
        project=project, files=[RawFile(p, t) for p, t in PII_DAYS.items()], actor="system"
    )
    sweep(project)
    return project


@pytest.fixture
def pii(dreamed) -> Candidate:
    return Candidate.objects.get(project=dreamed, text__contains=EMAIL)


@pytest.fixture
def reader(dreamed, alice):
    return bearer(dreamed, alice, "read")


@pytest.fixture
def reviewer_token(dreamed, alice):
    return bearer(dreamed, alice, "read", "review")


# --- Events -------------------------------------------------------------------------------


def test_an_event_is_recorded_through_the_ingest_gate(client, project, alice):
    headers = bearer(project, alice, "write-events", name="ci")
    body = {
        "kind": "event",
        "content": f"Deployed worker v1.6 to tw-app-1 with key {AWS_KEY}",
        "occurred_at": "2026-11-20T10:00:00Z",
        "locator": {"run": 42},
        "tags": ["deploy"],
        "agent": "builder",
    }
    response = post(client, url(project, "events"), body, headers)
    assert response.status_code == 201, response.content
    episode = Episode.objects.get(pk=response.json()["episode_id"])
    assert AWS_KEY not in episode.content
    assert any(f.startswith("secret:") for f in response.json()["flags"])
    assert episode.source.importer == "api"
    assert episode.source.sha256 == response.json()["source_sha256"]
    assert episode.actor.startswith("agent:builder (API token")
    assert episode.locator == {"run": 42}
    assert AuditEvent.objects.filter(action="episode.record", object_id=str(episode.pk)).exists()


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"content": "   "}, 400, "content"),
        ({"content": "x", "kind": "gossip"}, 422, "kind"),
        ({"content": "x", "occurred_at": "2026-11-20T10:00:00"}, 400, "occurred_at"),
        ({"kind": "event"}, 422, "content"),
        ({"content": "x", "occurred_at": "yesterday"}, 422, "occurred_at"),
    ],
)
def test_a_bad_event_is_refused_naming_the_field(client, project, alice, body, status, field):
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == status
    assert response.json()["message"].startswith(field)
    assert not Episode.objects.filter(project=project).exists()


# Found by tests/reliability/test_api_fuzz.py: each was a 500 on PostgreSQL (text and jsonb
# hold no NUL; a lone surrogate does not encode; jsonb and SQLite's JSON check refuse
# Infinity; a time stored in UTC must stay within years 1-9999), and most on SQLite too.
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "deployed\x00worker"}, "content"),
        ({"content": "x", "agent": "builder\x00"}, "agent"),
        ({"content": "x", "tags": ["deploy", "a\x00"]}, "tags[1]"),
        ({"content": "x", "locator": {"run\x00": 1}}, "locator key 'run\\x00'"),
        ({"content": "x", "locator": {"run": [1, {"step": "\x00"}]}}, "locator.run[1].step"),
        ({"content": "\ud800 deployed"}, "content"),
        ({"content": "x", "locator": {"run": float("inf")}}, "locator.run"),
        ({"content": "x", "occurred_at": "0001-01-01T00:00:00+14:00"}, "occurred_at"),
        ({"content": "x", "occurred_at": "9999-12-31T23:59:59-14:00"}, "occurred_at"),
    ],
)
def test_an_event_no_database_can_store_is_400_naming_the_field(
    client, project, alice, body, field
):
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == 400, response.content
    assert response.json()["field"] == field
    assert not Episode.objects.filter(project=project).exists()


def test_an_offset_postgresql_has_no_name_for_is_stored_in_utc(client, project, alice):
    # Found by the API fuzz test: PostgreSQL refused "+16:00" ("time zone displacement out
    # of range"), a 500; Python's datetime takes offsets up to 23:59.
    body = {"content": "deployed", "occurred_at": "2000-01-01T00:00:00+16:00"}
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == 201, response.content
    episode = Episode.objects.get(pk=response.json()["episode_id"])
    assert episode.occurred_at.isoformat() == "1999-12-31T08:00:00+00:00"


# --- Candidates ---------------------------------------------------------------------------


def test_the_candidate_list_pages_and_filters(client, dreamed, reader):
    response = client.get(url(dreamed, "candidates"), {"limit": 1}, headers=reader)
    assert response.status_code == 200
    document = response.json()
    total = Candidate.objects.filter(project=dreamed).count()
    assert document["count"] == total > 1
    assert len(document["items"]) == 1
    item = document["items"][0]
    assert {"id", "text", "score", "signals", "evidence", "version", "withheld"} <= set(item)
    assert item["evidence"][0]["source_sha256"]
    second = client.get(url(dreamed, "candidates"), {"limit": 1, "offset": 1}, headers=reader)
    assert second.json()["items"][0]["id"] != item["id"]
    none = client.get(url(dreamed, "candidates"), {"status": "approved"}, headers=reader)
    assert none.json()["count"] == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 500}, "limit"),
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"status": "maybe"}, "status"),
    ],
)
def test_the_candidate_list_refuses_bad_paging(client, dreamed, reader, params, field):
    # Outside the range or the enumeration the schema declares: invalid (422), named.
    response = client.get(url(dreamed, "candidates"), params, headers=reader)
    assert response.status_code == 422
    assert response.json()["field"] == field


@pytest.mark.parametrize("path", ["candidates", "conflicts", "open-questions"])
@pytest.mark.parametrize("offset", [2**63 - 1, 10**23])
def test_an_offset_past_64_bits_is_422_not_a_database_error(client, dreamed, reader, path, offset):
    # Found by the API fuzz test: SQLite answered "datatype mismatch" and PostgreSQL
    # "bigint out of range" for LIMIT/OFFSET past 64 bits, as 500s.
    response = client.get(url(dreamed, path), {"offset": offset}, headers=reader)
    assert response.status_code == 422, response.content
    assert response.json()["field"] == "offset"


def test_the_candidate_list_is_a_fixed_number_of_queries(
    client, dreamed, reader, django_assert_num_queries
):
    client.get(url(dreamed, "pages"), headers=reader)  # first use stamps last_used_at
    # token, membership, candidates, evidence with episodes and sources, count.
    with django_assert_num_queries(5):
        small = client.get(url(dreamed, "candidates"), {"limit": 1}, headers=reader)
    with django_assert_num_queries(5):
        large = client.get(url(dreamed, "candidates"), {"limit": 200}, headers=reader)
    assert len(small.json()["items"]) == 1 < len(large.json()["items"])


def test_pii_text_is_withheld_from_a_read_token_as_from_a_viewer(
    client, dreamed, pii, reader, reviewer_token
):
    seen = client.get(url(dreamed, f"candidates/{pii.pk}"), headers=reader).json()
    assert seen["text"] is None
    assert "Text withheld" in seen["withheld"]
    assert EMAIL not in str(seen)
    cleared = client.get(url(dreamed, f"candidates/{pii.pk}"), headers=reviewer_token).json()
    assert cleared["text"] == pii.text and cleared["withheld"] is None


def test_a_review_token_reads_no_more_than_its_creator(client, dreamed, pii, carol, alice):
    membership_set(project=dreamed, user=carol, role=Role.VIEWER, actor="system")
    # Only maintainers create tokens; one made by Alice who is later made a viewer.
    headers = bearer(dreamed, alice, "read", "review")
    membership_set(project=dreamed, user=alice, role=Role.VIEWER, actor="system")
    seen = client.get(url(dreamed, f"candidates/{pii.pk}"), headers=headers).json()
    assert seen["text"] is None


def test_one_candidate_carries_its_version_token(client, dreamed, reader):
    candidate = Candidate.objects.filter(project=dreamed).exclude(text__contains=EMAIL).first()
    document = client.get(url(dreamed, f"candidates/{candidate.pk}"), headers=reader).json()
    assert document["version"] == candidate.version
    assert document["page_revision_id"] == actions.form_state(candidate).page_revision_id
    assert client.get(url(dreamed, "candidates/999999"), headers=reader).status_code == 404


def test_another_projects_candidate_is_404(client, dreamed, other_project, mallory):
    candidate = Candidate.objects.filter(project=dreamed).first()
    headers = bearer(other_project, mallory, "read")
    response = client.get(url(other_project, f"candidates/{candidate.pk}"), headers=headers)
    assert response.status_code == 404


# --- Dreaming -----------------------------------------------------------------------------


def test_dream_now_queues_a_run_for_the_worker(
    client, project, alice, django_capture_on_commit_callbacks
):
    seed(project)
    headers = bearer(project, alice, "read", "review")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, url(project, "dream"), {}, headers)
    assert response.status_code == 202
    run_id = response.json()["run_id"]
    run = client.get(url(project, f"dream/runs/{run_id}"), headers=headers).json()
    assert run["status"] == "succeeded" and run["proposed"] > 0
    assert Candidate.objects.filter(project=project, run_id=run_id).exists()


def test_a_preview_writes_nothing_binding_and_withholds_pii(
    client, dreamed, alice, django_capture_on_commit_callbacks
):
    ingest_files(
        project=dreamed,
        files=[RawFile("memory/2026-11-08.md", PII_DAYS["memory/2026-11-02.md"])],
        actor="system",
    )
    before = Candidate.objects.filter(project=dreamed).count()
    headers = bearer(dreamed, alice, "read", "review")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(client, url(dreamed, "dream"), {"preview": True}, headers)
    assert response.status_code == 202
    run = client.get(url(dreamed, f"dream/runs/{response.json()['run_id']}"), headers=headers)
    assert run.json()["trigger"] == "preview" and run.json()["preview"] is not None
    assert Candidate.objects.filter(project=dreamed).count() == before
    read_only = bearer(dreamed, alice, "read", name="reader")
    seen = client.get(url(dreamed, f"dream/runs/{response.json()['run_id']}"), headers=read_only)
    assert EMAIL not in seen.content.decode()


def test_a_second_dream_while_one_is_open_is_409(client, project, alice):
    dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    response = post(client, url(project, "dream"), {}, bearer(project, alice, "review"))
    assert response.status_code == 409
    assert "already" in response.json()["message"]


def test_a_half_backfill_is_400(client, project, alice):
    headers = bearer(project, alice, "review")
    response = post(client, url(project, "dream"), {"backfill_from": "2026-11-01"}, headers)
    assert response.status_code == 400
    reversed_window = {"backfill_from": "2026-11-05", "backfill_to": "2026-11-01"}
    assert post(client, url(project, "dream"), reversed_window, headers).status_code == 400
    assert not DreamRun.objects.filter(project=project).exists()


def test_an_unknown_run_is_404(client, project, alice):
    response = client.get(url(project, "dream/runs/999"), headers=bearer(project, alice))
    assert response.status_code == 404


# --- Conflicts and open questions ---------------------------------------------------------


@pytest.fixture
def pii_conflict(dreamed, pii):
    conflict = Conflict.objects.create(
        project=dreamed, subject="pager contact", kind="value", dedupe_key="pager"
    )
    side = ConflictSide.objects.create(conflict=conflict, position=0, text=pii.text, candidate=pii)
    side.evidence.set(Episode.objects.filter(project=dreamed, content__contains=EMAIL))
    ConflictSide.objects.create(conflict=conflict, position=1, text="Pages go to the ops rota.")
    return conflict


def test_conflicts_show_both_sides_and_withhold_pii(
    client, dreamed, pii_conflict, reader, reviewer_token
):
    listed = client.get(url(dreamed, "conflicts"), {"show": "all"}, headers=reader).json()
    card = next(c for c in listed["items"] if c["id"] == pii_conflict.pk)
    assert [s["position"] for s in card["sides"]] == [0, 1]
    assert card["sides"][0]["text"] is None and card["sides"][0]["evidence"]
    assert card["sides"][1]["text"] == "Pages go to the ops rota."
    assert card["subject"] is None
    assert EMAIL not in str(listed)
    cleared = client.get(url(dreamed, "conflicts"), headers=reviewer_token).json()
    assert EMAIL in str(cleared)
    bad = client.get(url(dreamed, "conflicts"), {"show": "someday"}, headers=reader)
    assert bad.status_code == 422 and bad.json()["message"].startswith("show")


def test_open_questions_list_escalated_conflicts_first(client, dreamed, pii_conflict, reader, bob):
    pii_conflict.status = Conflict.Status.ESCALATED
    pii_conflict.owner = bob
    pii_conflict.save()
    document = client.get(url(dreamed, "open-questions"), headers=reader).json()
    assert document["items"][0]["id"] == pii_conflict.pk
    assert document["items"][0]["owner"] == "bob"
    assert document["count"] == Conflict.objects.filter(project=dreamed).unresolved().count()


def test_conflict_lists_are_a_fixed_number_of_queries(
    client, dreamed, pii_conflict, reader, django_assert_num_queries
):
    for i in range(3):
        extra = Conflict.objects.create(
            project=dreamed, subject=f"s{i}", kind="value", dedupe_key=f"k{i}"
        )
        ConflictSide.objects.create(conflict=extra, position=0, text=f"side {i}")
    client.get(url(dreamed, "pages"), headers=reader)  # first use stamps last_used_at
    # token, membership, conflicts with owners, sides, evidence with sources, candidates, count.
    with django_assert_num_queries(7):
        client.get(url(dreamed, "conflicts"), {"limit": 1}, headers=reader)
    with django_assert_num_queries(7):
        many = client.get(url(dreamed, "open-questions"), {"limit": 50}, headers=reader)
    assert len(many.json()["items"]) >= 4
