"""The queue learns from its reviewers: rejections move a similar candidate down, and its
panel says who moved it."""

from __future__ import annotations

import re

from django.urls import reverse

from dreaming import services
from dreaming.engine.learn import Where
from dreaming.models import Candidate
from dreaming.sweep_input import _decided
from llmwiki.models import SecurityClass
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


def test_a_decided_candidate_teaches_the_next_sweep_with_the_place_it_was_proposed_with(
    bob, project
):
    decided = _decide_the_plan(project, bob, approve=False)
    # One decided before candidates kept their place: it still votes, on its wording alone.
    Candidate.objects.filter(pk=decided[1].pk).update(signals={"worth": 0.7})

    labels = {d.candidate_id: d for d in _decided(project)}

    first = Candidate.objects.get(pk=decided[0].pk)
    assert labels[first.pk].where == Where.from_signals(first.signals)
    assert labels[first.pk].where.place == first.signals["worth.place"]
    assert labels[decided[1].pk].where is None
    assert not labels[first.pk].approved
    dream(project)  # a sweep with both kinds of decision runs


def _moved_down_by(project, decided):
    return Candidate.objects.create(
        project=project,
        text="Add unit tests for the spawner.",
        dedupe_key="add unit tests for the spawner",
        signals={
            "worth": 0.41,
            "worth.model": 0.62,
            "worth.reviewers": -0.86,
            "reviewers.rejected": [c.pk for c in decided],
        },
    )


def _moved_by_list(client, user, project, moved) -> str:
    client.force_login(user)
    page = client.get(reverse("dreaming:explain", args=[project.slug, moved.pk]))
    return re.search(r'data-testid="moved-by">(.*?)</ul>', page.content.decode(), re.S).group(1)


def test_the_panel_lists_the_rejections_that_moved_it_with_their_reasons(client, bob, project):
    decided = _decide_the_plan(project, bob, approve=False)

    listed = _moved_by_list(client, bob, project, _moved_down_by(project, decided))

    for c in decided:
        assert f">#{c.pk}</a> rejected: {c.text}" in listed
    assert listed.count("reason: a to-do") == 2


def test_a_viewer_without_clearance_sees_neither_a_restricted_rejection_nor_its_reason(
    client, bob, carol, project
):
    decided = _decide_the_plan(project, bob, approve=False)
    Candidate.objects.filter(pk=decided[0].pk).update(security_class=SecurityClass.RESTRICTED)

    listed = _moved_by_list(client, carol, project, _moved_down_by(project, decided))

    assert decided[0].text not in listed and 'data-testid="withheld"' in listed
    assert decided[1].text in listed
    assert listed.count("reason: a to-do") == 1
