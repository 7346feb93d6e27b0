"""Browser journeys for issue 9, section 1: decisions that used to go quietly wrong."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from dreaming import services as dreaming
from dreaming.models import Candidate, Conflict
from llmwiki.models import AuditEvent, Claim, Episode, Page
from reviews.models import Review
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_journey_review import (
    BAD_REQUEST,
    WORKER,
    add_candidate,
    approve,
    base,
)
from tests.conftest import PASSWORD
from tests.dreaming_data import seed

EDITED = "Staging: PostgreSQL 16 on host db-staging-2."


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed):
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


def test_editing_the_text_leaves_one_button_approve_as_edited_and_a_way_back(
    page, live_server, login, bob, staging
):
    login(bob)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    plain = page.get_by_role("button", name="Approve", exact=True)
    as_edited = page.get_by_role("button", name="Approve as edited")
    revert = page.get_by_role("link", name="Revert edit")
    expect(plain).to_be_visible()
    expect(as_edited).to_be_hidden()
    expect(revert).to_be_hidden()

    text = page.get_by_label("Claim text")
    text.fill(EDITED)
    expect(plain).to_be_hidden()
    expect(as_edited).to_be_visible()
    revert.click()
    expect(text).to_have_value(staging.text)
    expect(plain).to_be_visible()
    expect(as_edited).to_be_hidden()

    text.fill(EDITED)
    page.get_by_role("heading", name="Decide").click()  # out of the text box
    page.keyboard.press("Shift+A")  # the shortcut presses the button that is showing
    expect(page.get_by_role("status")).to_contain_text("Approved: claim")
    claim = Claim.objects.get(candidates=staging)
    assert claim.text == EDITED
    assert Review.objects.get(candidate=staging).action == "approve-edit"
    assert page.console_errors == []


def test_without_javascript_a_plain_approve_of_an_edit_is_refused_and_the_edit_kept(
    browser, live_server, bob, staging
):
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill(bob.username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
        page.get_by_label("Claim text").fill(EDITED)
        page.get_by_role("button", name="Approve", exact=True).click()

        expect(page.get_by_test_id("refusal")).to_have_text(
            "you changed the text: approve it as edited, or revert the edit first"
        )
        expect(page.get_by_label("Claim text")).to_have_value(EDITED)
        expect(page.get_by_role("button", name="Approve", exact=True)).to_be_hidden()
        expect(page.get_by_role("link", name="Revert edit")).to_be_visible()
        assert not Claim.objects.exists()
        assert AuditEvent.objects.filter(action="review.denied", object_id=str(staging.pk))

        page.get_by_role("button", name="Approve as edited").click()
        expect(page.get_by_role("status")).to_contain_text("Approved: claim")
        assert Claim.objects.get(candidates=staging).text == EDITED
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "no_javascript_approve_as_edited.png"), full_page=True)
        context.close()


def test_a_merge_refused_in_the_view_is_audited(page, live_server, login, bob, staging):
    login(bob)
    page.goto(f"{base(live_server, staging.project)}/review/candidates/{staging.pk}/")
    page.get_by_label("Merge into claim #").fill("9999")
    page.get_by_role("button", name="Merge").click()
    expect(page.get_by_test_id("refusal")).to_have_text(
        "choose an approved claim of this project to merge into"
    )
    denied = AuditEvent.objects.get(action="review.denied", object_id=str(staging.pk))
    assert denied.note == "merge: choose an approved claim of this project to merge into"
    staging.refresh_from_db()
    assert staging.status == Candidate.Status.PROPOSED
    assert page.console_errors == [BAD_REQUEST]


def test_two_reviewers_on_one_page_both_approve_and_the_second_is_told_it_was_re_based(
    page, live_server, login, bob, alice, staging
):
    project = staging.project
    worker = add_candidate(project, WORKER)
    login(bob)
    page.goto(f"{base(live_server, project)}/review/candidates/{worker.pk}/")
    section = page.get_by_label("Wiki section on SYSTEM_OVERVIEW")
    section.fill("Deploys")
    approve(staging, alice)  # meanwhile, in another section of the same page

    page.get_by_role("button", name="Approve", exact=True).click()
    status = page.get_by_role("status")
    expect(status).to_contain_text("Approved: claim")
    expect(status).to_contain_text("The page had changed since you opened the candidate")
    expect(status).to_contain_text("added to the current page as r2")
    overview = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    assert overview.current_revision.number == 2
    assert "## Deploys\n" in overview.current_revision.markdown
    assert staging.text in overview.current_revision.markdown
    assert Claim.objects.get(candidates=worker).section == "Deploys"
    page.goto(f"{base(live_server, project)}/wiki/SYSTEM_OVERVIEW/")
    expect(page.get_by_test_id("page-body")).to_contain_text(WORKER)
    assert page.console_errors == []


def test_a_change_in_the_same_section_still_refuses(page, live_server, login, bob, alice, staging):
    project = staging.project
    worker = add_candidate(project, WORKER)
    Candidate.objects.filter(pk=worker.pk).update(section=staging.section)
    login(bob)
    page.goto(f"{base(live_server, project)}/review/candidates/{worker.pk}/")
    approve(staging, alice)
    page.get_by_role("button", name="Approve", exact=True).click()
    expect(page.get_by_test_id("refusal")).to_contain_text("changed in section")
    assert not Claim.objects.filter(candidates=worker).exists()
    page.console_errors.clear()  # the 409 document is the point


def test_accepting_a_conflict_side_shows_where_it_went(page, live_server, login, bob, dreamed):
    conflict = Conflict.objects.get(project=dreamed, kind="reversal")
    side = next(s for s in conflict.sides.all() if "Redis Streams" in s.text)
    login(bob)
    page.goto(f"{base(live_server, dreamed)}/conflicts/")
    card = page.locator(f"#conflict-{conflict.pk}")
    card.locator("summary", has_text="Resolve").click()
    card.get_by_label("Accept new (supersede)").check()
    card.get_by_label("Accept side").select_option(str(side.position))
    card.get_by_role("button", name="Resolve conflict").click()

    conflict.refresh_from_db()
    candidate = conflict.accepted_candidate
    expect(page.get_by_role("status")).to_contain_text(
        f"It waits for review as candidate #{candidate.pk}."
    )
    page.get_by_role("link", name="Show resolved").click()
    outcome = page.locator(f"#conflict-{conflict.pk}").get_by_test_id("outcome")
    expect(outcome).to_contain_text(f"Accepted side {side.position + 1}")
    expect(outcome).to_contain_text(f"queued for review as candidate #{candidate.pk}")
    outcome.get_by_role("link", name=f"candidate #{candidate.pk}").click()
    expect(page.get_by_test_id("candidate-text")).to_have_text(side.text)
    expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    assert candidate.status == Candidate.Status.PROPOSED
    assert page.console_errors == []


NOTE_V1 = b"# Ops\n\n- The staging database runs PostgreSQL 15 on db-staging-2.\n- Deploy window is 14:00 UTC.\n"
NOTE_V2 = b"# Ops\n\n- The staging database runs PostgreSQL 16 on db-staging-2.\n- Deploy window is 14:00 UTC.\n"


def test_re_importing_an_edited_note_marks_the_old_episode_superseded(
    page, live_server, login, alice, project
):
    login(alice)
    for data in (NOTE_V1, NOTE_V2):
        page.goto(f"{live_server.url}/p/{project.slug}/upload/")
        page.set_input_files(
            "#id_files", files=[{"name": "ops.md", "mimeType": "text/markdown", "buffer": data}]
        )
        page.get_by_role("button", name="Import").click()
        expect(page.locator("#upload-results tr", has_text="ops.md")).to_be_visible()
    expect(page.locator("#upload-results")).to_contain_text(
        "imported as a new version (1 earlier episode(s) superseded)"
    )
    old = Episode.objects.get(project=project, content__contains="PostgreSQL 15")
    assert old.status == Episode.Status.SUPERSEDED

    page.goto(f"{live_server.url}/p/{project.slug}/episodes/")
    row = page.locator(f"#episode-{old.pk}")
    expect(row).to_contain_text("superseded")
    expect(row.get_by_test_id("superseded")).to_contain_text(
        "replaced by the newer version of ops.md"
    )
    current = Episode.objects.get(project=project, content__contains="PostgreSQL 16")
    expect(page.locator(f"#episode-{current.pk}").get_by_test_id("superseded")).to_have_count(0)
    assert Episode.objects.filter(project=project, content__contains="Deploy window").count() == 1
    assert page.console_errors == []
