"""A maintainer creates an API token in the settings, and the API docs render from our files."""

from __future__ import annotations

from urllib.parse import urlparse

from api.services import token_authenticate


def test_a_maintainer_creates_a_token_and_an_agent_uses_it(
    page, live_server, login, project, alice
):
    login(alice)
    page.goto(f"{live_server.url}/p/{project.slug}/settings/")
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("claude-code")
    page.get_by_label("Write events").check()
    page.get_by_role("button", name="Create token").click()
    shown = page.locator("#new-token pre").inner_text().strip()
    token = token_authenticate(shown)
    assert token.scopes == ["read", "write-events"]
    response = page.request.get(
        f"{live_server.url}/api/projects/{project.slug}/pages",
        headers={"Authorization": f"Bearer {shown}"},
    )
    assert response.status == 200
    page.get_by_role("button", name="Revoke").click()
    assert page.get_by_text("revoked", exact=False).first.is_visible()
    again = page.request.get(
        f"{live_server.url}/api/projects/{project.slug}/pages",
        headers={"Authorization": f"Bearer {shown}"},
    )
    assert again.status == 401
    assert shown not in page.content()


def test_the_api_docs_render_without_any_outside_request(page, live_server, db):
    outside: list[str] = []
    page.on(
        "request",
        lambda r: (
            outside.append(r.url)
            if urlparse(r.url).netloc != urlparse(live_server.url).netloc
            else None
        ),
    )
    page.goto(f"{live_server.url}/api/docs")
    page.locator(".opblock-summary-path", has_text="/open-questions").first.wait_for()
    assert page.locator(".opblock").count() >= 16
    assert outside == []
    assert not [e for e in page.console_errors if "Content Security Policy" in e]
