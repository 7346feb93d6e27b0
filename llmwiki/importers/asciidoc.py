"""AsciiDoc notes (`.adoc`, `.asciidoc`).

The syntax is the AsciiDoc language documentation's (docs.asciidoctor.org/asciidoc:
document header `= Title` with an author line and `:attribute: value` entries, section
titles `==` to `======`, `*`/`-` and `.` lists, `----`/`....` listing and literal
blocks, `////` comment blocks and `//` comment lines, block attributes `[…]`, and
tables between `|===` lines whose first line sets the column count and whose first row
is the header when a blank line follows it).

Each line is rewritten to its markdown equivalent in place (line numbers unchanged), so
sections, lists and code blocks split exactly as a markdown note does; a table row
becomes one episode reading "Header: cell; Header: cell", not its markup.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    is_episode_text,
    lenient_timestamp,
    normalise,
    split_lines,
)
from .notes import parse_note

SUFFIXES = (".adoc", ".asciidoc")
_HEADING = re.compile(r"(={1,6})[ \t]+(\S.*)$")
_ATTRIBUTE = re.compile(r":([\w-]+):[ \t]*(.*)$")
_UNORDERED = re.compile(r"([*-]+)[ \t]+(.*)$")
_ORDERED = re.compile(r"(\.+)[ \t]+(.*)$")
_BLOCK_ATTRIBUTES = re.compile(r"\[[^\]]*\]$")
_VERBATIM = ("----", "....")
_QUIET = ("____", "====", "****", "--", "++++")
_AUTHOR = re.compile(r"([^<:\[]+?)(?:[ \t]+<[^>]*>)?[ \t]*$")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("|")[1:]]


def _table_rows(rows: list[tuple[int, str]]) -> tuple[list[str], list[tuple[list[str], int, int]]]:
    """(header, [(cells, first line, last line)]) from the non-blank lines of a table."""
    lines = [(n, line) for n, line in rows if line.strip()]
    if not lines:
        return [], []
    width = max(1, len(_cells(lines[0][1])))
    first_line = lines[0][0]
    has_header = len(rows) > 1 and rows[0][0] == first_line and not rows[1][1].strip()
    cells: list[tuple[str, int]] = [(c, n) for n, line in lines for c in _cells(line)]
    grouped = [cells[i : i + width] for i in range(0, len(cells), width)]
    out = [([c for c, _ in group], group[0][1], group[-1][1]) for group in grouped]
    if has_header and out:
        return out[0][0], out[1:]
    return [], out


class _Converter:
    """Rewrites AsciiDoc lines to markdown one by one, collecting attributes and tables."""

    def __init__(self) -> None:
        self.md: list[str] = []
        self.attributes: dict[str, str] = {}
        self.headings: list[tuple[int, str]] = []
        self.tables: list[tuple[str, list[tuple[int, str]]]] = []
        self.table: list[tuple[int, str]] | None = None
        self.block: str | None = None  # the delimiter of an open verbatim or comment block
        self.header = True  # the document header runs from the title to the first blank line
        self.steps: list[int] = []  # the current step's number at each depth of an ordered list

    def feed(self, number: int, line: str) -> None:
        stripped = line.strip()
        if self.table is not None:
            self.md.append("")
            if stripped == "|===":
                self._close_table()
            else:
                self.table.append((number, line))
        elif self.block is not None:
            verbatim = self.block in _VERBATIM
            if stripped == self.block:
                self.md.append("```" if verbatim else "")
                self.block = None
            else:
                self.md.append(line if verbatim else "")
        elif not stripped:
            self.header = self.header and number == 1
            self.md.append("")
        elif stripped == "|===":
            self.table = []
            self.md.append("")
        elif stripped in _VERBATIM or stripped == "////":
            self.block = stripped
            self.md.append("```" if stripped in _VERBATIM else "")
        elif (
            stripped in _QUIET
            or stripped == "+"
            or stripped.startswith("//")
            or _BLOCK_ATTRIBUTES.match(stripped)
        ):
            self.md.append("")
        else:
            self.md.append(self._markup(number, line, stripped))

    def finish(self) -> None:
        if self.table is not None:  # an unclosed table runs to the end of the file
            self._close_table()

    def _close_table(self) -> None:
        assert self.table is not None
        self.tables.append((" > ".join(t for _, t in self.headings), self.table))
        self.table = None

    def _markup(self, number: int, line: str, stripped: str) -> str:
        """The markdown for a line of text: an attribute, heading, author, list item…"""
        m = _ATTRIBUTE.match(stripped)
        if m is not None:
            self.attributes[m.group(1).lower()] = m.group(2).strip()
            return ""
        m = _HEADING.match(stripped)
        if m is not None:
            level = len(m.group(1))
            while self.headings and self.headings[-1][0] >= level:
                self.headings.pop()
            self.headings.append((level, m.group(2).strip()))
            return f"{'#' * level} {m.group(2)}"
        if self.header and number == 2 and self.headings and "author" not in self.attributes:
            author = _AUTHOR.match(stripped)
            if author is not None and "," not in stripped:
                self.attributes["author"] = author.group(1).strip()
                return ""
        m = _UNORDERED.match(stripped)
        if m is not None:
            return "  " * (len(m.group(1)) - 1) + "- " + m.group(2)
        m = _ORDERED.match(stripped)
        if m is not None:
            depth = len(m.group(1))
            del self.steps[depth:]
            self.steps.extend([0] * (depth - len(self.steps)))
            self.steps[depth - 1] += 1
            return "   " * (depth - 1) + f"{self.steps[depth - 1]}. " + m.group(2)
        self.steps.clear()
        if stripped.startswith(".") and len(stripped) > 1 and not stripped[1].isspace():
            return stripped[1:]  # a block title
        return line


def _row_drafts(
    path: str,
    tables: list[tuple[str, list[tuple[int, str]]]],
    actor: str,
    occurred_at: datetime | None,
    tags: tuple[str, ...],
) -> list[EpisodeDraft]:
    """One episode per table row: "Header: cell; Header: cell", or the cells alone."""
    drafts = []
    for section, rows in tables:
        head, body = _table_rows(rows)
        for cells, first, last in body:
            if head and len(head) == len(cells):
                text = "; ".join(f"{h}: {c}" for h, c in zip(head, cells, strict=True) if c)
            else:
                text = " | ".join(c for c in cells if c)
            content = normalise(text)
            if is_episode_text(content):
                drafts.append(
                    EpisodeDraft(
                        content=content,
                        kind="note",
                        actor=actor,
                        locator={"path": path, "section": section, "lines": [first, last]},
                        occurred_at=occurred_at,
                        tags=(*tags, "table-row"),
                    )
                )
    return drafts


def parse_asciidoc(file: TextFile) -> list[EpisodeDraft]:
    """Split an AsciiDoc note like a markdown one; table rows become one episode each."""
    converter = _Converter()
    for number, line in enumerate(split_lines(file.text), start=1):
        converter.feed(number, line)
    converter.finish()
    attributes = converter.attributes
    author = attributes.get("author", "")
    actor = actor_id("user", author) if author else None
    occurred_at = lenient_timestamp(attributes.get("revdate") or attributes.get("date"))
    tags = tuple(t.strip() for t in attributes.get("keywords", "").split(",") if t.strip())
    drafts = [
        replace(
            d,
            actor=actor or d.actor,
            occurred_at=occurred_at or d.occurred_at,
            tags=d.tags + tags,
        )
        for d in parse_note(TextFile(file.path, "\n".join(converter.md)))
    ]
    drafts += _row_drafts(file.path, converter.tables, actor or "user:unknown", occurred_at, tags)
    drafts.sort(key=lambda d: d.locator["lines"][0])
    return drafts
