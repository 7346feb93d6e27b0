"""JSON nested deeper than the one limit is refused by file name and line, never a crash."""

from __future__ import annotations

import json

import pytest

from llmwiki import ingest
from llmwiki.errors import InputError
from llmwiki.importers import (
    TextFile,
    looks_like_transcript,
    parse,
    parse_transcript,
    plan,
    safejson,
)
from llmwiki.importers.safejson import MAX_JSON_DEPTH

DEEP = "[" * 5000 + "]" * 5000
TURN = '{"role": "user", "content": "the staging database runs PostgreSQL 16"}'


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("path", "text", "line"),
    [
        ("a.json", DEEP, 1),
        ("a.jsonl", DEEP, 1),
        ("a.json", '{"messages": ' + DEEP + "}", 1),
        ("a.json", '{\n"role": "user",\n"content": ' + DEEP + "}", 3),
        ("a.jsonl", TURN + "\n" + TURN + "\n" + '{"messages": ' + DEEP + "}\n", 3),
        ("a.json", TURN + "\n" + '{"role": "user", "content": ' + DEEP + "}", 2),
    ],
)
def test_every_transcript_shape_refuses_deep_nesting_by_name_and_line(path, text, line):
    with pytest.raises(InputError) as caught:
        parse_transcript(TextFile(path, text))
    assert caught.value.name == path
    assert caught.value.reason == f"nested deeper than {MAX_JSON_DEPTH} levels (line {line})"


def test_the_limit_is_exact_and_brackets_in_strings_do_not_count():
    def turn(depth: int) -> str:
        return '[{"role": "user", "content": "hello there", "meta": ' + nested(depth - 2) + "}]"

    assert len(parse_transcript(TextFile("ok.json", turn(MAX_JSON_DEPTH)))) == 1
    with pytest.raises(InputError, match="nested deeper than"):
        parse_transcript(TextFile("deep.json", turn(MAX_JSON_DEPTH + 1)))
    text = "the config reads " + "[{" * 5000 + ' a "quoted" \\ end'
    quoted = json.dumps([{"role": "user", "content": text}])
    assert len(parse_transcript(TextFile("quoted.json", quoted))) == 1


def test_a_nested_manifest_is_refused_naming_it():
    files = [
        TextFile("SYSTEM_OVERVIEW.md", "# Overview\n\nThe queue drains nightly."),
        TextFile("MANIFEST.json", '{"files": ' + DEEP + "}"),
    ]
    with pytest.raises(InputError, match=r"^MANIFEST\.json: nested deeper than 100 levels"):
        parse("bundle", files)


def test_plan_names_a_nested_file_rather_than_calling_it_no_transcript():
    assert looks_like_transcript("a.json", DEEP) is False
    with pytest.raises(InputError, match=r"^deep\.json: nested deeper than"):
        plan([TextFile("notes.md", "# A\n\ntext"), TextFile("deep.json", DEEP)])


def test_a_recursion_error_from_the_decoder_is_refused_as_too_deep(monkeypatch):
    def exhausted(text):
        raise RecursionError

    monkeypatch.setattr(safejson.json, "loads", exhausted)
    with pytest.raises(safejson.TooDeep, match=r"nested deeper than 100 levels$"):
        safejson.decode("[]")


def test_a_recursion_error_in_any_parser_rejects_only_that_file(monkeypatch):
    def exhausted(importer, files):
        raise RecursionError

    monkeypatch.setattr(ingest.detect, "parse", exhausted)
    job = ingest._Job("note", None, [(0, "notes/deep.md", [TextFile("notes/deep.md", "x")])])
    outcome = ingest._analyse(job)
    assert isinstance(outcome, InputError)
    assert str(outcome) == "notes/deep.md: nested deeper than 100 levels"
