"""Importers: raw notes, daily logs, transcripts, vaults and bundles → classified drafts."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmwiki.errors import InputError
from llmwiki.importers import (
    MEMORY_TYPES,
    REGISTRY,
    RULES,
    EpisodeDraft,
    TextFile,
    classify,
    is_bundle,
    is_daily_log,
    is_dreaming_artifact,
    is_vault,
    looks_like_transcript,
    normalise,
    parse,
    parse_bundle,
    parse_daily_log,
    parse_note,
    parse_transcript,
    parse_vault,
    plan,
    read_manifest,
    rejection_reason,
)
from llmwiki.importers.base import MAX_EPISODE_CHARS, parse_timestamp
from llmwiki.vocabulary import IMPORTED_KINDS

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "importers"


def fixture(relpath: str) -> TextFile:
    # newline="" keeps the bytes' line endings, as the ingest service must.
    with open(FIXTURES / relpath, encoding="utf-8", newline="") as handle:
        return TextFile(relpath, handle.read())


def all_fixtures() -> list[TextFile]:
    return [
        fixture(p.relative_to(FIXTURES).as_posix())
        for p in sorted(FIXTURES.rglob("*"))
        if p.is_file()
    ]


def by_content(drafts: list[EpisodeDraft], needle: str) -> EpisodeDraft:
    matches = [d for d in drafts if needle in d.content]
    assert len(matches) == 1, f"{needle!r} in {len(matches)} drafts"
    return matches[0]


def dt(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- shared helpers --------------------------------------------------------------------------


def test_normalise_strips_trailing_spaces_and_collapses_long_blank_runs() -> None:
    assert normalise("  a  \t\r\nb\n\n\n\n\n\nc\n\n") == "a\nb\n\n\nc"


def test_normalise_composes_to_nfc_but_keeps_invisible_and_bidi_characters() -> None:
    text = "cafe\u0301 \u200b\u202eevil\u202c\ufeff"
    assert normalise(text) == "caf\u00e9 \u200b\u202eevil\u202c\ufeff"


def test_episode_drafts_refuse_unknown_kinds_actors_and_naive_times() -> None:
    with pytest.raises(ValueError, match="kind"):
        EpisodeDraft("x", "gossip", "system", {})
    with pytest.raises(ValueError, match="actor"):
        EpisodeDraft("x", "note", "bob", {})
    with pytest.raises(ValueError, match="timezone"):
        EpisodeDraft("x", "note", "system", {}, occurred_at=datetime(2026, 1, 1))
    assert set(IMPORTED_KINDS) >= {"note", "log_entry", "chat_turn", "decision", "tool_call"}
    assert "handoff-only" in MEMORY_TYPES


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-04-13T09:00:00Z", "2026-04-13T09:00:00"),
        ("2026-04-13T11:00:00+02:00", "2026-04-13T09:00:00"),
        ("2026-04-13 09:00", "2026-04-13T09:00:00"),
        ("2026-04-13", "2026-04-13T00:00:00"),
        (1776070800, "2026-04-13T09:00:00"),
        (1776070800000, "2026-04-13T09:00:00"),
        ("1776070800.5", "2026-04-13T09:00:00.500000"),
    ],
)
def test_parse_timestamp_reads_iso_and_epoch_seconds_or_milliseconds(
    value: object, expected: str
) -> None:
    assert parse_timestamp(value) == dt(expected)


def test_parse_timestamp_returns_none_when_absent_and_refuses_nonsense() -> None:
    assert parse_timestamp(None) is None
    assert parse_timestamp("") is None
    with pytest.raises(ValueError, match="not an ISO 8601 timestamp"):
        parse_timestamp("last tuesday")


# --- notes ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def architecture() -> list[EpisodeDraft]:
    return parse_note(fixture("notes/architecture.md"))


def test_it_reads_front_matter_and_never_emits_it(architecture: list[EpisodeDraft]) -> None:
    assert all(d.tags == ("architecture", "queue") for d in architecture)
    assert all(d.occurred_at == dt("2026-03-01T00:00:00") for d in architecture)
    assert all(d.actor == "user:ana" for d in architecture)
    assert not any("title:" in d.content or "tags:" in d.content for d in architecture)


def test_it_records_the_heading_path_and_line_range(architecture: list[EpisodeDraft]) -> None:
    first = architecture[0]
    assert first.locator == {
        "path": "notes/architecture.md",
        "section": "Architecture",
        "lines": [9, 10],
    }
    assert first.content.startswith("The web app runs on Django 5.2")
    lease = by_content(architecture, "Workers take a lease")
    assert lease.locator["section"] == "Architecture > Queue"
    assert lease.locator["lines"] == [15, 16]


def test_it_splits_a_section_into_bullet_items_and_paragraphs(
    architecture: list[EpisodeDraft],
) -> None:
    queue = [d for d in architecture if d.locator["section"] == "Architecture > Queue"]
    assert [d.content.splitlines()[0] for d in queue] == [
        "- The queue uses django-q2 with the ORM broker.",
        "- Workers take a lease before a sweep.",
        "- Decision: one sweep per project at a time.",
        "Install the worker like this:",
    ]
    # A nested bullet stays with its parent item.
    assert "  - The lease expires after ten minutes." in queue[1].content


def test_it_keeps_a_code_fence_whole_and_ignores_hash_lines_inside_it(
    architecture: list[EpisodeDraft],
) -> None:
    install = by_content(architecture, "qcluster")
    assert install.locator["lines"] == [19, 26]
    assert "# this is a comment, not a heading" in install.content
    assert "# second comment after a blank line" in install.content
    assert install.content.endswith("```")
    sections = {d.locator["section"] for d in architecture}
    assert not any("comment" in s for s in sections)


def test_it_skips_empty_headings_punctuation_and_comment_only_blocks(
    architecture: list[EpisodeDraft],
) -> None:
    orphan = by_content(architecture, "empty heading")
    assert orphan.locator["section"] == "Architecture"
    assert not any(d.content.strip("-# ") == "" for d in architecture)
    assert not any("openclaw-memory-promotion" in d.content for d in architecture)


def test_it_keeps_numbered_steps_with_their_lead_in(architecture: list[EpisodeDraft]) -> None:
    steps = by_content(architecture, "make deploy")
    assert steps.content == "To deploy:\n1. Run `make check`\n2. Run `make deploy`"
    assert steps.locator["section"] == "Architecture > Deploy steps"


def test_it_marks_decision_sections_and_decision_bullets_as_decisions(
    architecture: list[EpisodeDraft],
) -> None:
    decisions = [d.content for d in architecture if d.kind == "decision"]
    assert decisions == [
        "- Decision: one sweep per project at a time.",
        "- We keep Whoosh as the embedded search index.",
        "- Exports are deterministic byte for byte.",
    ]
    assert {d.kind for d in architecture} == {"note", "decision"}


def test_it_handles_crlf_line_endings() -> None:
    text = "# Title\r\n\r\nFirst line.  \r\nSecond line.\r\n\r\n- item one\r\n- item two\r\n"
    drafts = parse_note(TextFile("windows.txt", text))
    assert [(d.content, d.locator["lines"]) for d in drafts] == [
        ("First line.\nSecond line.", [3, 4]),
        ("- item one", [6, 6]),
        ("- item two", [7, 7]),
    ]


def test_it_reads_setext_headings() -> None:
    text = "Overview\n========\n\nBody text here.\n\nDetails\n-------\n\nMore text.\n"
    drafts = parse_note(TextFile("setext.md", text))
    assert [d.locator["section"] for d in drafts] == ["Overview", "Overview > Details"]


def _long_paragraph(sentences: int) -> str:
    return " ".join(
        f"Sentence number {n} explains one more detail of the lease protocol in plain words."
        for n in range(sentences)
    )


def test_it_splits_a_very_long_paragraph_at_sentence_boundaries() -> None:
    paragraph = _long_paragraph(60)  # about 5,000 characters on one line
    text = f"# Notes\n\nShort intro.\n\n{paragraph}\n"
    drafts = parse_note(TextFile("long.md", text))
    pieces = drafts[1:]
    assert len(pieces) >= 4
    assert all(len(d.content) <= MAX_EPISODE_CHARS for d in pieces)
    assert all(d.content.endswith(".") and d.content[0] == "S" for d in pieces)
    assert " ".join(d.content for d in pieces) == paragraph
    assert all(d.locator["lines"] == [5, 5] for d in pieces)


def test_it_tracks_lines_when_splitting_a_hard_wrapped_paragraph() -> None:
    lines = [
        f"Line {n} of a long hard-wrapped paragraph about retries and leases." for n in range(40)
    ]
    drafts = parse_note(TextFile("wrapped.md", "\n".join(lines) + "\n"))
    assert len(drafts) > 1
    starts = [d.locator["lines"][0] for d in drafts]
    assert starts[0] == 1 and starts == sorted(starts)
    assert drafts[-1].locator["lines"][1] == 40
    for draft in drafts:
        first, last = draft.locator["lines"]
        assert draft.content.splitlines()[0] == lines[first - 1]
        assert draft.content.splitlines()[-1] == lines[last - 1]


def test_it_never_splits_inside_a_long_fence() -> None:
    code = "\n".join(f"print('line {n}')  # {'x' * 40}" for n in range(60))
    text = f"# Script\n\nRun this:\n```python\n{code}\n```\n"
    drafts = parse_note(TextFile("fence.md", text))
    assert len(drafts) == 1
    assert drafts[0].content.count("print(") == 60
    assert drafts[0].locator["lines"] == [3, 65]


def test_a_note_with_only_front_matter_yields_nothing() -> None:
    assert parse_note(TextFile("empty.md", "---\ntitle: x\n---\n\n   \n")) == []


def test_loose_lists_keep_steps_together_and_continuations_with_their_item() -> None:
    text = (
        "1. Stop the worker\n\n2. Copy the dump\n\n"
        "- first item\n\n  continued after a blank line\n\n  ```\n  code\n  ```\n- second item\n"
    )
    drafts = parse_note(TextFile("loose.md", text))
    assert [(d.content.splitlines()[0], d.locator["lines"]) for d in drafts] == [
        ("1. Stop the worker", [1, 3]),
        ("- first item", [5, 11]),
        ("- second item", [12, 12]),
    ]


def test_an_unclosed_fence_runs_to_the_end_of_the_file() -> None:
    text = "Intro:\n```\n# not a heading\n\nstill code\n"
    drafts = parse_note(TextFile("open.md", text))
    assert len(drafts) == 1
    assert drafts[0].locator == {"path": "open.md", "section": "", "lines": [1, 5]}


def test_a_byte_order_mark_does_not_hide_front_matter() -> None:
    drafts = parse_note(TextFile("bom.md", "\ufeff---\ntags: a, b\n---\nBody text.\n"))
    assert [(d.content, d.tags, d.locator["lines"]) for d in drafts] == [
        ("Body text.", ("a", "b"), [4, 4])
    ]


def test_a_front_matter_title_names_text_before_any_heading() -> None:
    drafts = parse_note(
        TextFile("t.md", "---\ntitle: Runbook draft\ndate: nonsense\n---\nHello.\n")
    )
    assert drafts[0].locator["section"] == "Runbook draft"
    assert drafts[0].occurred_at is None


# --- daily logs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def daily() -> list[EpisodeDraft]:
    return parse_daily_log(fixture("memory/2026-04-13.md"))


def test_it_skips_light_sleep_and_rem_sleep_blocks(daily: list[EpisodeDraft]) -> None:
    text = "\n".join(d.content for d in daily)
    assert "Tuesdays" not in text
    assert "recalls=0" not in text
    assert "queue reliability" not in text
    # The skip ends at the next heading of the same level.
    assert "Closed the incident ticket." in text


def test_it_takes_the_day_from_the_file_name_and_times_from_entries(
    daily: list[EpisodeDraft],
) -> None:
    assert by_content(daily, "deployed v2").occurred_at == dt("2026-04-13T09:14:00")
    assert by_content(daily, "Workers stalled").occurred_at == dt("2026-04-13T14:02:00")
    assert by_content(daily, "14:30 handoff").occurred_at == dt("2026-04-13T14:30:00")
    assert by_content(daily, "Closed the incident").occurred_at == dt("2026-04-13T16:45:00")


def test_it_keeps_order_with_a_second_per_untimed_entry(daily: list[EpisodeDraft]) -> None:
    assert by_content(daily, "checked the dashboards").occurred_at == dt("2026-04-13T09:14:01")
    assert by_content(daily, "smoke-test").occurred_at == dt("2026-04-13T09:14:02")
    times = [d.occurred_at for d in daily]
    assert times == sorted(times)
    untimed = parse_daily_log(TextFile("memory/2026-04-14.md", "- one\n- two\n- three\n"))
    assert [d.occurred_at for d in untimed] == [
        dt("2026-04-14T00:00:00"),
        dt("2026-04-14T00:00:01"),
        dt("2026-04-14T00:00:02"),
    ]


def test_it_marks_shell_lines_and_ran_output_as_tool_calls(daily: list[EpisodeDraft]) -> None:
    assert by_content(daily, "$ make smoke-test").kind == "tool_call"
    recovery = by_content(daily, "recovered 12 leases")
    assert recovery.kind == "tool_call"
    assert recovery.locator["lines"] == [8, 12]
    assert by_content(daily, "deployed v2").kind == "log_entry"


def test_it_reads_the_agent_from_a_heading_or_front_matter(daily: list[EpisodeDraft]) -> None:
    assert {d.actor for d in daily} == {"agent:scout"}
    assert all("Agent" not in d.locator["section"] for d in daily)
    fm = parse_daily_log(TextFile("2026-04-14.md", "---\nagent: ops-bot\n---\n- restarted q\n"))
    assert fm[0].actor == "agent:ops-bot"
    plain = parse_daily_log(TextFile("2026-04-14.md", "- restarted q\n"))
    assert plain[0].actor == "agent:main"


def test_a_nested_sleep_block_is_skipped_until_a_heading_of_its_level() -> None:
    text = (
        "## 10:00 Morning\n- real entry\n### REM Sleep\n- dream text\n#### Themes\n- more\n"
        "### Afterwards\n- kept entry\n"
    )
    drafts = parse_daily_log(TextFile("2026-04-13.md", text))
    assert [d.content for d in drafts] == ["- real entry", "- kept entry"]


def test_it_uses_an_hhmm_file_name_suffix_as_the_base_time() -> None:
    drafts = parse_daily_log(TextFile("memory/2026-04-13-1430.md", "- session reset\n"))
    assert drafts[0].occurred_at == dt("2026-04-13T14:30:00")


def test_it_understands_am_pm_times_and_bare_time_headings() -> None:
    text = "- 3:45pm call with ops\n## 16:00\n## 17:10 shipped the fix\n"
    drafts = parse_daily_log(TextFile("2026-04-13.md", text))
    assert [(d.content, d.occurred_at) for d in drafts] == [
        ("- 3:45pm call with ops", dt("2026-04-13T15:45:00")),
        ("17:10 shipped the fix", dt("2026-04-13T17:10:00")),
    ]


def test_it_recognises_daily_log_names_and_dreaming_artifacts() -> None:
    assert is_daily_log("memory/2026-04-13.md")
    assert is_daily_log("memory/2026-04-13-clash-fix.md")
    assert not is_daily_log("memory/2026-13-45.md")
    assert not is_daily_log("memory/2026-04-13.txt")
    assert not is_daily_log("memory/dreaming/deep/2026-04-13.md")
    assert is_dreaming_artifact("memory/dreaming/rem/2026-04-13.md")
    assert is_dreaming_artifact("workspace/memory/.dreams/recall.json")
    assert is_dreaming_artifact("DREAMS.md")
    assert is_dreaming_artifact("dreams.md")
    assert not is_dreaming_artifact("notes/dreaming-ideas.md")


# --- transcripts ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session() -> list[EpisodeDraft]:
    return parse_transcript(fixture("chats/session.jsonl"))


def test_it_turns_each_jsonl_turn_into_one_episode(session: list[EpisodeDraft]) -> None:
    assert [d.locator["turn_id"] for d in session] == ["t1", "t2", "turn-3", "turn-4", "turn-5"]
    assert [d.locator["line"] for d in session] == [1, 2, 4, 5, 6]
    assert all(d.locator["path"] == "chats/session.jsonl" for d in session)


def test_it_maps_roles_and_speakers_to_actors_and_kinds(session: list[EpisodeDraft]) -> None:
    assert [(d.actor, d.kind) for d in session] == [
        ("user:unknown", "chat_turn"),
        ("agent:claude", "chat_turn"),
        ("user:Caroline", "chat_turn"),
        ("agent:assistant", "tool_call"),
        ("system", "chat_turn"),
    ]
    assert session[3].tags == ("tool:shell",)


def test_it_reads_content_text_and_text_parts(session: list[EpisodeDraft]) -> None:
    assert session[1].content == "To roll back, run `make rollback`."
    assert session[2].content == "We decided to keep the nightly sweep at 03:00."


def test_it_reads_iso_epoch_seconds_and_epoch_milliseconds(session: list[EpisodeDraft]) -> None:
    assert [d.occurred_at for d in session] == [
        dt("2026-04-13T09:00:00"),
        dt("2026-04-13T09:01:00"),
        dt("2026-04-13T09:02:00"),
        None,
        None,
    ]


def test_it_parses_a_json_list_with_line_numbers_and_numeric_ids() -> None:
    drafts = parse_transcript(fixture("chats/export.json"))
    assert [(d.locator["turn_id"], d.locator["line"]) for d in drafts] == [
        ("101", 2),
        ("turn-2", 7),
    ]
    assert drafts[0].actor == "user:Melanie"
    assert drafts[1].occurred_at == dt("2026-04-13T08:15:00")


def test_it_parses_a_messages_object_and_uses_its_assistant_name() -> None:
    text = json.dumps(
        {
            "title": "release chat",
            "messages": [
                {"role": "user", "content": "ship it?"},
                {"role": "assistant", "content": "Shipping now."},
            ],
            "assistant": "relay",
        },
        indent=2,
    )
    drafts = parse_transcript(TextFile("chat.json", text))
    assert [d.actor for d in drafts] == ["user:unknown", "agent:relay"]
    assert [d.locator["line"] for d in drafts] == [4, 8]
    turns = json.dumps({"turns": [{"speaker": "Ana", "text": "hello there"}]})
    assert parse_transcript(TextFile("t.json", turns))[0].actor == "user:Ana"


def test_it_names_the_file_and_line_of_a_malformed_json_line() -> None:
    text = (
        '{"role": "user", "content": "one"}\n'
        '{"role": "assistant", "content": "two"}\n'
        '{"role": "user", "content": "three"\n'
    )
    with pytest.raises(InputError) as caught:
        parse_transcript(TextFile("chats/broken.jsonl", text))
    assert caught.value.name == "chats/broken.jsonl"
    assert caught.value.reason.startswith("line 3: malformed JSON")


def test_it_names_the_line_of_malformed_json_in_a_document() -> None:
    text = '[\n  {"role": "user", "content": "a"},\n  {"role": "user" "content": "b"}\n]'
    with pytest.raises(InputError, match=r"broken\.json: line 3: malformed JSON"):
        parse_transcript(TextFile("broken.json", text))


def test_it_names_the_file_and_turn_missing_content() -> None:
    text = '{"role": "user", "content": "hi"}\n{"id": "q7", "role": "user"}\n'
    with pytest.raises(InputError) as caught:
        parse_transcript(TextFile("chats/gap.jsonl", text))
    assert caught.value.name == "chats/gap.jsonl"
    assert "turn 2 (id 'q7', line 2): missing content" in caught.value.reason


def test_it_refuses_an_unreadable_timestamp_naming_the_turn() -> None:
    text = '{"role": "user", "content": "hi", "timestamp": "yesterday-ish"}\n'
    with pytest.raises(InputError, match=r"turn 1 .*not an ISO 8601 timestamp"):
        parse_transcript(TextFile("t.jsonl", text))


def test_it_turns_tool_only_turns_into_tool_calls() -> None:
    lines = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"function": {"name": "grep", "arguments": "{\"q\": \"lease\"}"}}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "content": "3 matches"}]},
    ]  # fmt: skip
    text = "\n".join(json.dumps(line) for line in lines)
    drafts = parse_transcript(TextFile("tools.jsonl", text))
    assert [(d.kind, d.actor) for d in drafts] == [
        ("tool_call", "agent:assistant"),
        ("tool_call", "agent:assistant"),
    ]
    assert "grep" in drafts[0].content and "3 matches" in drafts[1].content


def test_it_reads_conversation_per_line_jsonl() -> None:
    line = {
        "messages": [
            {"role": "user", "content": "a question?"},
            {"role": "assistant", "content": "An answer."},
        ]
    }
    text = json.dumps(line) + "\n" + json.dumps(line) + "\n"
    drafts = parse_transcript(TextFile("ft.jsonl", text))
    assert [(d.locator["turn_id"], d.locator["line"]) for d in drafts] == [
        ("turn-1", 1), ("turn-2", 1), ("turn-3", 2), ("turn-4", 2)
    ]  # fmt: skip


def test_it_skips_empty_turns_and_refuses_non_object_turns() -> None:
    text = '{"role": "user", "content": "   "}\n{"role": "user", "content": []}\n'
    assert parse_transcript(TextFile("e.jsonl", text)) == []
    with pytest.raises(InputError, match="line 2: expected a JSON object, got list"):
        parse_transcript(TextFile("e.jsonl", '{"role": "user", "content": "a"}\n[1]\n'))
    with pytest.raises(InputError, match="content must be a string or a list"):
        parse_transcript(TextFile("e.jsonl", '{"role": "user", "content": 42}\n'))


def test_it_sniffs_transcripts_from_the_first_line_or_element() -> None:
    assert looks_like_transcript("a.jsonl", fixture("chats/session.jsonl").text)
    assert looks_like_transcript("a.json", fixture("chats/export.json").text)
    assert looks_like_transcript("a.json", json.dumps({"messages": [{"role": "u", "text": "x"}]}))
    assert not looks_like_transcript("package.json", '{"name": "app", "version": "1.0.0"}')
    assert not looks_like_transcript("data.json", "[1, 2, 3]")
    assert not looks_like_transcript("x.json", "{not json")


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


# --- bundles ----------------------------------------------------------------------------------

SYSTEM_OVERVIEW = """# System overview

## Components

The web app runs on Django; dreaming runs in django-q2 workers.

## Storage

Blobs are content-addressed by sha256 under the data directory.
"""
GLOSSARY = """# Glossary

- **Episode** — an append-only normalised event.
- **Claim**: an approved knowledge unit with provenance.
- Watermark: the newest episode a sweep has read,
  kept per project.

## Candidate

A proposed claim waiting for review.
"""
RUNBOOKS = """# Runbooks

## Restore a backup

1. Stop the worker
2. Copy the backup into place
3. Start the worker
"""
DECISION_LOG = """# Decision log

- 2026-01-01: Whoosh is the embedded search index.
- 2026-01-02: PostgreSQL full-text search when running on PostgreSQL.
"""


def _bundle(root: str = "starter", *, tamper: str | None = None) -> list[TextFile]:
    pages = {
        "SYSTEM_OVERVIEW.md": SYSTEM_OVERVIEW,
        "GLOSSARY.md": GLOSSARY,
        "RUNBOOKS.md": RUNBOOKS,
        "DECISION_LOG.md": DECISION_LOG,
    }
    manifest = {
        "generator": "llmwiki",
        "files": [
            {"path": name, "sha256": hashlib.sha256(text.encode()).hexdigest()}
            for name, text in pages.items()
        ],
    }
    if tamper is not None:
        pages[tamper] += "\nAn edit after export.\n"
    files = [TextFile(f"{root}/{name}", text) for name, text in pages.items()]
    return [*files, TextFile(f"{root}/MANIFEST.json", json.dumps(manifest, indent=2))]


def test_it_parses_bundle_pages_into_tagged_sections() -> None:
    drafts = parse_bundle(_bundle())
    overview = [d for d in drafts if "page:SYSTEM_OVERVIEW" in d.tags]
    assert [d.locator["section"] for d in overview] == [
        "System overview > Components",
        "System overview > Storage",
    ]
    assert all(d.kind == "page_section" and d.actor == "system" for d in overview)
    assert overview[0].content.startswith("## Components\n\nThe web app runs on Django")
    assert not any("generator" in d.content for d in drafts)


def test_it_labels_runbooks_as_procedures_and_decision_entries_as_decisions() -> None:
    drafts = [classify(d) for d in parse_bundle(_bundle())]
    runbook = by_content(drafts, "Copy the backup")
    assert runbook.memory_type == "procedural-candidate"
    assert runbook.memory_type_reason == "bundle page RUNBOOKS (procedure)"
    decisions = [d for d in drafts if "page:DECISION_LOG" in d.tags]
    assert [d.kind for d in decisions] == ["decision", "decision"]
    assert decisions[1].content == (
        "- 2026-01-02: PostgreSQL full-text search when running on PostgreSQL."
    )


def test_it_emits_one_episode_per_glossary_term() -> None:
    terms = [d for d in parse_bundle(_bundle()) if "page:GLOSSARY" in d.tags]
    assert [t for d in terms for t in d.tags if t.startswith("term:")] == [
        "term:Episode",
        "term:Claim",
        "term:Watermark",
        "term:Candidate",
    ]
    watermark = terms[2]
    assert (
        watermark.content
        == "- Watermark: the newest episode a sweep has read,\n  kept per project."
    )
    assert watermark.locator["lines"] == [5, 6]
    assert terms[3].content == "## Candidate\n\nA proposed claim waiting for review."
    assert all(d.memory_type == "semantic-candidate" for d in terms)


def test_it_rejects_a_bundle_whose_manifest_sha256_mismatches_naming_the_file() -> None:
    with pytest.raises(InputError) as caught:
        parse_bundle(_bundle(tamper="RUNBOOKS.md"))
    assert caught.value.name == "starter/RUNBOOKS.md"
    assert "sha256 mismatch with MANIFEST.json" in caught.value.reason


def test_it_rejects_a_malformed_manifest_naming_it() -> None:
    files = [*_bundle()[:-1], TextFile("starter/MANIFEST.json", '{"files": [\n')]
    with pytest.raises(InputError, match=r"starter/MANIFEST\.json: line 2: malformed JSON"):
        parse_bundle(files)
    with pytest.raises(InputError, match="must hold a JSON object"):
        read_manifest([TextFile("MANIFEST.json", "[]")])


def test_it_accepts_a_manifest_mapping_paths_to_hashes() -> None:
    digest = hashlib.sha256(RUNBOOKS.encode()).hexdigest()
    files = [
        TextFile("RUNBOOKS.md", RUNBOOKS),
        TextFile("MANIFEST.json", json.dumps({"files": {"RUNBOOKS.md": f"sha256:{digest}"}})),
    ]
    assert read_manifest(files) == {"files": {"RUNBOOKS.md": f"sha256:{digest}"}}
    assert len(parse_bundle(files)) == 1


def test_a_manifest_hash_of_crlf_bytes_verifies_against_decoded_text() -> None:
    crlf_bytes = RUNBOOKS.replace("\n", "\r\n").encode()
    manifest = {
        "files": [{"path": "RUNBOOKS.md", "sha256": hashlib.sha256(crlf_bytes).hexdigest()}]
    }
    files = [TextFile("RUNBOOKS.md", RUNBOOKS), TextFile("MANIFEST.json", json.dumps(manifest))]
    assert read_manifest(files) == manifest


def test_a_tampered_bundle_yields_no_drafts_even_from_untampered_pages() -> None:
    files = [*_bundle("one"), *_bundle("two", tamper="GLOSSARY.md")]
    with pytest.raises(InputError, match=r"^two/GLOSSARY\.md: sha256 mismatch"):
        parse_bundle(files)


def test_it_recognises_a_bundle_at_the_root_or_one_folder_deep() -> None:
    assert is_bundle(["SYSTEM_OVERVIEW.md", "RUNBOOKS.md"])
    assert is_bundle(["export-2026/SYSTEM_OVERVIEW.md"])
    assert not is_bundle(["a/b/SYSTEM_OVERVIEW.md"])


# --- detection and the parse entry point -------------------------------------------------------


def test_plan_routes_a_mixed_tree_to_the_right_importers() -> None:
    files = [*all_fixtures(), *_bundle("starter")]
    files.append(TextFile("notes/diagram.png", "\x89PNG"))
    routed = dict(plan(files))
    assert routed["vault"] == ["vault/wiki/decision-log.md", "vault/wiki/queue.md"]
    assert routed["daily_log"] == ["memory/2026-04-13.md"]
    assert routed["transcript"] == ["chats/export.json", "chats/session.jsonl"]
    assert routed["note"] == ["notes/architecture.md", "vault/raw/standup-2026-01-02.md"]
    assert routed["bundle"] == [f.path for f in _bundle("starter")]
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


# --- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "kind", "memory_type", "reason"),
    [
        ("Handoff: the lease bug is half fixed.", "note", "handoff-only", "handoff marker"),
        ("Notes for the next agent on call.", "note", "handoff-only", "handoff marker"),
        ("Keep SQLite as default.", "decision", "semantic-candidate", "decision entry"),
        ("We decided to drop Celery.", "note", "semantic-candidate", "decision language"),
        ("Decision: nh3 replaces bleach.", "note", "semantic-candidate", "decision language"),
        ("Going with Whoosh for now.", "note", "semantic-candidate", "decision language"),
        ("We switched the broker from Redis to the ORM.", "note", "semantic-candidate",
         "decision language"),
        ("$ make deploy\nok", "tool_call", "episodic", "tool output"),
        ("1. Stop the worker\n2. Restore the dump", "note", "procedural-candidate", "procedure"),
        ("To deploy, tag the release first.", "note", "procedural-candidate", "procedure"),
        ("Run `make rollback` if the smoke test fails.", "note", "procedural-candidate",
         "procedure"),
        ("How to rotate the API token", "note", "procedural-candidate", "procedure"),
        ("$ python manage.py migrate", "note", "procedural-candidate", "procedure"),
        ("TODO: write the retention policy", "note", "working", "work in progress"),
        ("I am currently rewriting the sweep.", "note", "working", "work in progress"),
        ("The exporter uses a deterministic zip writer.", "note", "semantic-candidate",
         "architecture statement"),
        ("Whoosh is a pure-Python search library.", "note", "semantic-candidate",
         "architecture statement"),
        ("**Watermark** — the newest episode read.", "note", "semantic-candidate",
         "term definition"),
        ("Lease: a time-limited claim on a sweep.", "note", "semantic-candidate",
         "term definition"),
        ("ok, sounds good!", "chat_turn", "working", "short chat turn"),
        ("Lunch was great and the weather was nice all afternoon.", "note", "episodic",
         "no rule matched"),
    ],
)  # fmt: skip
def test_each_classify_rule_fires_with_its_reason(
    content: str, kind: str, memory_type: str, reason: str
) -> None:
    draft = classify(EpisodeDraft(content, kind, "system", {"path": "x"}))
    assert draft.memory_type == memory_type
    assert draft.memory_type_reason.startswith(f"{reason}:")
    assert draft.content == content


def test_a_reason_quotes_the_words_that_fired() -> None:
    draft = classify(EpisodeDraft("After a long debate we decided to drop Celery.", "note",
                                  "system", {}))  # fmt: skip
    assert draft.memory_type_reason == (
        "decision language: “After a long debate we decided to drop Celery.”"
    )


def test_it_does_not_take_ordinary_sentences_for_rules() -> None:
    for content in (
        "It is a nice day.",  # a pronoun is not a named subject
        "we need to deploy tomorrow evening after the review",  # not an instruction
        "Note: the meeting moved to Friday afternoon",  # a label, not a term
    ):
        draft = classify(EpisodeDraft(content, "note", "system", {}))
        assert draft.memory_type == "episodic", (content, draft.memory_type_reason)


def test_classify_keeps_a_label_an_importer_chose() -> None:
    draft = EpisodeDraft(
        "We decided nothing.", "page_section", "system", {},
        memory_type="procedural-candidate", memory_type_reason="bundle page RUNBOOKS (procedure)",
    )  # fmt: skip
    assert classify(draft) is draft


def test_every_reason_names_a_rule_listed_for_display() -> None:
    names = {name for name, _ in RULES}
    files = {f.path: f for f in all_fixtures()}
    drafts = [
        d
        for name, paths in plan(list(files.values()))
        if name not in ("skipped", "unsupported")
        for d in parse(name, [files[p] for p in paths])
    ]
    for draft in drafts + [classify(d) for d in parse_bundle(_bundle())]:
        rule = draft.memory_type_reason.split(":")[0]
        assert rule in names or rule.startswith("bundle page"), draft.memory_type_reason
    assert all(description for _, description in RULES)


# --- properties ---------------------------------------------------------------------------------

_LINE = st.sampled_from(
    [
        "",
        "Plain words in a paragraph.",
        "- a bullet item",
        "  - a nested bullet",
        "1. a numbered step",
        "## A heading",
        "# Top heading",
        "```",
        "# hash inside or outside a fence",
        "continued text line",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=40))
def test_notes_keep_every_content_line_exactly_once_in_order(lines: list[str]) -> None:
    text = "\n".join(lines)
    drafts = parse_note(TextFile("gen.md", text))
    # Expected content lines: not blank, not a heading outside a fence.
    expected: list[int] = []
    in_fence = False
    for number, line in enumerate(lines, start=1):
        if line == "```":
            in_fence = not in_fence
            continue
        if line.strip() and (in_fence or not line.startswith("#")):
            expected.append(number)
    covered: list[int] = []
    for draft in drafts:
        first, last = draft.locator["lines"]
        assert 1 <= first <= last <= len(lines)
        assert covered == [] or first > covered[-1]
        covered.extend(n for n in expected if first <= n <= last)
        assert draft.content.strip()
    assert covered == expected


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


def test_it_reads_the_agent_from_an_openclaw_title_line():
    from llmwiki.importers.base import TextFile
    from llmwiki.importers.daily_log import parse_daily_log

    drafts = parse_daily_log(
        TextFile(
            "memory/2026-11-02.md", "# 2026-11-02 — agent:builder\n\n## Done\n- shipped the thing\n"
        )
    )
    assert {d.actor for d in drafts} == {"agent:builder"}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.md", "---\nupdated: 2026-08-27\n---\nBody text.\n", "2026-08-27T00:00:00"),
        (
            "a.md",
            "---\ncreated: 2026-01-02\nupdated: 2026-03-04\n---\nBody.\n",
            "2026-03-04T00:00:00",
        ),
        (
            "adr.md",
            "# ADR-7: device class\n- Status: Accepted\n- Date: 2026-06-18\n\nBody.\n",
            "2026-06-18T00:00:00",
        ),
        (
            "m.md",
            "# Minutes\n**Date:** Wednesday 9 September 2026, 09:00\n\nBody.\n",
            "2026-09-09T00:00:00",
        ),
        ("m.md", "# Minutes\nDate: Sept 9th, 2026\n\nBody.\n", "2026-09-09T00:00:00"),
        ("meeting-2026-09-09-review.md", "# Minutes\n\nBody.\n", "2026-09-09T00:00:00"),
        ("m.md", "# Minutes\nDate: 31 February 2026\n\nBody.\n", None),
        # other conventions for when a note stood, and any date-valued field at last
        ("a.md", "---\ntitle: Overview\nreviewed: 2026-02-20\n---\nBody.\n", "2026-02-20T00:00:00"),
        ("a.md", "---\nlastmod: 2026-04-01\n---\nBody.\n", "2026-04-01T00:00:00"),
        ("a.md", "---\nowner: Ann\nas_of: 2026-01-05\n---\nBody.\n", "2026-01-05T00:00:00"),
        ("a.md", "---\ntitle: 2026 plan\nowner: Ann\n---\nBody.\n", None),
    ],
)
def test_a_note_is_dated_by_front_matter_a_date_line_or_its_file_name(
    name: str, text: str, expected: str | None
) -> None:
    drafts = parse_note(TextFile(name, text))
    assert drafts and all(d.occurred_at == (expected and dt(expected)) for d in drafts)


def test_a_date_far_down_a_note_does_not_date_it() -> None:
    body = "# Notes\n" + "para.\n\n" * 12 + "Date: 2026-06-18\n"
    assert parse_note(TextFile("n.md", body))[0].occurred_at is None
