"""Browser journeys through the reviewer's application: queue, panel, actions, wiki."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence, Conflict
from llmwiki.models import AuditEvent, Claim, Page
from reviews import actions
from reviews.models import Review
from tests.dreaming_data import seed

WORKER = "The shipment worker runs on tw-app-1 behind nginx."
BAD_REQUEST = "Failed to load resource: the server responded with a status of 400 (Bad Request)"


@pytest.fixture
def dreamed(project):
    """The small corpus ingested and dreamed: one candidate, one reversal conflict."""
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed):
    """The corpus's one recurring fact: PostgreSQL 16 on db-staging-2, five sightings."""
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


def add_candidate(project, text: str, *, score: float = 0.1, key: str = "extra") -> Candidate:
    """A hand-made candidate for SYSTEM_OVERVIEW backed by one episode with a source."""
    episode = project.episodes.filter(source__isnull=False).order_by("id").first()
    candidate = Candidate.objects.create(
        project=project,
        text=text,
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key=key,
        score=score,
    )
    CandidateEvidence.objects.create(candidate=candidate, episode=episode)
    return candidate


def approve(candidate: Candidate, reviewer) -> Claim:
    return actions.candidate_approve(
        candidate=candidate, reviewer=reviewer, seen=actions.form_state(candidate)
    )


def base(live_server, project) -> str:
    return f"{live_server.url}/p/{project.slug}"


def test_a_reviewer_walks_the_queue_by_keyboard_and_approves_a_candidate(
    page, live_server, login, bob, staging
):
    project = staging.project
    following = add_candidate(project, WORKER)
    login(bob)
    page.goto(f"{base(live_server, project)}/review/")
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    expect(page.get_by_text("2 candidates awaiting review")).to_be_visible()

    page.keyboard.press("j")
    first = page.locator("tr.queue-row").first
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    expect(first.get_by_role("link")).to_be_focused()
    page.keyboard.press("Enter")

    page.wait_for_url(f"**/review/candidates/{staging.pk}/")
    expect(page.get_by_test_id("candidate-text")).to_have_text(staging.text)
    expect(page.get_by_role("heading", name="Why is this here?")).to_be_visible()
    evidence = page.get_by_test_id("evidence")
    expect(evidence).to_have_count(staging.evidence.count())
    for ev in staging.evidence.select_related("episode__source"):
        expect(page.locator(f"#ev-{ev.episode_id}")).to_contain_text(
            f"sha256 {ev.episode.source.sha256}"
        )
    expect(evidence.locator("mark").first).to_be_visible()
    signals = page.locator("table.signals")
    expect(signals.get_by_role("columnheader", name="Contribution")).to_be_visible()
    expect(signals.get_by_role("cell", name="relevance", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="What approving would change")).to_be_visible()
    diff = page.get_by_test_id("approval-diff")
    expect(diff.locator("tr.add", has_text=f"- {staging.text} _(new claim;")).to_be_visible()

    page.get_by_role("button", name="Approve", exact=True).click()

    page.wait_for_url(f"**/review/candidates/{following.pk}/")
    claim = Claim.objects.get(project=project)
    expect(page.get_by_role("status")).to_contain_text(
        f"Approved: claim {claim.pk} on SYSTEM_OVERVIEW."
    )
    expect(page.get_by_test_id("candidate-text")).to_have_text(WORKER)
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.APPROVED and staging.claim_id == claim.pk
    assert claim.text == staging.text and claim.reviewer == bob
    overview = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    assert overview.current_revision.number == 1
    assert staging.text in overview.current_revision.markdown
    assert overview.current_revision.claim_ids == [claim.pk]
    assert Review.objects.get(candidate=staging).action == "approve"
    assert page.console_errors == []


def test_a_reviewer_approves_with_an_edit_and_the_claim_keeps_the_original(
    page, live_server, login, bob, staging
):
    project = staging.project
    edited = "Staging: PostgreSQL 16 on host db-staging-2."
    login(bob)
    page.goto(f"{base(live_server, project)}/review/candidates/{staging.pk}/")
    textarea = page.get_by_label("Claim text")
    expect(textarea).to_have_value(staging.text)
    textarea.fill(edited)
    page.get_by_role("button", name="Approve as edited").click()

    expect(page.get_by_role("status")).to_contain_text("Approved: claim")
    claim = Claim.objects.get(project=project)
    assert claim.text == edited
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.APPROVED
    decision = Review.objects.get(candidate=staging)
    assert (decision.action, decision.before_text, decision.after_text) == (
        "approve-edit",
        staging.text,
        edited,
    )
    assert (
        edited in Page.objects.get(project=project, key="SYSTEM_OVERVIEW").current_revision.markdown
    )

    page.goto(f"{base(live_server, project)}/claims/{claim.pk}/")
    expect(page.get_by_role("heading", name=f"Claim {claim.pk}")).to_be_visible()
    expect(page.locator("blockquote.card")).to_have_text(edited)
    history = page.get_by_role("heading", name="Review history").locator("+ ul")
    expect(history).to_contain_text("Approve as edited by bob")
    expect(history).to_contain_text(f"original: {staging.text}")
    assert page.console_errors == []


def test_rejecting_needs_a_reason_and_succeeds_with_one(page, live_server, login, bob, staging):
    project = staging.project
    login(bob)
    page.goto(f"{base(live_server, project)}/review/candidates/{staging.pk}/")
    with page.expect_navigation() as refused:
        page.get_by_role("button", name="Reject").click()
    assert refused.value.status == 400
    expect(page.get_by_test_id("refusal")).to_have_text(
        "say why you reject it (a reason is required)"
    )
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.PROPOSED and staging.version == 1
    assert not Review.objects.filter(candidate=staging).exists()
    # Chromium logs every 4xx document as a console error; the 400 is the point here, so
    # that one line is expected and anything else still fails the journey.
    assert page.console_errors == [BAD_REQUEST]
    page.console_errors.clear()

    page.get_by_label("Note or reason").fill("Duplicate of what the runbook already says.")
    page.get_by_role("button", name="Reject").click()

    page.wait_for_url(f"{base(live_server, project)}/review/")
    expect(page.get_by_role("status")).to_contain_text(f"Rejected candidate #{staging.pk}.")
    expect(page.get_by_role("heading", name="Nothing to review")).to_be_visible()
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.REJECTED
    decision = Review.objects.get(candidate=staging)
    assert (decision.action, decision.note) == (
        "reject",
        "Duplicate of what the runbook already says.",
    )
    assert not Claim.objects.filter(project=project).exists()
    assert page.console_errors == []


def test_a_maintainer_escalates_a_conflict_into_the_open_questions_page(
    page, live_server, login, alice, dreamed
):
    conflict = Conflict.objects.get(project=dreamed, kind="reversal")
    assert "RabbitMQ" in conflict.subject
    login(alice)
    page.goto(f"{base(live_server, dreamed)}/")
    page.get_by_role("navigation", name="Project").get_by_role("link", name="Conflicts").click()
    card = page.locator(f"#conflict-{conflict.pk}")
    expect(card.get_by_role("heading")).to_contain_text(conflict.subject)
    expect(card).to_contain_text("Redis Streams")

    card.locator("summary", has_text="Resolve").click()
    card.get_by_label("Escalate as open question").check()
    card.get_by_label("Owner username").fill("alice")
    card.get_by_label("Note").fill("Decide at the platform sync.")
    card.get_by_role("button", name="Resolve conflict").click()

    expect(page.get_by_role("status")).to_contain_text(
        f"Conflict #{conflict.pk}: {conflict.subject} — escalate."
    )
    expect(page.locator(f"#conflict-{conflict.pk}")).to_contain_text("owner alice")
    conflict.refresh_from_db()
    assert conflict.status == Conflict.Status.ESCALATED
    assert conflict.owner == alice and conflict.resolution == "escalate"
    assert AuditEvent.objects.filter(
        action="conflict.escalate", object_id=str(conflict.pk)
    ).exists()

    page.get_by_role("navigation", name="Project").get_by_role("link", name="Wiki").click()
    page.get_by_role("link", name="Open questions").click()
    body = page.get_by_test_id("page-body")
    expect(body.get_by_role("heading", name=conflict.subject)).to_be_visible()
    expect(body).to_contain_text("Escalated: owner alice.")
    questions = Page.objects.get(project=dreamed, key="OPEN_QUESTIONS")
    assert questions.current_revision.number == 1
    assert f"## {conflict.subject}" in questions.current_revision.markdown
    assert page.console_errors == []


def test_a_viewer_follows_a_wiki_claim_to_its_evidence(
    page, live_server, login, bob, carol, staging
):
    project = staging.project
    claim = approve(staging, bob)
    login(carol)
    page.goto(f"{base(live_server, project)}/wiki/")
    page.get_by_role("link", name="System overview").click()
    expect(page.get_by_test_id("page-body")).to_contain_text(staging.text)
    provenance = page.get_by_role("region", name="Provenance by section")
    provenance.get_by_role("link", name=f"claim {claim.pk}", exact=True).click()

    page.wait_for_url(f"**/claims/{claim.pk}/")
    expect(page.get_by_role("heading", name="Why is this here?")).to_be_visible()
    evidence = page.get_by_test_id("evidence")
    expect(evidence).to_have_count(claim.evidence.count())
    for episode in claim.evidence.select_related("source"):
        expect(evidence.filter(has_text=episode.source.sha256)).to_have_count(1)
    expect(page.get_by_role("button", name="Retract")).to_have_count(0)
    claim.refresh_from_db()
    assert claim.status == Claim.Status.APPROVED and claim.evidence.count() == 5
    assert page.console_errors == []


def test_a_maintainer_rolls_a_page_back_and_the_later_claim_disappears(
    page, live_server, login, alice, bob, staging
):
    project = staging.project
    first = approve(staging, bob)
    second = approve(add_candidate(project, WORKER), bob)
    overview = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    assert overview.current_revision.number == 2

    login(alice)
    page.goto(f"{base(live_server, project)}/wiki/SYSTEM_OVERVIEW/")
    expect(page.get_by_test_id("page-body")).to_contain_text(WORKER)
    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="History of System overview")).to_be_visible()
    expect(page.get_by_role("link", name="Roll back to r2")).to_have_count(0)
    page.get_by_role("link", name="Roll back to r1").click()

    # The link asks first: what changes, and why (required), before anything is published.
    expect(page.get_by_role("heading", name="Roll System overview back to r1?")).to_be_visible()
    expect(page.get_by_test_id("rollback-diff")).to_contain_text(WORKER)
    overview.refresh_from_db()
    assert overview.current_revision.number == 2
    page.get_by_label("Why roll back?").fill("the worker pool is not decided yet")
    page.get_by_role("button", name="Roll back to r1").click()

    page.wait_for_url(f"{base(live_server, project)}/wiki/SYSTEM_OVERVIEW/")
    expect(page.get_by_role("status")).to_contain_text("Rolled back to r1 as r3.")
    expect(page.locator(".page-head")).to_contain_text("r3 by alice")
    body = page.get_by_test_id("page-body")
    expect(body).to_contain_text(staging.text)
    expect(body).not_to_contain_text(WORKER)
    overview.refresh_from_db()
    assert overview.current_revision.number == 3
    assert WORKER not in overview.current_revision.markdown
    assert overview.current_revision.claim_ids == [first.pk]
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (Claim.Status.APPROVED, Claim.Status.ROLLED_BACK)
    rollback = AuditEvent.objects.get(action="page.rollback", object_id=str(overview.pk))
    assert rollback.actor == "user:alice"
    assert rollback.after == {"revision": 3, "restored_from": 1}
    assert rollback.note == "the worker pool is not decided yet"
    assert overview.current_revision.reason == "rollback to r1: the worker pool is not decided yet"

    # The removed claim says what happened to it, not "Superseded" with no successor.
    page.goto(f"{base(live_server, project)}/claims/{second.pk}/")
    expect(page.get_by_role("heading", name=f"Claim {second.pk}")).to_contain_text("Rolled back")
    expect(page.get_by_test_id("claim-ended")).to_contain_text(
        "by alice — rollback of SYSTEM_OVERVIEW to r1"
    )
    expect(page.get_by_text("Superseded")).to_have_count(0)
    expect(page.get_by_role("button", name="Retract")).to_have_count(0)
    assert page.console_errors == []


def test_a_viewer_reads_the_candidate_under_dreaming_and_gets_no_review_panel(
    page, live_server, login, carol, staging
):
    """The review queue and panel are for reviewers; a viewer reads candidates under Dreaming."""
    login(carol)
    response = page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    assert response.status == 403
    page.goto(f"{base(live_server, staging.project)}/dreaming/candidates/{staging.pk}/")
    expect(page.locator("blockquote.candidate-text")).to_have_text(staging.text)
    expect(page.get_by_role("heading", name="Why is this here?")).to_be_visible()
    expect(page.get_by_role("heading", name="Decide")).to_have_count(0)
    for name in ("Approve", "Approve as edited", "Reject", "Defer", "Merge"):
        expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    expect(page.locator("textarea")).to_have_count(0)
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.PROPOSED and staging.version == 1
    assert not Review.objects.exists() and not Claim.objects.exists()
    assert page.console_errors == [
        "Failed to load resource: the server responded with a status of 403 (Forbidden)"
    ]


# --- Regressions found while writing the journeys ------------------------------------------


def test_the_claim_panel_names_the_revision_to_roll_back_before(
    page, live_server, login, bob, carol, staging
):
    claim = approve(staging, bob)
    login(carol)
    page.goto(f"{base(live_server, staging.project)}/claims/{claim.pk}/")
    undo = page.get_by_test_id("claim-undo")
    expect(undo).to_contain_text("no earlier revision to roll back to")
    expect(undo).not_to_contain_text("r0")
    second = approve(add_candidate(staging.project, WORKER), bob)
    page.goto(f"{base(live_server, staging.project)}/claims/{second.pk}/")
    expect(page.get_by_test_id("claim-undo")).to_contain_text(
        "Roll SYSTEM_OVERVIEW back to r1 or earlier"
    )
    assert page.console_errors == []


def test_the_first_approval_of_a_page_does_not_advise_rolling_back_to_r0(
    page, live_server, login, bob, alice, staging
):
    login(bob)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    advice = page.get_by_test_id("undo-advice")
    expect(advice).to_contain_text("publishes SYSTEM_OVERVIEW r1")
    expect(advice).to_contain_text("nothing to roll back to")
    expect(advice).not_to_contain_text("r0")
    approve(staging, alice)
    later = add_candidate(staging.project, WORKER)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{later.pk}/")
    expect(page.get_by_test_id("undo-advice")).to_contain_text("roll the page back to r1")
    assert page.console_errors == []


def test_the_approval_diff_shows_the_new_claim_where_approving_puts_it(
    page, live_server, login, bob, staging
):
    project = staging.project
    approve(staging, bob)
    later = add_candidate(project, WORKER)
    Candidate.objects.filter(pk=later.pk).update(section=staging.section)
    login(bob)
    page.goto(f"{base(live_server, project)}/review/candidates/{later.pk}/")
    rows = page.get_by_test_id("approval-diff").locator("tbody tr")
    texts = rows.all_inner_texts()
    kinds = rows.evaluate_all("rows => rows.map(row => row.className)")
    existing = next(i for i, text in enumerate(texts) if staging.text in text)
    added = next(i for i, k in enumerate(kinds) if k == "add" and f"- {WORKER}" in texts[i])
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Approved: claim")
    markdown = Page.objects.get(project=project, key="SYSTEM_OVERVIEW").current_revision.markdown
    assert markdown.index(staging.text) < markdown.index(WORKER)  # what approving actually did
    assert existing < added  # what the preview promised
    assert page.console_errors == []


def test_a_refused_reject_leaves_a_denied_row_in_the_audit(page, live_server, login, bob, staging):
    login(bob)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    page.get_by_role("button", name="Reject").click()
    expect(page.get_by_test_id("refusal")).to_contain_text("a reason is required")
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.PROPOSED
    assert AuditEvent.objects.filter(action="review.denied", object_id=str(staging.pk)).exists()


def test_a_reviewer_defers_with_a_keyboard_shortcut(page, live_server, login, bob, staging):
    login(bob)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    page.keyboard.press("d")  # lower case does nothing: a stray key never decides
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.PROPOSED
    page.keyboard.press("Shift+D")
    expect(page.get_by_text(f"Deferred candidate #{staging.pk}.")).to_be_visible()
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.DEFERRED
    assert page.console_errors == []
