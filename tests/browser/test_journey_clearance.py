"""Browser journeys for who may read what: a viewer, a reviewer and a maintainer open the
same pages; restricted, PII-flagged and quarantined text is withheld with a note."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from llmwiki.models import Role
from tests.browser.conftest import ARTIFACTS
from tests.test_views_clearance import EMAIL, INJECTION_WORDS, world  # noqa: F401 - fixture

WITHHELD = "[data-testid=withheld]"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"clearance_{name}.png"), full_page=True)


def base(live_server, project) -> str:
    return f"{live_server.url}/p/{project.slug}"


def test_a_viewer_sees_pii_and_quarantined_text_withheld(page, live_server, login, carol, world):  # noqa: F811
    p, pii = world["project"], world["pii"]
    login(carol)
    page.goto(f"{base(live_server, p)}/episodes/")
    pii_rows = page.locator(WITHHELD).filter(has_text="needs the reviewer role")
    expect(pii_rows).to_have_count(3)
    held = page.locator(WITHHELD).filter(has_text="maintainers only")
    expect(held.first).to_be_visible()
    expect(page.locator("main")).not_to_contain_text(EMAIL)
    expect(page.locator("main")).not_to_contain_text(INJECTION_WORDS)
    expect(page.locator("main")).to_contain_text("db-staging-2")  # ordinary text is shown
    shot(page, "viewer_episodes")

    # The episode page applies the same rule, raw source lines included.
    episode_id = pii.evidence.first().episode_id
    page.goto(f"{base(live_server, p)}/episodes/{episode_id}/")
    expect(page.locator(WITHHELD)).to_have_count(2)  # its text, and the candidate citing it
    expect(page.locator(WITHHELD).first).to_contain_text("needs the reviewer role")
    expect(page.get_by_test_id("source-lines")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text(EMAIL)
    shot(page, "viewer_episode_page")

    page.goto(f"{base(live_server, p)}/dreaming/candidates/{pii.pk}/")
    expect(page.locator(WITHHELD)).to_have_count(1 + pii.evidence.count())
    expect(page.locator("main")).not_to_contain_text("dana.wells")
    shot(page, "viewer_explain")

    page.goto(f"{base(live_server, p)}/conflicts/")
    expect(page.locator(WITHHELD).first).to_be_visible()
    expect(page.locator("main")).not_to_contain_text(EMAIL)
    shot(page, "viewer_conflicts")

    # The review queue is for reviewers: no link to it, and a 403 page if typed in.
    expect(
        page.get_by_role("navigation", name="Project").get_by_role("link", name="Review")
    ).to_have_count(0)
    response = page.goto(f"{base(live_server, p)}/review/")
    assert response.status == 403
    assert page.console_errors == [
        "Failed to load resource: the server responded with a status of 403 (Forbidden)"
    ]


def test_a_reviewer_reads_pii_but_not_quarantined_text(page, live_server, login, bob, world):  # noqa: F811
    p = world["project"]
    login(bob)
    page.goto(f"{base(live_server, p)}/episodes/?q=dana.wells")
    expect(page.locator("main")).to_contain_text(EMAIL)
    expect(page.locator(WITHHELD)).to_have_count(0)
    shot(page, "reviewer_episodes")
    page.goto(f"{base(live_server, p)}/episodes/?status=quarantined")
    expect(page.locator(WITHHELD).first).to_contain_text("maintainers only")
    expect(page.locator("main")).not_to_contain_text(INJECTION_WORDS)


def test_a_maintainer_policy_withholds_pii_from_a_reviewer_in_the_queue(
    page,
    live_server,
    login,
    bob,
    world,  # noqa: F811
):
    p = world["project"]
    p.restricted_clearance = Role.MAINTAINER
    p.save(update_fields=["restricted_clearance"])
    login(bob)
    page.goto(f"{base(live_server, p)}/review/")
    row = page.locator("tr.queue-row").filter(has=page.locator(WITHHELD))
    expect(row).to_have_count(1)
    expect(row.locator(WITHHELD)).to_contain_text("needs the maintainer role")
    expect(page.locator("main")).not_to_contain_text(EMAIL)
    shot(page, "reviewer_queue_maintainer_policy")
    row.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/review/candidates/\d+/$"))
    expect(page.get_by_test_id("candidate-text").locator(WITHHELD)).to_be_visible()
    expect(page.locator("#review-form")).to_have_count(0)
    expect(page.locator("main")).not_to_contain_text("dana.wells")
    shot(page, "reviewer_panel_maintainer_policy")


def test_a_maintainer_reads_everything_and_sets_the_policy(page, live_server, login, alice, world):  # noqa: F811
    p = world["project"]
    login(alice)
    page.goto(f"{base(live_server, p)}/episodes/")
    expect(page.locator("main")).to_contain_text(EMAIL)
    expect(page.locator("main")).to_contain_text(INJECTION_WORDS)
    expect(page.locator(WITHHELD)).to_have_count(0)
    shot(page, "maintainer_episodes")
    page.goto(f"{base(live_server, p)}/settings/")
    page.get_by_label("Restricted clearance").select_option("maintainer")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Settings saved.")
    p.refresh_from_db()
    assert p.restricted_clearance == Role.MAINTAINER
