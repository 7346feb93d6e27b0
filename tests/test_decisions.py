"""Issue 9, section 1: review decisions that used to do the wrong thing quietly."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.models import AuditEvent, Claim, Episode, Page
from llmwiki.wiki import claim_create
from reviews import actions, conflicts, errors
from reviews.models import Review
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


def action_url(candidate, action: str) -> str:
    return reverse("reviews:candidate_action", args=[candidate.project.slug, candidate.pk, action])


def form(candidate, **extra) -> dict:
    seen = actions.form_state(candidate)
    return {
        "candidate_version": seen.candidate_version,
        "page_revision": seen.page_revision_id or "",
        "edited_text": candidate.text,
        "note": "",
        **extra,
    }


def denied(candidate) -> list[str]:
    return list(
        AuditEvent.objects.filter(action="review.denied", object_id=str(candidate.pk))
        .order_by("id")
        .values_list("note", flat=True)
    )


# --- A plain Approve never drops an edit -----------------------------------------------------


def test_a_plain_approve_of_an_edited_text_is_refused_not_dropped(staging, bob):
    with pytest.raises(errors.ReviewRefused, match="approve it as edited, or revert"):
        approve(staging, bob, edited_text="Staging: PostgreSQL 16.", as_edited=False)
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()
    assert denied(staging) == [
        "approve-edit: you changed the text: approve it as edited, or revert the edit first"
    ]
    claim = approve(staging, bob, edited_text="Staging: PostgreSQL 16.", as_edited=True)
    assert claim.text == "Staging: PostgreSQL 16."
    assert Review.objects.get(candidate=staging).action == "approve-edit"


def test_an_edit_that_empties_the_text_is_refused_by_name(staging, bob):
    with pytest.raises(errors.ReviewRefused, match="the edited text is empty"):
        approve(staging, bob, edited_text="   ", as_edited=True)
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()


def test_the_form_keeps_the_edit_and_offers_only_approve_as_edited(client, bob, staging):
    client.force_login(bob)
    edited = "Staging: PostgreSQL 16 on db-staging-2."
    response = client.post(action_url(staging, "approve"), form(staging, edited_text=edited))
    assert response.status_code == 400
    body = response.content.decode()
    assert "approve it as edited, or revert the edit" in body
    assert f">{edited}</textarea>" in body
    assert 'data-action="approve" data-key="A" accesskey="a" hidden>Approve</button>' in body
    assert (
        'data-action="approve-edit" data-key="A" accesskey="a">Approve as edited</button>' in body
    )
    assert 'data-action="revert-edit">Revert edit</a>' in body
    assert not Claim.objects.exists()
    response = client.post(action_url(staging, "approve-edit"), form(staging, edited_text=edited))
    assert response.status_code == 302
    assert Claim.objects.get().text == edited


def test_an_unchanged_text_approves_plainly_and_shows_one_approve_button(client, bob, staging):
    client.force_login(bob)
    body = panel(client, staging)
    assert 'data-action="approve" data-key="A" accesskey="a">Approve</button>' in body
    assert 'data-action="approve-edit" data-key="A" accesskey="a" hidden>' in body
    response = client.post(action_url(staging, "approve"), form(staging))
    assert response.status_code == 302
    assert Review.objects.get(candidate=staging).action == "approve"


def test_the_review_history_names_an_edited_approval_as_the_button_does(client, bob, staging):
    claim = approve(staging, bob, edited_text="Staging: PostgreSQL 16.", as_edited=True)
    client.force_login(bob)
    assert "bob: Approve as edited" in panel(client, staging)
    url = reverse("reviews:claim", args=[staging.project.slug, claim.pk])
    body = client.get(url).content.decode()
    assert "Approve as edited by bob" in body
    assert "Approve with edit" not in body


# --- The merge refusal is audited ---------------------------------------------------------


def test_a_merge_without_a_valid_target_is_refused_and_audited(client, bob, staging):
    client.force_login(bob)
    response = client.post(action_url(staging, "merge"), form(staging, claim=9999))
    assert response.status_code == 400
    assert "choose an approved claim of this project to merge into" in response.content.decode()
    assert denied(staging) == ["merge: choose an approved claim of this project to merge into"]
    staging.refresh_from_db()
    assert staging.status == "proposed"


def test_a_merge_into_a_retracted_claim_is_refused_and_audited(dreamed, staging, bob):
    claim = approve(add_candidate(dreamed, WORKER, key="w"), bob)
    claim.transition(Claim.Status.RETRACTED, actor=bob)
    with pytest.raises(errors.ReviewRefused, match="retracted, not approved"):
        actions.candidate_merge(
            candidate=staging, reviewer=bob, seen=actions.form_state(staging), claim=claim
        )
    assert len(denied(staging)) == 1


# --- Reviewers on one page do not refuse each other ----------------------------------------


def test_two_reviewers_approving_different_candidates_for_one_page_both_succeed(
    dreamed, staging, bob, alice
):
    worker = add_candidate(dreamed, WORKER, key="w", section="Deploys")
    assert worker.section != staging.section
    seen_by_bob, seen_by_alice = actions.form_state(staging), actions.form_state(worker)
    first = actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen_by_bob)
    second = actions.candidate_approve(candidate=worker, reviewer=alice, seen=seen_by_alice)
    page = second.page
    page.refresh_from_db()
    assert page.current_revision.number == 2
    assert set(page.current_revision.claim_ids) == {first.pk, second.pk}
    assert staging.text in page.current_revision.markdown
    assert WORKER in page.current_revision.markdown


def test_the_confirmation_says_the_approval_was_re_based(client, dreamed, staging, bob, alice):
    worker = add_candidate(dreamed, WORKER, key="w", section="Deploys")
    data = form(worker)
    approve(staging, alice)
    client.force_login(bob)
    response = client.post(action_url(worker, "approve"), data, follow=True)
    text = response.content.decode()
    assert "Approved: claim" in text
    assert "The page had changed since you opened the candidate (you saw no revision;" in text
    assert "others published up to r1) but not in the claim" in text
    assert "so it was added to the current page as r2." in text


def test_a_change_to_the_claim_a_merge_folds_into_refuses_the_merge(dreamed, staging, bob, alice):
    target = approve(staging, bob)
    merging = add_candidate(dreamed, "db-staging-2 runs Postgres.", key="m")
    seen = actions.form_state(merging)
    other = add_candidate(dreamed, "Postgres 16 is on db-staging-2.", key="o")
    actions.candidate_merge(
        candidate=other, reviewer=alice, seen=actions.form_state(other), claim=target
    )
    extra = dreamed.episodes.filter(source__isnull=False).exclude(claims=target).first()
    target.evidence.add(extra)
    from llmwiki.wiki import page_recompile

    page_recompile(page=target.page, actor=alice, reason="test: the claim's citations changed")
    with pytest.raises(errors.ReviewRefused, match=f"changed in claim {target.pk}"):
        actions.candidate_merge(candidate=merging, reviewer=bob, seen=seen, claim=target)


def test_a_merge_re_bases_over_changes_elsewhere_on_the_page(dreamed, staging, bob, alice):
    target = approve(staging, bob)
    merging = add_candidate(dreamed, "db-staging-2 runs Postgres.", key="m")
    seen = actions.form_state(merging)
    approve(add_candidate(dreamed, WORKER, key="w", section="Deploys"), alice)
    actions.candidate_merge(candidate=merging, reviewer=bob, seen=seen, claim=target)
    merging.refresh_from_db()
    assert merging.status == "merged"


# --- The approval path ------------------------------------------------------------------


def test_the_reviewer_chooses_or_names_the_section(client, dreamed, staging, bob):
    approve(add_candidate(dreamed, WORKER, key="w", section="Deploys"), bob)
    client.force_login(bob)
    body = panel(client, staging)
    assert '<datalist id="page-sections"><option value="Deploys"></datalist>' in body
    response = client.post(action_url(staging, "approve"), form(staging, section="Databases"))
    assert response.status_code == 302
    claim = Claim.objects.get(candidates=staging)
    assert claim.section == "Databases"
    assert "## Databases\n" in claim.page.current_revision.markdown


def test_the_approval_reads_the_page_locks_the_candidate_and_asks_the_role_once(staging, bob):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    seen = actions.form_state(staging)
    with CaptureQueriesContext(connection) as ctx:
        actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen)
    sql = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]

    def reads(table: str, where: str) -> int:
        return sum(1 for q in sql if f'FROM "{table}"' in q and where in q)

    assert reads("llmwiki_page", '"llmwiki_page"."key" =') == 1
    assert reads("llmwiki_page", '"llmwiki_page"."id" =') == 0
    assert reads("dreaming_candidate", '"dreaming_candidate"."id" =') == 1
    assert reads("llmwiki_membership", '"llmwiki_membership"."user_id" =') == 1


def test_the_approval_preview_marks_the_new_claim_without_a_fake_id(client, bob, staging):
    client.force_login(bob)
    body = panel(client, staging)
    assert '<tr class="add">' in body
    assert f"- {staging.text} _(new claim; evidence <a href=" in body
    assert "_(claim 1;" not in body


# --- An accepted conflict side always ends somewhere visible ------------------------------


def reversal(project) -> Conflict:
    return Conflict.objects.get(project=project, kind="reversal")


def redis_side(conflict) -> ConflictSide:
    return next(s for s in conflict.sides.all() if "Redis Streams" in s.text)


def test_accepting_a_side_nobody_approved_queues_it_as_a_candidate(dreamed, bob):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    assert not any(s.claim_id for s in conflict.sides.all())
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=side.position
    )
    conflict.refresh_from_db()
    candidate = conflict.accepted_candidate
    assert conflict.status == "resolved" and conflict.accepted_position == side.position
    assert candidate.status == "proposed" and candidate.text == side.text
    assert candidate.page_target == "DECISION_LOG"
    assert set(candidate.evidence.values_list("episode_id", flat=True)) == set(
        side.evidence.values_list("id", flat=True)
    )
    assert f"conflict #{conflict.pk}" in candidate.route_reason
    assert candidate in Candidate.objects.open()  # in the review queue
    side.refresh_from_db()
    assert side.candidate == candidate


def test_accepting_a_side_against_an_approved_claim_supersedes_it_through_the_gates(dreamed, bob):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    rabbit = next(s for s in conflict.sides.all() if s is not side and s.pk != side.pk)
    old = claim_create(
        page=Page.objects.get(project=dreamed, key="DECISION_LOG"),
        text=rabbit.text,
        evidence=rabbit.evidence.values_list("id", flat=True),
        reviewer=bob,
        section="Queues",
    )
    ConflictSide.objects.filter(pk=rabbit.pk).update(claim=old)
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=side.position
    )
    conflict.refresh_from_db()
    new = conflict.accepted_claim
    old.refresh_from_db()
    assert old.status == "superseded" and old.superseded_by == new
    assert (new.text, new.section, new.version) == (side.text, "Queues", 2)
    candidate = conflict.accepted_candidate
    assert candidate.status == "approved" and candidate.claim == new
    assert Review.objects.get(candidate=candidate).action == "approve"
    markdown = new.page.current_revision.markdown
    assert side.text.split(",")[0] in markdown and f"(claim {old.pk}" not in markdown


def test_accepting_sensitive_text_needs_a_maintainer_and_changes_nothing_otherwise(
    dreamed, bob, alice
):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    rabbit = next(s for s in conflict.sides.all() if s.pk != side.pk)
    old = claim_create(
        page=Page.objects.get(project=dreamed, key="DECISION_LOG"),
        text=rabbit.text,
        evidence=rabbit.evidence.values_list("id", flat=True),
        reviewer=bob,
    )
    ConflictSide.objects.filter(pk=rabbit.pk).update(claim=old)
    Episode.objects.filter(pk__in=side.evidence.all())._unchecked_update(flags=["pii:email"])
    with pytest.raises(errors.ReviewRefused, match="needs a maintainer"):
        conflicts.conflict_resolve(
            conflict=conflict, actor=bob, resolution="accept-new", winner=side.position
        )
    conflict.refresh_from_db()
    old.refresh_from_db()
    assert conflict.status == "open" and old.status == "approved"
    assert not Candidate.objects.filter(dedupe_key__startswith="conflict:").exists()
    assert AuditEvent.objects.filter(action="review.denied", object_type="Conflict").count() == 1
    conflicts.conflict_resolve(
        conflict=conflict,
        actor=alice,
        resolution="accept-new",
        winner=side.position,
        sensitive_confirmed=True,
    )
    conflict.refresh_from_db()
    assert conflict.accepted_claim.supersedes == old


def test_a_merged_text_with_no_approved_side_is_queued(dreamed, bob):
    conflict = reversal(dreamed)
    merged = "Shipment events moved from RabbitMQ to Redis Streams in November."
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="merge", merged_text=merged)
    conflict.refresh_from_db()
    assert conflict.accepted_position is None
    assert conflict.accepted_candidate.text == merged
    assert conflict.accepted_candidate.evidence.count() == sum(
        s.evidence.count() for s in conflict.sides.all()
    )


def test_a_candidate_a_resolution_queued_says_so_on_its_panel(client, dreamed, bob, carol):
    conflict = reversal(dreamed)
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=redis_side(conflict).position
    )
    conflict.refresh_from_db()
    candidate = conflict.accepted_candidate
    admitted = (
        f"a reviewer's resolution of conflict #{conflict.pk} (accept new (supersede), by bob "
        f"on {conflict.resolved_at:%Y-%m-%d}), not a dream sweep: nothing scored it"
    )
    link = f"?conflict={conflict.pk}#conflict-{conflict.pk}"
    client.force_login(bob)
    explain = reverse("dreaming:explain", args=[dreamed.slug, candidate.pk])
    for body in (panel(client, candidate), client.get(explain).content.decode()):
        assert admitted.replace("'", "&#x27;") in body
        assert f'{link}" data-testid="queued-by">resolution of conflict #{conflict.pk}</a>' in body
        assert 'data-testid="no-score"' in body
        assert "Score 0.000" not in body and "independent evidence" not in body
    # The link opens that one card, resolved as it is; a viewer may follow it too.
    client.force_login(carol)
    assert admitted.replace("'", "&#x27;") in client.get(explain).content.decode()
    page = reverse("reviews:conflicts", args=[dreamed.slug])
    body = client.get(page + link.split("#")[0]).content.decode()
    assert body.count('class="card conflict"') == 1 and f'id="conflict-{conflict.pk}"' in body
    assert client.get(page + "?conflict=%C2%B2").status_code == 200  # not a number: ignored


def test_a_sweep_candidate_keeps_its_score_and_evidence_rule(client, bob, staging):
    client.force_login(bob)
    body = panel(client, staging)
    assert "independent evidence:" in body and f"Score {staging.score:.3f}" in body
    assert 'data-testid="no-score"' not in body and 'data-testid="queued-by"' not in body


def test_the_resolved_card_shows_the_winner_and_where_it_went(client, dreamed, bob):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    client.force_login(bob)
    response = client.post(
        reverse("reviews:conflicts", args=[dreamed.slug]),
        {"conflict": conflict.pk, "resolution": "accept-new", "winner": side.position},
        follow=True,
    )
    conflict.refresh_from_db()
    candidate = conflict.accepted_candidate
    assert f"It waits for review as candidate #{candidate.pk}." in response.content.decode()
    body = client.get(reverse("reviews:conflicts", args=[dreamed.slug]) + "?show=resolved")
    text = body.content.decode()
    assert f"Accepted side {side.position + 1}</strong>" in text
    assert "queued for review as <a href=" in text and f">candidate #{candidate.pk}</a>" in text


def test_the_resolved_card_links_each_role_to_a_page_it_may_open(client, dreamed, bob, carol):
    conflict = reversal(dreamed)
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=redis_side(conflict).position
    )
    conflict.refresh_from_db()
    candidate = conflict.accepted_candidate
    review = reverse("reviews:candidate", args=[dreamed.slug, candidate.pk])
    explain = reverse("dreaming:explain", args=[dreamed.slug, candidate.pk])
    resolved = reverse("reviews:conflicts", args=[dreamed.slug]) + "?show=resolved"
    for user, link in ((bob, review), (carol, explain)):
        client.force_login(user)
        body = client.get(resolved).content.decode()
        assert f'<a href="{link}">candidate #{candidate.pk}</a>' in body
        assert client.get(link).status_code == 200
    assert f'href="{review}"' not in body  # the viewer's card


def test_accepting_an_already_approved_side_retracts_the_approved_other_side(dreamed, bob):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    rabbit = next(s for s in conflict.sides.all() if s.pk != side.pk)
    page = Page.objects.get(project=dreamed, key="DECISION_LOG")
    kept = claim_create(page=page, text=side.text, evidence=[], reviewer=bob)
    lost = claim_create(page=page, text=rabbit.text, evidence=[], reviewer=bob)
    ConflictSide.objects.filter(pk=side.pk).update(claim=kept)
    ConflictSide.objects.filter(pk=rabbit.pk).update(claim=lost)
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=side.position
    )
    conflict.refresh_from_db()
    lost.refresh_from_db()
    assert conflict.accepted_claim == kept and conflict.accepted_candidate is None
    assert lost.status == "retracted"
    event = AuditEvent.objects.get(action="claim.retracted", object_id=str(lost.pk))
    assert event.note == f"conflict {conflict.pk}: claim {kept.pk} accepted instead"
    page.refresh_from_db()
    assert rabbit.text not in page.current_revision.markdown


def test_accepting_a_side_reuses_its_own_open_candidate(dreamed, bob):
    conflict = reversal(dreamed)
    side = redis_side(conflict)
    own = add_candidate(dreamed, side.text, key="own")
    ConflictSide.objects.filter(pk=side.pk).update(candidate=own)
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=side.position
    )
    conflict.refresh_from_db()
    assert conflict.accepted_candidate == own
    assert not Candidate.objects.filter(dedupe_key__startswith="conflict:").exists()
