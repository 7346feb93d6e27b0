"""Markdown and plain-text notes, plus the line walker the other markdown importers share.

markdown-it reads the block structure (ATX and setext headings, fenced code, where `#` is
not a heading, bullet items, ordered lists, thematic breaks); the blocks keep the lines as
written, with their line numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from markdown_it import MarkdownIt

from .base import (
    MAX_EPISODE_CHARS,
    EpisodeDraft,
    TextFile,
    actor_id,
    front_matter_date,
    front_matter_str,
    front_matter_tags,
    has_words,
    is_episode_text,
    normalise,
    parse_front_matter,
    split_lines,
)

# A sentence ends at . ! ? … (plus closing quotes/brackets) followed by whitespace, but not
# after a digit, so that "1. Build" is never cut from its step; a list item boundary inside
# an oversized block is also a good place to cut.
_BOUNDARY = re.compile(r"((?<!\d)[.!?…][\"'”’)\]]*)\s+|(\n)(?=[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t])")

_DECISION_HEADING = re.compile(
    r"(?:architecture |architectural )?decisions?(?: log| records?| register)?$"
    r"|adrs?$|decision[ _-]log$|decision:",
    re.IGNORECASE,
)
_DECISION_PREFIX = re.compile(
    r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)?(?:\*\*|__)?decision(?:\*\*|__)?[ \t]*:",
    re.IGNORECASE,
)


@dataclass(slots=True)
class Block:
    """A run of lines that is one episode before length splitting (paragraph, item, list)."""

    kind: str  # "para" | "item" | "olist" | "fence"
    start: int  # 1-based line number of lines[0]
    lines: list[str]
    indent: int = 0
    # Inclusive (first, last) indices into `lines` of fenced code; never split inside.
    fences: list[tuple[int, int]] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass(slots=True)
class Section:
    """The blocks under one heading; `path` is the heading path (empty before any heading)."""

    path: tuple[str, ...]
    level: int
    title: str
    line: int  # 1-based line of the heading, 0 for the preamble
    heading_lines: int  # 1 for ATX, 2 for setext, 0 for the preamble
    blocks: list[Block] = field(default_factory=list)

    @property
    def label(self) -> str:
        return " > ".join(self.path)


# Block structure only: headings, lists, fences and paragraphs with their line ranges
# (`token.map`); inline markup is never parsed, the text is taken from the lines as written.
_MARKDOWN = MarkdownIt("commonmark").disable("inline")
LISTS = ("item", "olist")
# Top-level tokens that hold content, and the kind of block each starts.
_CONTENT = {
    "paragraph_open": "para",
    "blockquote_open": "para",
    "html_block": "para",
    "code_block": "para",
    "bullet_list_open": "item",
    "ordered_list_open": "olist",
    "fence": "fence",
}


def parse_markdown(lines: list[str], start: int = 0) -> list[Section]:
    """Split `lines[start:]` into sections of blocks (markdown-it's block tokens).

    A block is what a reader takes as one thought: a paragraph, a top-level bullet item with
    what is nested under it, or a numbered list whole with its lead-in. A fenced code block
    stays with the text right above it, or with a lead-in ending in ":" even after blank
    lines, and is never split.
    """
    sections = _Sections(lines)
    tokens = _MARKDOWN.parse("\n".join(lines[start:]))
    covered = start
    for k, token in enumerate(tokens):
        if token.level != 0 or token.map is None:
            continue
        first, end = token.map[0] + start, token.map[1] + start
        sections.loose(covered, first)
        covered = max(covered, end)
        if token.type == "heading_open":
            title = tokens[k + 1].content.replace("\n", " ")
            sections.heading(int(token.tag[1]), title, first, end)
        elif token.type == "hr":
            sections.rule()
        elif token.type == "bullet_list_open":
            for item in _items(tokens, k):
                sections.add("item", item.map[0] + start, item.map[1] + start)
        else:
            sections.add(_CONTENT.get(token.type, "para"), first, end)
    sections.loose(covered, len(lines))
    sections.fences(tokens, start)
    return sections.all


def _items(tokens: list, k: int) -> list:
    """The top-level items of the list opened at `tokens[k]`."""
    items = []
    for token in tokens[k + 1 :]:
        if token.level == 0:
            break
        if token.level == 1 and token.type == "list_item_open":
            items.append(token)
    return items


class _Sections:
    """Sections as they are built, with the rules for when a block joins the one before."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.section = Section((), 0, "", 0, 0)
        self.all = [self.section]
        self.stack: list[tuple[int, str]] = []
        self.last: Block | None = None  # the block before, unless a heading or rule came between

    def heading(self, level: int, title: str, first: int, end: int) -> None:
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        title = title.strip()
        if title and has_words(title):
            self.stack.append((level, title))
        else:
            title = ""  # an empty or pure-punctuation heading names nothing
        path = tuple(t for _, t in self.stack)
        self.section = Section(path, level, title, first + 1, end - first)
        self.all.append(self.section)
        self.last = None

    def rule(self) -> None:
        self.last = None

    def add(self, kind: str, first: int, end: int) -> None:
        """Lines `first` to `end` (0-based, end excluded) as a block, or joined to the last."""
        while end > first and not self.lines[end - 1].strip():
            end -= 1
        if end <= first:
            return
        last = self.last
        if last is not None and self._joins(last, kind, first):
            # The blank lines between are kept, so that `start + index` stays the line number.
            last.lines.extend(self.lines[last.end : end])
            if kind == "olist" and last.kind == "para":
                last.kind = "olist"  # steps stay with their lead-in
            return
        line = self.lines[first]
        block = Block(kind, first + 1, self.lines[first:end], len(line) - len(line.lstrip()))
        self.section.blocks.append(block)
        self.last = block

    def _joins(self, last: Block, kind: str, first: int) -> bool:
        adjacent = last.end == first  # `last.end` is 1-based: the line right above
        line = self.lines[first]
        # Indented under a list item, even by less than CommonMark's content indent.
        nested = len(line) - len(line.lstrip()) >= last.indent + 2 and last.kind in LISTS
        if kind == "item":
            return nested  # else each bullet item is a thought of its own
        if kind == "olist":
            return adjacent and last.kind in ("para", "olist")
        if kind == "fence":
            # A fence belongs to what introduces it: the text right above, a lead-in ending
            # in ":", or the list item it is indented under.
            return adjacent or last.lines[-1].rstrip().endswith(":") or nested
        return adjacent

    def loose(self, first: int, end: int) -> None:
        """Lines no token covers (link reference definitions): paragraphs, as written."""
        block_first = None
        for i in range(first, end + 1):
            blank = i == end or not self.lines[i].strip()
            if blank and block_first is not None:
                self.add("para", block_first, i)
                block_first = None
            elif not blank and block_first is None:
                block_first = i

    def fences(self, tokens: list, start: int) -> None:
        """Record each fenced range in the block holding it; an unclosed fence runs to the
        end of the file, as in CommonMark, less the trailing blank lines."""
        blocks = iter(b for s in self.all for b in s.blocks)
        block = next(blocks, None)
        for token in tokens:
            if token.type != "fence" or token.map is None:
                continue
            first, last = token.map[0] + start + 1, token.map[1] + start
            while block is not None and block.end < first:
                block = next(blocks, None)
            if block is None:
                break
            last = min(last, block.end)
            while last > first and not self.lines[last - 1].strip():
                last -= 1
            block.fences.append((first - block.start, last - block.start))


def chunk(
    lines: list[str],
    first_line: int,
    groups: list[tuple[int, int]],
    fences: list[tuple[int, int]],
    limit: int = MAX_EPISODE_CHARS,
) -> list[tuple[str, int, int]]:
    """Cut `lines` into pieces of at most ~`limit` chars; return (text, first, last line).

    `groups` are inclusive line-index ranges that should stay together when they fit
    (paragraphs of a section); a group over the limit is cut at sentence boundaries, and
    at whitespace only for a run-on sentence. Fenced ranges are never cut, even when
    longer than the limit.
    """
    text = "\n".join(lines)
    if len(text) <= limit:
        return [(text, first_line, first_line + len(lines) - 1)]
    offsets = [0] * (len(lines) + 1)
    pos = 0
    for k, line in enumerate(lines):
        offsets[k] = pos
        pos += len(line) + 1
    offsets[len(lines)] = pos
    fence_spans = [(offsets[f], offsets[t] + len(lines[t])) for f, t in fences]
    fence_starts = {span[0] for span in fence_spans}

    units: list[tuple[int, int]] = []
    fi = 0
    for g_first, g_last in groups:
        a, b = offsets[g_first], offsets[g_last] + len(lines[g_last])
        if b - a <= limit:
            units.append((a, b))
            continue
        cursor = a
        while fi < len(fence_spans) and fence_spans[fi][1] <= a:
            fi += 1
        while cursor < b:
            if fi < len(fence_spans) and fence_spans[fi][0] < b:
                f_a, f_b = fence_spans[fi]
                _sentence_units(text, cursor, f_a, limit, units)
                units.append((f_a, f_b))
                cursor = f_b
                fi += 1
            else:
                _sentence_units(text, cursor, b, limit, units)
                cursor = b

    pieces: list[tuple[str, int, int]] = []
    line_no, line_pos = first_line, 0
    i = 0
    while i < len(units):
        a = units[i][0]
        j = i
        while j + 1 < len(units) and (
            units[j + 1][1] - a <= limit
            # A lead-in ("Run this:") stays with the oversized fence it introduces.
            or (units[j + 1][0] in fence_starts and text[units[j][1] - 1] == ":")
        ):
            j += 1
        b = units[j][1]
        line_no += text.count("\n", line_pos, a)
        line_pos = a
        pieces.append((text[a:b], line_no, line_no + text.count("\n", a, b)))
        i = j + 1
    return pieces


def _sentence_units(text: str, a: int, b: int, limit: int, units: list[tuple[int, int]]) -> None:
    """Append sentence spans of `text[a:b]` (whitespace trimmed) to `units`."""
    cursor = a
    for m in _BOUNDARY.finditer(text, a, b):
        end = m.end(1) if m.group(1) is not None else m.start()
        _add_unit(text, cursor, end, limit, units)
        cursor = m.end()
    _add_unit(text, cursor, b, limit, units)


def _add_unit(text: str, a: int, b: int, limit: int, units: list[tuple[int, int]]) -> None:
    while a < b and text[a] in " \t\n":
        a += 1
    while b > a and text[b - 1] in " \t\n":
        b -= 1
    while b - a > limit:
        # A run-on sentence: cut at the last whitespace that fits. A single huge token (a
        # blob, a URL) stays whole so that the secret scanner sees it in one piece.
        cut = max(text.rfind(" ", a, a + limit), text.rfind("\n", a, a + limit))
        if cut <= a:
            break
        units.append((a, cut))
        a = cut + 1
        while a < b and text[a] in " \t\n":
            a += 1
    if b > a:
        units.append((a, b))


def block_pieces(block: Block, limit: int = MAX_EPISODE_CHARS) -> list[tuple[str, int, int]]:
    """Return the pieces of one block: itself, or sentence-cut parts if it is too long."""
    if len(block.lines) == 1 and len(block.lines[0]) <= limit:
        return [(block.lines[0], block.start, block.start)]
    return chunk(block.lines, block.start, [(0, len(block.lines) - 1)], block.fences, limit)


def section_pieces(
    lines: list[str], section: Section, limit: int = MAX_EPISODE_CHARS
) -> list[tuple[str, int, int]]:
    """Return a whole section (heading line included) cut into pieces at paragraph bounds."""
    if not section.blocks:
        return []
    first = section.line if section.title else section.blocks[0].start
    last = section.blocks[-1].end
    groups: list[tuple[int, int]] = []
    fences: list[tuple[int, int]] = []
    if section.title:
        groups.append((0, section.heading_lines - 1))
    for block in section.blocks:
        base = block.start - first
        groups.append((base, base + len(block.lines) - 1))
        fences.extend((base + f, base + t) for f, t in block.fences)
    pieces = chunk(lines[first - 1 : last], first, groups, fences, limit)
    heading_end = first + section.heading_lines - 1
    if section.title and len(pieces) > 1 and pieces[0][2] == heading_end:
        # An oversized first block left the heading alone; a bare heading is junk as an
        # episode, so it leads the next piece instead.
        (head, start, _), (text, _, end) = pieces[0], pieces[1]
        pieces[:2] = [(f"{head}\n\n{text}", start, end)]
    return pieces


def is_decision_path(path: tuple[str, ...]) -> bool:
    """Return whether any heading on `path` names a decision log (or one decision)."""
    return any(_DECISION_HEADING.match(title) for title in path)


def starts_with_decision(text: str) -> bool:
    """Return whether `text` opens with a `Decision:` label (bullet or bold allowed)."""
    return _DECISION_PREFIX.match(text) is not None


# Where a hand-written note says when it was written, besides front matter: a "Date:" line
# under the title (minutes, ADRs) or a date in the file name ("meeting-2026-09-09-…").
_DATE_LINES = 12
_DATE_LABEL = re.compile(r"^[\s>*_#-]*date[\s*_]*:[\s*_]*(?P<value>.+)$", re.IGNORECASE)
_ISO_DAY = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_WRITTEN_DAY = re.compile(
    r"(?<!\d)(?:(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s+(?P<m1>[A-Za-z]{3,9})\.?,?\s+(?P<y1>\d{4})"
    r"|(?P<m2>[A-Za-z]{3,9})\.?\s+(?P<d2>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{4}))"
)
_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {
    m: i + 1 for i, name in enumerate(_MONTH_NAMES.split()) for m in (name, name[:3], name[:4])
}


def _day_in(text: str) -> datetime | None:
    """The first ISO ("2026-09-09") or written ("9 September 2026") date in `text`."""
    m = _ISO_DAY.search(text)
    if m:
        parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        m = _WRITTEN_DAY.search(text)
        month = m and _MONTHS.get((m.group("m1") or m.group("m2")).lower())
        if not month:
            return None
        day = m.group("d1") or m.group("d2")
        parts = int(m.group("y1") or m.group("y2")), month, int(day)
    try:
        return datetime(*parts, tzinfo=UTC)
    except ValueError:
        return None


# Front-matter keys naming when a note was written or last edited, in the conventions of
# static-site generators, wikis and note apps; the first present wins.
_DATE_KEYS = (
    "date",
    "updated",
    "last_updated",
    "last-updated",
    "modified",
    "last_modified",
    "lastmod",
    "reviewed",
    "last_reviewed",
    "published",
    "created",
)


def note_date(fields: dict[str, str | list[str]], head: list[str], path: str) -> datetime | None:
    """When a note was written: front matter, a "Date:" line near the top, the file name.

    "updated" outranks "created": a note asserts what it says as of its last edit, and
    that is the time a later statement contradicting it must be compared with.
    """
    found = front_matter_date(fields, _DATE_KEYS)
    if found is None:
        # Any other field holding a date ("reviewed:", "as_of:") says when the note stood.
        found = front_matter_date(fields, tuple(k for k in fields if k not in _DATE_KEYS))
    if found is not None:
        return found
    for line in head:
        m = _DATE_LABEL.match(line)
        if m:
            found = _day_in(m.group("value"))
            if found is not None:
                return found
    return _day_in(path.rsplit("/", 1)[-1])


def parse_note(file: TextFile) -> list[EpisodeDraft]:
    """Split a markdown or plain-text note into episodes by section, then item/paragraph."""
    lines = split_lines(file.text)
    fields, body = parse_front_matter(lines)
    tags = front_matter_tags(fields)
    occurred_at = note_date(fields, lines[body : body + _DATE_LINES], file.path)
    title = front_matter_str(fields, "title")
    author = front_matter_str(fields, "author")
    actor = actor_id("user", author or "unknown")
    drafts: list[EpisodeDraft] = []
    for section in parse_markdown(lines, body):
        label = section.label or title
        decision_section = is_decision_path(section.path)
        for block in section.blocks:
            for text, first, last in block_pieces(block):
                content = normalise(text)
                if not is_episode_text(content):
                    continue
                kind = "decision" if decision_section or starts_with_decision(content) else "note"
                drafts.append(
                    EpisodeDraft(
                        content=content,
                        kind=kind,
                        actor=actor,
                        locator={"path": file.path, "section": label, "lines": [first, last]},
                        occurred_at=occurred_at,
                        tags=tags,
                    )
                )
    return drafts
