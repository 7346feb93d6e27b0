"""Readable diffs of wiki markdown: unified rows with line numbers and changed words marked.

Pure Python (no Django). difflib's HtmlDiff makes a fixed-width side-by-side table with
navigation links and no word wrapping; this gives rows a template lays out in one column
that wraps at word boundaries. Every piece of text is escaped here; the only markup added
is <del>/<ins> around changed words and links on the evidence ids of claim citations.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass
from typing import Final

from llmwiki.render import CITATION_RE, EVIDENCE_ID_RE, Linker

__all__ = ["Row", "diff_rows"]

# Paired old and new lines this similar get their changed words marked; below it the
# marks would cover most of the line and only add noise.
WORD_MARK_RATIO: Final = 0.5
_TOKEN_RE: Final = re.compile(r"#\d+|\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Row:
    kind: str  # "hunk", "same", "add" or "del"
    old: int | None  # line number before (1-based), if the line exists there
    new: int | None  # line number after
    html: str  # escaped text, with <del>/<ins> and citation links only

    @property
    def sign(self) -> str:
        return {"add": "+", "del": "−"}.get(self.kind, "")


def _evidence_starts(line: str) -> set[int]:
    """Where the evidence ids of claim citations start in `line`."""
    starts: set[int] = set()
    for cite in CITATION_RE.finditer(line):
        if cite.group(3) is None:
            continue
        for m in EVIDENCE_ID_RE.finditer(line, cite.start(3), cite.end(3)):
            starts.add(m.start())
    return starts


def _tokens(line: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in _TOKEN_RE.finditer(line)]


def _render(
    line: str, tokens: list[tuple[int, str]], changed: set[int], tag: str, cite: Linker | None
) -> str:
    """Escape `line` token by token, wrapping runs of changed tokens in <tag>."""
    linked = _evidence_starts(line) if cite else set()
    out: list[str] = []
    open_mark = False
    for index, (start, token) in enumerate(tokens):
        if (index in changed) != open_mark:
            out.append(f"<{tag}>" if not open_mark else f"</{tag}>")
            open_mark = not open_mark
        text = html.escape(token, quote=False)
        if start in linked and cite is not None:
            href = html.escape(cite("episode", int(token[1:])))
            text = f'<a href="{href}">{text}</a>'
        out.append(text)
    if open_mark:
        out.append(f"</{tag}>")
    return "".join(out)


def _plain(line: str, cite: Linker | None) -> str:
    return _render(line, _tokens(line), set(), "", cite)


def _pair(old: str, new: str, cite: Linker | None) -> tuple[str, str] | None:
    """The two lines with their changed words marked, or None when they share too little."""
    # Similarity by words: shared spaces and punctuation would make any two lines look alike.
    similar = difflib.SequenceMatcher(None, old.split(), new.split(), autojunk=False)
    if similar.ratio() < WORD_MARK_RATIO:
        return None
    a, b = _tokens(old), _tokens(new)
    matcher = difflib.SequenceMatcher(None, [t for _, t in a], [t for _, t in b], autojunk=False)
    gone: set[int] = set()
    came: set[int] = set()
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal":
            gone.update(range(i1, i2))
            came.update(range(j1, j2))
    return (
        _render(old, a, _bridged(a, gone), "del", cite),
        _render(new, b, _bridged(b, came), "ins", cite),
    )


def _bridged(tokens: list[tuple[int, str]], changed: set[int]) -> set[int]:
    """Spaces between two changed words count as changed: one mark, not one per word."""
    return changed | {
        i
        for i in range(1, len(tokens) - 1)
        if tokens[i][1].isspace() and i - 1 in changed and i + 1 in changed
    }


def _hunk_label(group: list[tuple[str, int, int, int, int]]) -> str:
    first, last = group[0], group[-1]
    old = (first[1] + 1, last[2])
    new = (first[3] + 1, last[4])

    def span(lo: int, hi: int) -> str:
        if hi < lo:
            return "none"
        return f"line {lo}" if lo == hi else f"lines {lo}–{hi}"

    return f"{span(*old)} before, {span(*new)} after"


def diff_rows(
    before: str, after: str, *, context: int = 2, cite: Linker | None = None
) -> list[Row]:
    """Rows of a unified diff of two texts; [] when they are the same."""
    a, b = before.splitlines(), after.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[Row] = []
    for group in matcher.get_grouped_opcodes(context):
        rows.append(Row("hunk", None, None, html.escape(_hunk_label(group), quote=False)))
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                rows += [
                    Row("same", i + 1, j + 1, _plain(a[i], cite))
                    for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
                ]
                continue
            olds, news = list(range(i1, i2)), list(range(j1, j2))
            marked: dict[int, str] = {}
            added: dict[int, str] = {}
            if op == "replace":
                for i, j in zip(olds, news, strict=False):
                    pair = _pair(a[i], b[j], cite)
                    if pair is not None:
                        marked[i], added[j] = pair
            rows += [Row("del", i + 1, None, marked.get(i) or _plain(a[i], cite)) for i in olds]
            rows += [Row("add", None, j + 1, added.get(j) or _plain(b[j], cite)) for j in news]
    return rows
