"""Detection and the parse entry point: which importer reads which file, and why not."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmwiki.errors import InputError
from llmwiki.importers import (
    REGISTRY,
    TextFile,
    parse,
    plan,
    rejection_reason,
)
from tests.unit.importers.files import all_fixtures, dt, fixture, starter_bundle

# --- detection and the parse entry point -------------------------------------------------------


def test_plan_routes_a_mixed_tree_to_the_right_importers() -> None:
    files = [*all_fixtures(), *starter_bundle("starter")]
    files.append(TextFile("notes/diagram.png", "\x89PNG"))
    routed = dict(plan(files))
    assert routed["vault"] == ["vault/wiki/decision-log.md", "vault/wiki/queue.md"]
    assert routed["daily_log"] == ["memory/2026-04-13.md"]
    assert routed["transcript"] == ["chats/export.json", "chats/session.jsonl"]
    assert routed["note"] == ["notes/architecture.md", "vault/raw/standup-2026-01-02.md"]
    assert routed["bundle"] == [f.path for f in starter_bundle("starter")]
    assert routed["skipped"] == ["memory/dreaming/deep/2026-04-13.md"]
    assert routed["unsupported"] == ["notes/diagram.png"]
    assert plan(files)[0][0] == "bundle"


def test_plan_skips_dreaming_artifacts_and_hidden_files_with_a_reason() -> None:
    paths = [
        "memory/dreaming/light/2026-04-13.md",
        "memory/.dreams/recall.jsonl",
        "DREAMS.md",
        ".git/config",
        ".obsidian/workspace.json",
    ]
    assert plan(paths) == [("skipped", paths)]
    assert rejection_reason("DREAMS.md").startswith("dreaming artifact")
    assert rejection_reason(".obsidian/workspace.json").startswith("hidden")
    assert rejection_reason("a/b.png").startswith("unsupported file type .png")
    assert plan(["export/", "export/notes.md"]) == [
        ("note", ["export/notes.md"]),
        ("skipped", ["export/"]),
    ]


def test_plan_rejects_json_that_is_not_a_transcript() -> None:
    files = [TextFile("notes/a.md", "# A\n\ntext"), TextFile("app/package.json", '{"name": "x"}')]
    with pytest.raises(InputError) as caught:
        plan(files)
    assert caught.value.name == "app/package.json"
    assert caught.value.reason.startswith("not a transcript")
    # Bare paths cannot be sniffed: the transcript importer reports bad content later.
    assert plan(["app/package.json"]) == [("transcript", ["app/package.json"])]


def test_parse_accepts_any_markdown_importer_for_any_markdown_file() -> None:
    note = fixture("notes/architecture.md")
    for name in (spec.name for spec in REGISTRY if ".md" in spec.suffixes):
        drafts = parse(name, [note])
        assert drafts, name
        assert all(d.memory_type_reason for d in drafts)
    as_log = parse("daily-log", [note])
    assert as_log[0].occurred_at == dt("2026-03-01T00:00:00")
    with pytest.raises(InputError, match="not a transcript: expected JSON objects"):
        parse("transcript", [note])


def test_parse_rejects_an_unknown_importer_listing_the_valid_ones() -> None:
    with pytest.raises(InputError) as caught:
        parse("pdf", [])
    assert caught.value.name == "pdf"
    assert caught.value.reason == (
        "unknown importer; valid importers: " + ", ".join(sorted(spec.name for spec in REGISTRY))
    )
    assert "slack" in caught.value.reason and "claude_code" in caught.value.reason


def test_parse_classifies_every_draft() -> None:
    drafts = parse("transcript", [fixture("chats/session.jsonl")])
    assert [d.memory_type for d in drafts] == [
        "working",
        "procedural-candidate",
        "semantic-candidate",
        "episodic",
        "working",
    ]


_PIECE = st.sampled_from(
    [
        "#", "## ", "### Light Sleep", "- ", "  - ", "1. ", "```", "---", "===", "\n", "\n\n",
        "\r\n", "text", " more words.", ": ", "**Term** — ", "09:14 ", "$ ", "<!-- c -->",
        "\u200b", "\ufeff", "> quote", "| a |", "Decision: ", "{", '"role": "user"', "x" * 200,
    ]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_PIECE, max_size=60), st.sampled_from(["n.md", "2026-04-13.md", "GLOSSARY.md"]))
def test_markdown_importers_never_crash_and_keep_locators_inside_the_file(
    pieces: list[str], name: str
) -> None:
    text = "".join(pieces)
    line_count = text.replace("\r\n", "\n").count("\n") + 1
    for importer in ("note", "daily_log", "vault", "bundle"):
        for draft in parse(importer, [TextFile(name, text)]):
            assert draft.content == draft.content.strip(" \t\n") != ""
            first, last = draft.locator["lines"]
            assert 1 <= first <= last <= line_count
