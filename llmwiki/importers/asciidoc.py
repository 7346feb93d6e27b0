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


def parse_asciidoc(file: TextFile) -> list[EpisodeDraft]:
    """Split an AsciiDoc note like a markdown one; table rows become one episode each."""
    lines = split_lines(file.text)
    md: list[str] = []
    attributes: dict[str, str] = {}
    headings: list[tuple[int, str]] = []
    tables: list[tuple[str, list[tuple[int, str]]]] = []
    table: list[tuple[int, str]] | None = None
    block: str | None = None  # the delimiter of an open verbatim or comment block
    header = True  # the document header runs from the title to the first blank line
    steps: list[int] = []  # the number of the current step at each depth of an ordered list
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if table is not None:
            md.append("")
            if stripped == "|===":
                tables.append((" > ".join(t for _, t in headings), table))
                table = None
            else:
                table.append((number, line))
            continue
        if block is not None:
            if stripped == block:
                md.append("```" if block in _VERBATIM else "")
                block = None
            else:
                md.append(line if block in _VERBATIM else "")
            continue
        if not stripped:
            header = header and number == 1
            md.append("")
            continue
        if stripped == "|===":
            table = []
            md.append("")
            continue
        if stripped in _VERBATIM or stripped == "////":
            block = stripped
            md.append("```" if stripped in _VERBATIM else "")
            continue
        if (
            stripped in _QUIET
            or stripped == "+"
            or stripped.startswith("//")
            or _BLOCK_ATTRIBUTES.match(stripped)
        ):
            md.append("")
            continue
        m = _ATTRIBUTE.match(stripped)
        if m is not None:
            attributes[m.group(1).lower()] = m.group(2).strip()
            md.append("")
            continue
        m = _HEADING.match(stripped)
        if m is not None:
            level = len(m.group(1))
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, m.group(2).strip()))
            md.append(f"{'#' * level} {m.group(2)}")
            continue
        if header and number == 2 and headings and "author" not in attributes:
            author = _AUTHOR.match(stripped)
            if author is not None and "," not in stripped:
                attributes["author"] = author.group(1).strip()
                md.append("")
                continue
        m = _UNORDERED.match(stripped)
        if m is not None:
            md.append("  " * (len(m.group(1)) - 1) + "- " + m.group(2))
            continue
        m = _ORDERED.match(stripped)
        if m is not None:
            depth = len(m.group(1))
            del steps[depth:]
            steps.extend([0] * (depth - len(steps)))
            steps[depth - 1] += 1
            md.append("   " * (depth - 1) + f"{steps[depth - 1]}. " + m.group(2))
            continue
        steps.clear()
        if stripped.startswith(".") and len(stripped) > 1 and not stripped[1].isspace():
            md.append(stripped[1:])  # a block title
            continue
        md.append(line)
    if table is not None:  # an unclosed table runs to the end of the file
        tables.append((" > ".join(t for _, t in headings), table))
    author = attributes.get("author", "")
    actor = actor_id("user", author) if author else None
    occurred_at = lenient_timestamp(attributes.get("revdate") or attributes.get("date"))
    tags = tuple(t.strip() for t in attributes.get("keywords", "").split(",") if t.strip())
    drafts = parse_note(TextFile(file.path, "\n".join(md)))
    drafts = [
        replace(
            d,
            actor=actor or d.actor,
            occurred_at=occurred_at or d.occurred_at,
            tags=d.tags + tags,
        )
        for d in drafts
    ]
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
                        actor=actor or "user:unknown",
                        locator={"path": file.path, "section": section, "lines": [first, last]},
                        occurred_at=occurred_at,
                        tags=(*tags, "table-row"),
                    )
                )
    drafts.sort(key=lambda d: d.locator["lines"][0])
    return drafts
