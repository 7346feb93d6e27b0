"""Classification: the memory type of a draft, with the rule and words that fired."""

from __future__ import annotations

import pytest

from llmwiki.importers import (
    RULES,
    EpisodeDraft,
    classify,
    parse,
    parse_bundle,
    plan,
)
from tests.unit.importers.files import all_fixtures, starter_bundle

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
    for draft in drafts + [classify(d) for d in parse_bundle(starter_bundle())]:
        rule = draft.memory_type_reason.split(":")[0]
        assert rule in names or rule.startswith("bundle page"), draft.memory_type_reason
    assert all(description for _, description in RULES)
