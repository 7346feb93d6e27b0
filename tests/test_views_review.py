from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.engine.deep import draft_rank
from dreaming.models import Candidate, CandidateEvidence
from llmwiki.models import Claim
from reviews import actions
from tests.dreaming_data import seed


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed):
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


def url(name, project, *args):
    return reverse(f"reviews:{name}", args=[project.slug, *args])


def action_data(candidate, **extra):
    seen = actions.form_state(candidate)
    return {
        "candidate_version": seen.candidate_version,
        "page_revision": seen.page_revision_id or "",
        **extra,
    }


def many_candidates(project, n, start=0):
    episode = project.episodes.filter(source__isnull=False).first()
    for i in range(start, start + n):
        c = Candidate.objects.create(
            project=project,
            text=f"Fact number {i} about tw-app-{i}.",
            page_target="SYSTEM_OVERVIEW",
            memory_type="semantic-candidate",
            dedupe_key=f"bulk-{i}",
            flags=["pii:email"] if i % 3 == 0 else [],
        )
        CandidateEvidence.objects.create(candidate=c, episode=episode)


# --- queue ------------------------------------------------------------------------------


def test_the_queue_lists_open_candidates_riskiest_first(client, bob, dreamed):
    many_candidates(dreamed, 3)
    client.force_login(bob)
    response = client.get(url("queue", dreamed))
    assert response.status_code == 200
    first = response.context["page"].object_list[0]
    assert first.flags  # flagged material comes first
    assert b"Fact number 0" in response.content


def test_the_queue_lists_candidates_in_the_sweeps_order_not_by_support_alone(client, bob, dreamed):
    Candidate.objects.filter(project=dreamed).delete()
    many_candidates(dreamed, 2, start=1)  # unflagged, so risk does not decide
    fragment, statement = Candidate.objects.filter(project=dreamed).order_by("id")
    # Better supported, but reads as a fragment: the sweep ranked it second.
    Candidate.objects.filter(pk=fragment.pk).update(score=0.6, rank=0.7)
    Candidate.objects.filter(pk=statement.pk).update(score=0.4, rank=0.85)
    client.force_login(bob)
    listed = client.get(url("queue", dreamed)).context["page"].object_list
    assert [c.pk for c in listed] == [statement.pk, fragment.pk]
    by_score = client.get(url("queue", dreamed), {"sort": "score"}).context["page"].object_list
    assert [c.pk for c in by_score] == [fragment.pk, statement.pk]


def test_a_sweep_stores_its_order_as_the_candidates_rank(dreamed):
    for c in Candidate.objects.filter(project=dreamed):
        assert c.rank == pytest.approx(draft_rank(c))  # a candidate reads as its draft did


def test_the_queue_and_the_candidate_page_render_candidate_markdown_safely(client, bob, dreamed):
    episode = dreamed.episodes.filter(source__isnull=False).first()
    c = Candidate.objects.create(
        project=dreamed,
        text="Run `make smoke` on **both** hosts <script>alert(1)</script>",
        page_target="RUNBOOKS",
        memory_type="procedural-candidate",
        dedupe_key="md-1",
    )
    CandidateEvidence.objects.create(candidate=c, episode=episode)
    client.force_login(bob)
    queue = client.get(url("queue", dreamed)).content.decode()
    page = client.get(url("candidate", dreamed, c.pk)).content.decode()
    # The text as shown (the edit box keeps the source, escaped, for the reviewer to edit).
    shown = [
        queue.split(f'{c.pk}/">', 1)[1].split("</a>", 1)[0],
        page.split('data-testid="candidate-text">', 1)[1].split("</blockquote>", 1)[0],
    ]
    for html in shown:
        assert "<code>make smoke</code>" in html and "<strong>both</strong>" in html
        assert "<script" not in html and "**both**" not in html


def test_the_queue_runs_a_constant_number_of_queries(
    client, bob, dreamed, django_assert_num_queries
):
    client.force_login(bob)
    client.get(url("queue", dreamed))
    many_candidates(dreamed, 3)
    # 8, and the role look-ups of "may this reviewer decide it?", once per kind of row.
    with django_assert_num_queries(10) as few:
        client.get(url("queue", dreamed))
    many_candidates(dreamed, 60, start=3)
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(url("queue", dreamed))
    assert len(response.context["page"].object_list) == 25


def test_the_queue_filters_and_returns_a_fragment_to_htmx(client, bob, dreamed):
    many_candidates(dreamed, 6)
    client.force_login(bob)
    response = client.get(url("queue", dreamed), {"risk": "pii"}, headers={"HX-Request": "true"})
    assert response.content.lstrip().startswith(b'<section id="queue-results"')
    assert b"<html" not in response.content
    response = client.get(url("queue", dreamed), {"risk": "pii"})
    assert response.context["page"].paginator.count == 2
    assert all("pii:email" in c.flags for c in response.context["page"].object_list)
    response = client.get(url("queue", dreamed), {"min_score": "0.99"})
    assert b"No candidate matches these filters" in response.content


def test_the_queue_needs_login_and_membership(client, mallory, dreamed):
    assert client.get(url("queue", dreamed)).status_code == 302
    client.force_login(mallory)
    assert client.get(url("queue", dreamed)).status_code == 404


# --- candidate panel and actions ---------------------------------------------------------


def test_the_panel_explains_the_candidate(client, bob, staging):
    client.force_login(bob)
    response = client.get(url("candidate", staging.project, staging.pk))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Why is this here?" in body
    for ev in staging.evidence.select_related("episode__source"):
        assert ev.episode.source.sha256 in body
    assert "<mark>" in body
    assert '<tr class="add">' in body and "- The staging database" in body


def test_a_viewer_gets_403_on_the_queue_and_the_panel(client, carol, staging):
    """The review queue is for reviewers and above; viewers read candidates under Dreaming."""
    client.force_login(carol)
    assert client.get(url("queue", staging.project)).status_code == 403
    assert client.get(url("candidate", staging.project, staging.pk)).status_code == 403
    response = client.get(url("queue", staging.project), headers={"HX-Request": "true"})
    assert response.status_code == 403


def why_panel_html(response) -> str:
    body = response.content.decode()
    start = body.index('<section class="card why"')
    return body[start : body.index("</section>", start)]


def test_the_review_page_and_the_explain_page_show_one_and_the_same_panel(client, bob, staging):
    client.force_login(bob)
    review_page = client.get(url("candidate", staging.project, staging.pk))
    explain = client.get(reverse("dreaming:explain", args=[staging.project.slug, staging.pk]))
    panel = why_panel_html(review_page)
    assert panel == why_panel_html(explain)
    assert panel.count('data-testid="evidence"') == staging.evidence.count()
    assert "<mark>" in panel and "query_diversity" in panel
    assert 'data-testid="admission">independent evidence:' in panel


def test_the_candidate_page_title_is_text_and_loads_its_script_once(client, bob, staging):
    client.force_login(bob)
    body = client.get(url("candidate", staging.project, staging.pk)).content.decode()
    title = body[body.index("<title>") : body.index("</title>")]
    assert "<script" not in title and title.startswith(f"<title>Candidate #{staging.pk}")
    assert body.count("llmwiki/review.js") == 1


def test_flag_badges_are_red_for_risk_and_amber_for_pii_in_the_queue(client, bob, dreamed):
    many_candidates(dreamed, 1)
    Candidate.objects.filter(dedupe_key="bulk-0").update(flags=["pii:email", "risk:injection"])
    client.force_login(bob)
    body = client.get(url("queue", dreamed)).content.decode()
    assert '<span class="badge warn" title="pii:email">Personal data: email address</span>' in body
    assert '<span class="badge bad" title="risk:injection">Risk: injection</span>' in body


def test_an_outsider_gets_404_on_a_candidate(client, mallory, staging):
    client.force_login(mallory)
    assert client.get(url("candidate", staging.project, staging.pk)).status_code == 404
    response = client.post(
        url("candidate_action", staging.project, staging.pk, "approve"), action_data(staging)
    )
    assert response.status_code == 404


def test_a_reviewer_approves_and_moves_on(client, bob, staging):
    client.force_login(bob)
    response = client.post(
        url("candidate_action", staging.project, staging.pk, "approve"), action_data(staging)
    )
    assert response.status_code == 302
    staging.refresh_from_db()
    assert staging.status == "approved"
    assert Claim.objects.filter(project=staging.project).count() == 1


def test_a_viewer_post_to_approve_is_403_and_changes_nothing(client, carol, staging):
    client.force_login(carol)
    response = client.post(
        url("candidate_action", staging.project, staging.pk, "approve"), action_data(staging)
    )
    assert response.status_code == 403
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()


def test_a_stale_form_is_409_with_the_reason(client, bob, alice, staging):
    data = action_data(staging)
    actions.candidate_defer(candidate=staging, reviewer=alice, seen=actions.form_state(staging))
    client.force_login(bob)
    response = client.post(url("candidate_action", staging.project, staging.pk, "approve"), data)
    assert response.status_code == 409
    assert b"no longer awaiting review" in response.content
    assert not Claim.objects.exists()


def test_reject_without_a_reason_is_refused(client, bob, staging):
    client.force_login(bob)
    response = client.post(
        url("candidate_action", staging.project, staging.pk, "reject"), action_data(staging)
    )
    assert response.status_code == 400
    response = client.post(
        url("candidate_action", staging.project, staging.pk, "reject"),
        action_data(staging, note="not a fact"),
    )
    assert response.status_code == 302
    staging.refresh_from_db()
    assert staging.status == "rejected"


def test_approve_with_edit_through_the_form(client, bob, staging):
    client.force_login(bob)
    client.post(
        url("candidate_action", staging.project, staging.pk, "approve-edit"),
        action_data(staging, edited_text="Staging: PostgreSQL 16 on db-staging-2."),
    )
    assert Claim.objects.get().text == "Staging: PostgreSQL 16 on db-staging-2."


def test_actions_need_post(client, bob, staging):
    client.force_login(bob)
    assert (
        client.get(url("candidate_action", staging.project, staging.pk, "approve")).status_code
        == 405
    )
