"""Transcripts: JSON and JSONL turns with a role or speaker and their content."""

from __future__ import annotations

import json

import pytest

from llmwiki.errors import InputError
from llmwiki.importers import (
    EpisodeDraft,
    TextFile,
    looks_like_transcript,
    parse_transcript,
)
from tests.unit.importers.files import dt, fixture

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
