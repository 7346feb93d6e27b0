"""Browser journey: a superuser opens a project's dashboard and the admin dashboard; the
server-drawn SVG charts render with real sizes and nothing scrolls sideways at 1280 px."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS
from tests.conftest import PASSWORD
from tests.dashboard_data import busy_project
from tests.dreaming_data import seed


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", "", PASSWORD)


def charts_render(page, at_least: int) -> None:
    charts = page.locator("svg.chart")
    expect(charts.first).to_be_visible()
    assert charts.count() >= at_least
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 200 and box["height"] > 50, i
        marks = charts.nth(i).locator("circle, rect")
        assert marks.count() > 0
        mark = marks.first.bounding_box()
        assert mark and mark["width"] > 0 and mark["height"] > 0
    wide, seen = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert wide <= seen, f"the page scrolls sideways: {wide} > {seen}"


def test_a_superuser_reads_both_dashboards(page, live_server, login, project, other_project, root):
    seed(project)
    busy_project(project)
    busy_project(other_project)
    login(root)
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_test_id("dashboard-link").click()
    expect(page.get_by_role("heading", name="Dashboard", exact=True)).to_be_visible()
    charts_render(page, at_least=10)
    expect(page.get_by_test_id("card-questions")).to_contain_text("Nothing to show")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard_project.png"), full_page=True)

    page.get_by_label("Range").select_option("7")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(f"{live_server.url}/p/{project.slug}/dashboard/?days=7")
    card = page.get_by_test_id("card-rollbacks")
    card.get_by_text("Numbers").click()
    expect(card.locator("tbody tr")).to_have_count(7)

    page.get_by_role("navigation", name="Account").get_by_role("link", name="Dashboards").click()
    expect(page.get_by_role("heading", name="All projects", exact=True)).to_be_visible()
    expect(page.get_by_test_id(f"row-{project.slug}")).to_be_visible()
    spark = page.get_by_test_id(f"row-{project.slug}").locator("svg.spark")
    box = spark.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 10
    table = page.get_by_test_id("project-rows")
    assert table.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
    charts_render(page, at_least=10)
    page.screenshot(path=str(ARTIFACTS / "dashboard_admin.png"), full_page=True)
    assert page.console_errors == []
