"""Two reviewers press Approve at the same moment: exactly one claim, one revision."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.models import Claim, PageRevision
from reviews import actions, errors
from reviews.models import Review
from tests.dreaming_data import seed


@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_approvals_produce_one_claim_and_one_revision(project, bob, alice):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    candidate = Candidate.objects.get(project=project, text__contains="db-staging-2")
    seen = actions.form_state(candidate)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def approve(user):
        try:
            barrier.wait()
            actions.candidate_approve(candidate=candidate, reviewer=user, seen=seen)
            outcomes.append("approved")
        except errors.ReviewRefused as refused:
            outcomes.append(f"refused {refused.status}")
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(u,)) for u in (bob, alice)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == ["approved", "refused 409"]
    assert Claim.objects.filter(project=project).count() == 1
    assert PageRevision.objects.filter(page__project=project).count() == 1
    assert Review.objects.filter(candidate=candidate).count() == 1
