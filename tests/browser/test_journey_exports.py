"""Browser journey: a reviewer builds a handoff bundle, downloads it and sees it go stale."""

from __future__ import annotations

import io
import zipfile

import pytest
from playwright.sync_api import expect

from llmwiki.models import Export
from llmwiki.wiki import claim_retract
from tests.export_data import build_wiki


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return build_wiki(project, alice)


def test_a_reviewer_builds_downloads_and_sees_a_stale_export(page, live_server, login, wiki, bob):
    login(bob)
    page.goto(f"{live_server.url}/p/tidewater/")
    page.get_by_role("navigation", name="Project").get_by_role("link", name="Exports").click()
    expect(page.get_by_role("heading", name="Exports")).to_be_visible()
    page.get_by_label("Kind").select_option("handoff")
    page.get_by_label("Audience").select_option("public")
    page.get_by_role("button", name="Build").click()
    expect(page.get_by_text("Handoff bundle) built.")).to_be_visible()
    export = Export.objects.get()
    row = page.get_by_test_id(f"export-{export.pk}")
    expect(row.get_by_test_id("verify")).to_have_text("verified")
    expect(row.get_by_test_id("stale")).to_have_count(0)
    with page.expect_download() as download:
        row.get_by_role("link", name="tidewater-handoff-public.zip").click()
    data = download.value.path().read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        overview = archive.read("SYSTEM_OVERVIEW.md").decode()
    assert "PostgreSQL 16" in overview and "jane.doe" not in overview
    row.get_by_role("link", name=f"#{wiki['stack'].pk}").click()
    expect(page).to_have_url(f"{live_server.url}/p/tidewater/claims/{wiki['stack'].pk}/")
    claim_retract(claim=wiki["stack"], actor=bob, reason="moved on")
    page.go_back()
    page.reload()
    expect(page.get_by_test_id(f"export-{export.pk}").get_by_test_id("stale")).to_be_visible()
    assert page.console_errors == []
