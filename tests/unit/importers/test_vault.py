"""llm-wiki-mcp vaults: wiki pages as sections."""

from __future__ import annotations

from llmwiki.importers import (
    is_vault,
    parse_vault,
)
from tests.unit.importers.files import dt, fixture

# --- vaults -----------------------------------------------------------------------------------


def test_it_turns_vault_pages_into_sections_with_front_matter() -> None:
    drafts = parse_vault([fixture("vault/wiki/queue.md")])
    assert [d.kind for d in drafts] == ["page_section", "page_section"]
    top, retries = drafts
    assert top.content == "# Queue\n\nThe queue uses Redis streams in production."
    assert top.locator == {
        "path": "vault/wiki/queue.md",
        "section": "Queue",
        "sources": ["raw/standup-2026-01-02.md"],
        "lines": [9, 11],
    }
    assert retries.locator["section"] == "Queue > Retries"
    assert retries.locator["lines"] == [13, 18]
    assert "- then the task is parked" in retries.content
    assert top.tags == ("infra", "queue")
    assert top.occurred_at == dt("2026-02-03T10:00:00")


def test_it_marks_decision_log_pages_as_decisions() -> None:
    drafts = parse_vault([fixture("vault/wiki/decision-log.md")])
    assert [d.kind for d in drafts] == ["decision", "decision"]
    assert drafts[0].content.startswith("## 2026-01-05 Use SQLite by default\nDecision:")
    assert drafts[1].locator["section"] == "Decision Log > 2026-02-01 Adopt nh3"


def test_it_recognises_a_vault_tree() -> None:
    assert is_vault(["vault/wiki/queue.md", "vault/raw/x.md"])
    assert is_vault(["wiki/index.md"])
    assert not is_vault(["docs/notes/wiki.md", "a/b/c/wiki/x.md"])
