"""The review issue's check, on the real demo corpus: approve, roll back, audit."""

from __future__ import annotations

import io

from django.core.management import call_command

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki import wiki
from llmwiki.models import AuditEvent, Page, Project
from reviews import actions


def test_approving_the_duplicate_fact_then_rolling_back_on_the_demo(db, django_user_model):
    call_command("load_demo", stdout=io.StringIO())
    project = Project.objects.get(slug="demo")
    demo = django_user_model.objects.get(username="demo")
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    # The staging database fact, stated five ways (other proposals may name the host too).
    fact = Candidate.objects.get(
        project=project,
        text__icontains="db-staging-2",
        text__iregex=r"postgres(ql)? ?16",
        status="proposed",
    )
    evidence = list(fact.evidence.values_list("episode_id", flat=True))
    assert len(evidence) == 5

    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    before = page.current_revision  # None: nothing approved yet
    seen = actions.form_state(fact)
    actions.candidate_approve(candidate=fact, reviewer=demo, seen=seen)
    page.refresh_from_db()
    approved = page.current_revision
    assert fact.text in approved.markdown
    assert all(f"#{pk}" in approved.markdown for pk in evidence)  # cites every episode

    # A second approval gives a revision to go back from.
    other = Candidate.objects.filter(
        project=project, page_target="SYSTEM_OVERVIEW", status="proposed"
    ).first()
    actions.candidate_approve(candidate=other, reviewer=demo, seen=actions.form_state(other))
    page.refresh_from_db()
    rolled = wiki.page_rollback(page=page, revision=approved, actor=demo, reason="too early")
    assert rolled.markdown == approved.markdown
    assert other.text not in rolled.markdown
    assert before is None
    done = set(AuditEvent.objects.filter(project=project).values_list("action", flat=True))
    assert {"claim.approve", "page.revision", "page.rollback"} <= done
