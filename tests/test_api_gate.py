"""What the API keeps of a caller's input: recall-trace queries redacted, refused writes counted."""

from __future__ import annotations

import string

import pytest

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.models import AuditEvent, Episode, RecallTrace, Role
from llmwiki.search import Caller, retrieve
from llmwiki.services import membership_set
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed

# Assembled at run time so that no credential-shaped string sits in the source tree.
AWS_KEY = "AK" + "IA" + "Z7TIDEWATERTES2"[:15] + "Q"
GITHUB_TOKEN = "gh" + "p_" + (string.ascii_letters + string.digits)[7:43]
REDACTED = "[REDACTED:aws_access_key] [REDACTED:github_token]"


# --- Recall traces -------------------------------------------------------------------------


def test_a_key_in_an_api_query_is_not_kept_in_the_recall_trace(client, project, alice):
    headers = bearer(project, alice, "read")
    query = f"where is {AWS_KEY} {GITHUB_TOKEN} used"
    response = client.get(url(project, "retrieve"), {"q": query}, headers=headers)
    assert response.status_code == 200, response.content
    trace = RecallTrace.objects.get(project=project)
    assert trace.query == f"where is {REDACTED} used"


def test_the_retrieve_service_redacts_the_query_it_keeps(project):
    retrieve(project, f"{AWS_KEY} {GITHUB_TOKEN}", caller=Caller.operator())
    assert RecallTrace.objects.get(project=project).query == REDACTED


# --- Refused writes count against the write rate ---------------------------------------------


@pytest.fixture
def staging(project) -> Candidate:
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return Candidate.objects.get(project=project, text__contains="db-staging-2")


def approve(client, project, candidate, headers):
    body = {"candidate_version": candidate.version}
    return post(client, url(project, f"candidates/{candidate.pk}/approve"), body, headers)


def test_refused_approvals_are_rate_limited_and_stop_writing_audit_rows(
    client, project, staging, alice, settings
):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 3
    headers = bearer(project, alice, "read", "write-events")  # no review scope
    codes = [approve(client, project, staging, headers).status_code for _ in range(6)]
    assert codes == [403, 403, 403, 429, 429, 429]
    assert AuditEvent.objects.filter(action="review.denied").count() == 3


def test_approvals_a_viewer_cannot_decide_are_rate_limited(
    client, project, staging, carol, settings
):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 2
    # Carol made the token as a maintainer and is a viewer again: her token cannot decide.
    membership_set(project=project, user=carol, role=Role.MAINTAINER, actor="system")
    headers = bearer(project, carol, "read", "review")
    membership_set(project=project, user=carol, role=Role.VIEWER, actor="system")
    codes = [approve(client, project, staging, headers).status_code for _ in range(4)]
    assert codes == [403, 403, 429, 429]
    assert AuditEvent.objects.filter(action="review.denied").count() == 2


def test_actions_on_a_missing_candidate_count_as_writes(client, project, alice, settings):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 2
    headers = bearer(project, alice, "read", "review")
    address = url(project, "candidates/999999/reject")
    codes = [post(client, address, {"candidate_version": 1}, headers).status_code for _ in range(3)]
    assert codes == [404, 404, 429]


def test_refused_events_count_as_writes(client, project, alice, settings):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 2
    headers = bearer(project, alice, "write-events")
    naive = {"content": "deployed", "occurred_at": "2026-11-20T10:00:00"}
    codes = [post(client, url(project, "events"), naive, headers).status_code for _ in range(2)]
    codes.append(post(client, url(project, "events"), {"content": "deployed"}, headers).status_code)
    assert codes == [400, 400, 429]
    assert not Episode.objects.filter(project=project).exists()
