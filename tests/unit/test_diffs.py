"""Readable diffs (llmwiki.diffs): rows with line numbers, changed words marked, escaped."""

from __future__ import annotations

from llmwiki.diffs import diff_rows


def url(kind: str, pk: int) -> str:
    return f"/p/tidewater/{kind}s/{pk}/"


BEFORE = """# System overview

## Databases

- Staging runs PostgreSQL 15 on db-staging-2. _(claim 1; evidence #3, #4)_
- Backups run nightly. _(claim 2; evidence #5)_

## Deploys

- Deploys happen at 14:00. _(claim 6; evidence #9)_
"""


def test_the_same_text_has_no_rows():
    assert diff_rows(BEFORE, BEFORE) == []


def test_a_changed_line_marks_only_the_changed_words():
    after = BEFORE.replace("PostgreSQL 15", "PostgreSQL 16")
    rows = diff_rows(BEFORE, after)
    kinds = [r.kind for r in rows]
    assert kinds == ["hunk", "same", "same", "del", "add", "same", "same"]
    deleted, added = rows[3], rows[4]
    assert (deleted.old, deleted.new, added.old, added.new) == (5, None, None, 5)
    assert "PostgreSQL <del>15</del> on db-staging-2" in deleted.html
    assert "PostgreSQL <ins>16</ins> on db-staging-2" in added.html
    assert rows[0].html == "lines 3–7 before, lines 3–7 after"
    assert [r.sign for r in rows[3:5]] == ["−", "+"]


def test_unrelated_lines_are_not_marked_word_by_word():
    rows = diff_rows("- Alpha beta gamma.\n", "- Something else entirely here.\n")
    assert [r.kind for r in rows] == ["hunk", "del", "add"]
    assert "<del>" not in rows[1].html and "<ins>" not in rows[2].html


def test_added_lines_at_the_end_and_far_apart_hunks():
    after = BEFORE.replace("14:00", "15:00") + "- Freeze on Fridays. _(new claim; evidence #12)_\n"
    after = after.replace("# System overview", "# System overview (v2)")
    rows = diff_rows(BEFORE, after, context=1)
    hunks = [r for r in rows if r.kind == "hunk"]
    assert len(hunks) == 2
    assert rows[-1].kind == "add" and rows[-1].new == 11


def test_text_is_escaped_and_only_citation_ids_are_linked():
    before = "- Use <script>alert(1)</script> & #7 here. _(claim 2; evidence #5, #6)_\n"
    after = before.replace("here", "there")
    rows = diff_rows(before, after, cite=url)
    html = "".join(r.html for r in rows)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp;" in html
    assert '<a href="/p/tidewater/episodes/5/">#5</a>' in html
    assert '<a href="/p/tidewater/episodes/6/">#6</a>' in html
    assert "#7" in html and "/episodes/7/" not in html  # not a citation
    assert '<a href="/p/tidewater/episodes/12/">#12</a>' in "".join(
        r.html for r in diff_rows("", "- New. _(new claim; evidence #12)_\n", cite=url)
    )


def test_it_has_no_navigation_links_or_line_breaks_inside_rows():
    after = BEFORE.replace("nightly", "hourly")
    rows = diff_rows(BEFORE, after, cite=url)
    for row in rows:
        assert "\n" not in row.html
        assert 'href="#' not in row.html
