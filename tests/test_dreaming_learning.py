"""The queue learns from its reviewers: rejections move a similar candidate down, and its
panel says who moved it."""

from __future__ import annotations

import re

from django.urls import reverse

from dreaming import services
from dreaming.models import Candidate
from reviews import actions


def dream(project):
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    return services.dream_execute(run_id=run.pk)


def ingest(project, path, text):
    from llmwiki.ingest import RawFile, ingest_files

    ingest_files(project=project, files=[RawFile(path, text.encode())], actor="system")


def _decide_the_plan(project, bob, approve: bool) -> list[Candidate]:
    ingest(
        project,
        "notes/plan.md",
        "# Tech tree\n\nAdd design documents for the tech tree and the sector map.\n\n"
        "Create a CI job that runs the unit tests on every push.\n",
    )
    dream(project)
    decided = list(Candidate.objects.filter(project=project).order_by("pk"))
    assert len(decided) == 2
    for c in decided:
        seen = actions.form_state(c)
        if approve:
            actions.candidate_approve(candidate=c, reviewer=bob, seen=seen)
        else:
            actions.candidate_reject(candidate=c, reviewer=bob, seen=seen, reason="a to-do")
    ingest(project, "notes/more.md", "Add unit tests for the wave manager and the spawner.\n")
    dream(project)
    return decided


def test_after_rejections_a_similarly_worded_to_do_is_not_proposed(bob, project):
    _decide_the_plan(project, bob, approve=False)

    assert not Candidate.objects.filter(project=project, text__startswith="Add unit tests")


def test_after_approvals_a_similar_one_ranks_up_and_its_panel_names_them(client, bob, project):
    approved = _decide_the_plan(project, bob, approve=True)

    (moved,) = Candidate.objects.filter(project=project, text__startswith="Add unit tests")
    assert moved.signals["worth"] > moved.signals["worth.model"]
    client.force_login(bob)
    page = client.get(reverse("dreaming:explain", args=[project.slug, moved.pk]))
    said = re.search(r'data-testid="moved-by-reviewers">([^<]*)<', page.content.decode()).group(1)
    assert said.startswith("Ranked up: reviewers approved similar candidates #")
    assert set(re.findall(r"#(\d+)", said)) == {str(c.pk) for c in approved}


def test_the_panel_says_which_rejections_ranked_a_candidate_down(project):
    c = Candidate(
        project=project,
        text="Add unit tests for the spawner.",
        signals={
            "worth": 0.41,
            "worth.model": 0.62,
            "worth.reviewers": -0.86,
            "reviewers.rejected": [12, 31],
            "reviewers.approved": [],
        },
    )
    assert c.moved_by_reviewers == (
        "ranked down: reviewers rejected similar candidates #12, #31 (claim-worthiness 0.62 → 0.41)"
    )
