"""Wiki views: page list, page, history, diff, rollback, claim panel, retraction."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming.models import Candidate, CandidateEvidence
from llmwiki.models import Claim
from reviews import services as review
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
            review.candidate_approve(
                candidate=candidate, reviewer=reviewer, seen=review.form_state(candidate)
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
    with django_assert_num_queries(6) as few:
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
