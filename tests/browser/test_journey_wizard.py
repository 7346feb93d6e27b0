"""A maintainer walks the wizard's eight steps on the demo corpus in Chromium, a screenshot each."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from dreaming.models import Candidate, Conflict
from llmwiki.models import Claim, Episode, EpisodeRelabel
from reviews.exports import export_verify
from tests.browser.conftest import ARTIFACTS
from tests.conftest import make_user
from wizard.models import WizardRun

CORPUS = Path(__file__).resolve().parents[2] / "llmwiki" / "demo" / "corpus"


def demo_files() -> list[str]:
    """What `load_demo` imports: memory/ (not its dreaming artifacts), notes/, transcripts/."""
    files = [*sorted((CORPUS / "memory").glob("*.md")), *sorted((CORPUS / "notes").glob("*.md"))]
    files += sorted((CORPUS / "transcripts").glob("*.jsonl"))
    return [str(f) for f in files]


def shot(page, number: int, slug: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"wizard-{number}-{slug}.png"), full_page=True)


def step_project(page):
    """Step 1. A new project, reviewed memory."""
    expect(page.get_by_role("heading", name="Step 1: Project and authority")).to_be_visible()
    page.get_by_label("New project name").fill("Demo")
    page.get_by_label("New project slug").fill("demo")
    page.get_by_label("Reviewed memory").check()
    shot(page, 1, "project")
    page.get_by_role("button", name="Save and continue").click()


def step_import_corpus(page, admin):
    """Step 2. The demo corpus, one upload, per-file progress, one result table."""
    expect(page.get_by_role("heading", name="Step 2: Import raw sources")).to_be_visible()
    files = demo_files()
    page.locator("#id_files").set_input_files(files)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_test_id("upload-summary")).to_be_visible(timeout=60_000)
    expect(page.locator("#upload-progress progress")).to_have_count(len(files))
    expect(page.locator("#upload-results tbody tr")).to_have_count(len(files))
    shot(page, 2, "import")
    run = WizardRun.objects.get(user=admin)
    assert Episode.objects.filter(wizard_run_id=run.pk).count() > 50
    page.get_by_test_id("next-step").click()


def step_classify(page):
    """Step 3. Classify: one episode relabelled on its own row."""
    expect(page.get_by_role("heading", name="Step 3: Classify memory type")).to_be_visible()
    row = page.get_by_test_id("group-episodic").locator("tr[data-episode]").first
    episode_id = int(row.get_attribute("data-episode"))
    row.locator("select").select_option("working")
    row.get_by_role("button", name="Relabel").click()
    expect(page.get_by_text("1 episode(s) relabelled as Working.")).to_be_visible()
    group = page.get_by_test_id("group-working")
    expect(group.locator(f'tr[data-episode="{episode_id}"]')).to_contain_text("corrected")
    shot(page, 3, "classify")
    assert EpisodeRelabel.objects.filter(episode_id=episode_id, memory_type="working").exists()
    page.get_by_test_id("next-step").click()


def step_proposals(page):
    """Step 4. Proposals by page, from a sweep of this run's material."""
    expect(page.get_by_role("heading", name="Step 4: Proposals by page")).to_be_visible()
    page.get_by_role("button", name="Generate proposals").click()
    expect(page.get_by_test_id("sweep-status")).to_have_text("Succeeded", timeout=60_000)
    expect(page.get_by_test_id("page-SYSTEM_OVERVIEW")).to_be_visible()
    assert Candidate.objects.filter(project__slug="demo").exists()
    shot(page, 4, "proposals")
    page.get_by_test_id("next-step").click()


def step_preview(page):
    """Step 5. The preview, with its reasons."""
    expect(page.get_by_role("heading", name="Step 5: Dream preview")).to_be_visible()
    page.get_by_role("button", name="Run the dream preview").click()
    expect(page.get_by_test_id("sweep-status")).to_have_text("Succeeded", timeout=60_000)
    expect(page.get_by_test_id("preview-outcome")).to_be_visible()
    expect(page.get_by_test_id("stays-episodic").locator("li").first).to_be_visible()
    shot(page, 5, "preview")
    page.get_by_test_id("next-step").click()


def step_conflicts(page):
    """Step 6. A conflict resolved inline."""
    expect(page.get_by_role("heading", name="Step 6: Conflicts and uncertainties")).to_be_visible()
    cards = page.locator("article[data-testid^='conflict-']")
    before = cards.count()
    assert before > 0
    first = cards.first
    conflict_id = int(first.get_attribute("data-testid").split("-")[1])
    first.get_by_label("Escalate as open question").check()
    first.locator("input[name=owner]").fill("admin")
    first.get_by_role("button", name=f"Resolve #{conflict_id}").click()
    expect(page.get_by_text(f"Conflict #{conflict_id} resolved: escalate.")).to_be_visible()
    assert Conflict.objects.get(pk=conflict_id).status == "escalated"
    shot(page, 6, "conflicts")
    page.get_by_test_id("next-step").click()


def step_commit(page) -> str:
    """Step 7. Commit: every proposal ticked by hand, sensitive ones confirmed; the summary links revisions."""
    expect(page.get_by_role("heading", name="Step 7: Commit reviewed memory")).to_be_visible()
    for box in page.locator("input[name^='sensitive_']").all():
        box.check()
    # Nothing is ticked for the maintainer: each approval is a box they tick.
    boxes = page.locator("input[name=approve]")
    assert boxes.count() > 0 and page.locator("input[name=approve]:checked").count() == 0
    for box in boxes.all():
        box.check()
    page.get_by_role("button", name="Approve ticked").click()
    summary = page.get_by_test_id("commit-summary")
    expect(summary).to_be_visible()
    assert Claim.objects.filter(project__slug="demo").approved().count() > 0
    shot(page, 7, "commit")
    diff = summary.locator("a[href*='/diff/']").first.get_attribute("href")
    page.get_by_test_id("next-step").click()
    return diff


def step_exports(page, tmp_path: Path):
    """Step 8. The four exports: manifests shown, verified, and what is downloaded verifies too."""
    expect(page.get_by_role("heading", name="Step 8: Exports")).to_be_visible()
    page.get_by_label("Scope in this run's episodes as episodic context").check()
    page.get_by_role("button", name="Build the four exports").click()
    expect(page.get_by_text("4 exports built.")).to_be_visible(timeout=60_000)
    for kind in ("system-profile", "receiver-brief", "startup-packet", "handoff"):
        card = page.get_by_test_id(f"export-{kind}")
        expect(card.get_by_test_id("verify")).to_have_text("verified")
        folder = tmp_path / kind
        folder.mkdir()
        for link in card.locator("a.mono").all():
            with page.expect_download() as info:
                link.click()
            info.value.save_as(folder / info.value.suggested_filename)
        assert export_verify(folder).ok, kind
        assert (folder / "MANIFEST.json").is_file() and (folder / "EVIDENCE_LEDGER.json").is_file()
    shot(page, 8, "exports")


def test_a_maintainer_walks_the_wizard_on_the_demo_corpus(
    page, live_server, login, db, settings, tmp_path
):
    settings.EXPORT_DIR = tmp_path / "store"
    admin = make_user("admin", is_superuser=True, is_staff=True)
    login(admin)
    page.get_by_role("link", name="Wizard").click()
    page.get_by_role("button", name="Start a new run").click()
    step_project(page)
    step_import_corpus(page, admin)
    step_classify(page)
    step_proposals(page)
    step_preview(page)
    step_conflicts(page)
    diff = step_commit(page)
    step_exports(page, tmp_path)

    page.goto(f"{live_server.url}{diff}")
    expect(page.locator(".diff-view tr.add").first).to_be_visible()
    assert page.console_errors == []
