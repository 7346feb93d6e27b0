from __future__ import annotations

from playwright.sync_api import expect

from dreaming.models import Candidate, DreamRun
from tests.dreaming_data import seed


def test_a_reviewer_previews_then_dreams_and_explains_a_candidate(
    page, live_server, login, bob, project
):
    seed(project)
    login(bob)
    page.goto(f"{live_server.url}/p/{project.slug}/dreaming/")
    expect(page.get_by_test_id("count-short-term")).not_to_have_text("0")
    page.get_by_role("button", name="Preview").click()
    expect(page.get_by_test_id("run-status")).to_have_text("Succeeded")
    expect(page.get_by_role("heading", name="Preview: what a real run would do")).to_be_visible()
    assert not Candidate.objects.exists()

    page.get_by_role("link", name="← Dreaming").click()
    page.get_by_role("button", name="Dream now").click()
    expect(page.get_by_test_id("run-status")).to_have_text("Succeeded")
    expect(page.get_by_role("heading", name="Dream diary")).to_be_visible()
    assert DreamRun.objects.filter(trigger="manual", status="succeeded").count() == 1

    page.get_by_role("link", name="db-staging-2").first.click()
    expect(page.get_by_role("heading", name="Evidence")).to_be_visible()
    expect(page.locator("li[id^='ev-']")).to_have_count(5)
    assert page.console_errors == []


def test_the_run_page_polls_until_the_run_finishes(page, live_server, login, bob, project):
    from dreaming import services

    seed(project)
    run = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    login(bob)
    page.goto(f"{live_server.url}/p/{project.slug}/dreaming/runs/{run.pk}/")
    expect(page.get_by_test_id("run-status")).to_have_text("Queued")
    services.dream_execute(run_id=run.pk)
    # No reload: the progress partial polls every 2 s and swaps itself.
    expect(page.get_by_test_id("run-status")).to_have_text("Succeeded", timeout=8000)
