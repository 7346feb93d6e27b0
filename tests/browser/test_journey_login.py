from __future__ import annotations

from playwright.sync_api import expect


def test_a_member_logs_in_opens_the_project_sees_counts_and_logs_out(
    page, live_server, login, carol, project
):
    login(carol)
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
    page.get_by_role("link", name="Tidewater").first.click()
    expect(page.get_by_role("heading", name="Memory layers")).to_be_visible()
    expect(page.get_by_test_id("count-episodes")).to_have_text("0")
    expect(page.get_by_text("You are viewer")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    assert page.console_errors == []


def test_a_wrong_password_is_explained(page, live_server, carol):
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("carol")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")


def test_the_skip_link_reaches_main_content_by_keyboard(page, live_server, login, carol, project):
    login(carol)
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
