"""Issue 9, section 1: review decisions that used to do the wrong thing quietly."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence
from llmwiki.models import Claim
from reviews import actions
from tests.dreaming_data import seed

WORKER = "The shipment worker runs on tw-app-1 behind nginx."


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed) -> Candidate:
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


def add_candidate(project, text: str, *, key: str, section: str = "") -> Candidate:
    episode = project.episodes.filter(source__isnull=False).order_by("id").first()
    candidate = Candidate.objects.create(
        project=project,
        text=text,
        page_target="SYSTEM_OVERVIEW",
        section=section,
        memory_type="semantic-candidate",
        dedupe_key=key,
    )
    CandidateEvidence.objects.create(candidate=candidate, episode=episode)
    return candidate


def approve(candidate, user, **kwargs) -> Claim:
    return actions.candidate_approve(
        candidate=candidate, reviewer=user, seen=actions.form_state(candidate), **kwargs
    )


def panel(client, candidate) -> str:
    url = reverse("reviews:candidate", args=[candidate.project.slug, candidate.pk])
    return client.get(url).content.decode()


# --- No "roll back to r0" ----------------------------------------------------------------


def test_the_first_approval_of_a_page_advises_no_rollback_to_r0(client, bob, staging):
    client.force_login(bob)
    body = panel(client, staging)
    assert "publishes SYSTEM_OVERVIEW r1" in body
    assert "back to r0" not in body and "nothing to roll back to" in body
    approve(staging, bob)
    body = panel(client, add_candidate(staging.project, WORKER, key="w"))
    assert "roll the page back to r1" in body


def test_the_claim_of_a_first_revision_is_not_told_to_roll_back(client, bob, staging):
    claim = approve(staging, bob)
    client.force_login(bob)
    body = client.get(reverse("reviews:claim", args=[staging.project.slug, claim.pk])).content
    assert b"before r1" not in body and b"no earlier revision to roll back to" in body
