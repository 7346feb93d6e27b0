"""Markdown and text notes: sections, items, fences, dates, and every line kept once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmwiki.importers import (
    EpisodeDraft,
    TextFile,
    parse_note,
)
from llmwiki.importers.base import MAX_EPISODE_CHARS
from tests.unit.importers.files import by_content, dt, fixture

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


def test_link_reference_definitions_are_kept_as_text() -> None:
    # markdown-it consumes them without a token; the note still holds every line.
    drafts = parse_note(TextFile("n.md", "# Links\n\n[runbook]: https://wiki.example/rb\n"))
    assert [(d.content, d.locator["lines"]) for d in drafts] == [
        ("[runbook]: https://wiki.example/rb", [3, 3])
    ]


def test_a_bullet_indented_two_spaces_stays_with_its_numbered_step() -> None:
    drafts = parse_note(TextFile("n.md", "1. Drain the node\n  - wait for zero jobs\n2. Reboot\n"))
    assert len(drafts) == 1 and drafts[0].locator["lines"] == [1, 3]
