"""OpenClaw-style agent daily logs (`memory/YYYY-MM-DD*.md`)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    basename,
    clean_path,
    front_matter_date,
    front_matter_str,
    front_matter_tags,
    has_words,
    is_episode_text,
    normalise,
    parse_front_matter,
    split_lines,
)
from .notes import Block, block_pieces, parse_markdown

# `YYYY-MM-DD*.md`; session-reset hooks write `YYYY-MM-DD-HHMM.md`, whose HHMM is used as
# the base time of entries that carry no time of their own.
_DAILY_NAME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[-_T]?(\d{2})(\d{2})(?!\d))?[^/]*\.md$", re.IGNORECASE
)
# Dreaming writes these blocks into daily logs in its inline mode; they are its own output,
# and ingesting them would feed dreaming its own summaries as evidence. Deep Sleep is
# included for the same reason although OpenClaw writes it to DREAMS.md.
_SLEEP_HEADING = re.compile(r"[^\w]*(?:light|rem|deep)[ _-]?sleep\b", re.IGNORECASE)
_AGENT_LINE = re.compile(r"(?:#{1,6}[ \t]+)?agent[ \t]*:[ \t]*(\S.*?)[ \t#]*$", re.IGNORECASE)
# OpenClaw-style title lines name the agent after the date: "# 2026-11-02 — agent:builder".
_AGENT_IN_TITLE = re.compile(r"^#{1,6}[ \t].*?\bagent:([\w.-]+)", re.IGNORECASE)
_TIME = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__|\[|\()?"
    r"(\d{1,2}):(\d{2})(?::(\d{2}))?(?:[ \t]*([AaPp])\.?[Mm]\.?)?"
    r"(?:\*\*|__|\]|\))?(?=[\s:,;.\u2013\u2014-]|$)"
)
_COMMAND_LINE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?(?:\d{1,2}:\d{2}(?::\d{2})?[ \t]+)?\$ \S", re.MULTILINE
)
_RAN = re.compile(r"\b(?:ran|executed|output|stdout|stderr|returned|printed)\b", re.IGNORECASE)


def is_dreaming_artifact(path: str) -> bool:
    """Return whether `path` is dreaming's own output or state, which is never ingested."""
    parts = clean_path(path).split("/")
    if parts[-1].lower() == "dreams.md" or ".dreams" in parts:
        return True
    for k in range(len(parts) - 1):
        if parts[k] == "memory" and parts[k + 1] == "dreaming":
            return True
    # The walk may start inside memory/, leaving `dreaming/<phase>/...` at the root.
    return len(parts) > 2 and parts[0] == "dreaming" and parts[1] in ("light", "rem", "deep")


def log_date(path: str) -> tuple[date, time] | None:
    """Return the day (and base time) a daily-log file name encodes, or None."""
    m = _DAILY_NAME.match(basename(path))
    if m is None:
        return None
    try:
        day = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None
    base = time()
    if m.group(4) is not None:
        hour, minute = int(m.group(4)), int(m.group(5))
        if hour < 24 and minute < 60:
            base = time(hour, minute)
    return day, base


def is_daily_log(path: str) -> bool:
    """Return whether `path` is named like a daily log (`YYYY-MM-DD*.md`, a real date)."""
    return log_date(path) is not None and not is_dreaming_artifact(path)


def _entry_time(text: str) -> time | None:
    m = _TIME.match(text)
    if m is None:
        return None
    hour, minute = int(m.group(1)), int(m.group(2))
    second = int(m.group(3) or 0)
    meridiem = m.group(4)
    if meridiem is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if meridiem in "Pp" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    return time(hour, minute, second)


def _is_tool_output(block: Block, previous: Block | None) -> bool:
    text = block.text
    if "$ " in text and _COMMAND_LINE.search(text):
        return True
    if not block.fences:
        return False
    lead = "\n".join(block.lines[: block.fences[0][0]])
    if lead:
        return _RAN.search(lead) is not None
    # A bare fence reports tool output when the entry just before it says so.
    return previous is not None and _RAN.search(previous.lines[-1]) is not None


def _actor(fields: dict[str, str | list[str]], lines: list[str], body: int) -> str:
    name = front_matter_str(fields, "agent")
    if not name:
        for line in lines[body:]:
            if line.strip():
                m = _AGENT_LINE.match(line.strip()) or _AGENT_IN_TITLE.match(line.strip())
                name = m.group(1).strip() if m else ""
                break
    return actor_id("agent", name or "main")


def parse_daily_log(file: TextFile) -> list[EpisodeDraft]:
    """Turn a daily log into timed log entries, skipping dreaming's Light/REM Sleep blocks."""
    lines = split_lines(file.text)
    fields, body = parse_front_matter(lines)
    tags = front_matter_tags(fields)
    actor = _actor(fields, lines, body)
    named = log_date(file.path)
    if named is not None:
        day: date | None = named[0]
        base_time = named[1]
    else:
        # Forced onto a file without a dated name: the front matter may still say the day.
        stamp = front_matter_date(fields)
        day = stamp.date() if stamp else None
        base_time = stamp.time() if stamp else time()

    # Entries without a time of their own follow the last time seen, one second apart, so
    # that their order survives sorting by occurred_at.
    current = datetime.combine(day, base_time, tzinfo=UTC) if day else None
    offset = 0
    drafts: list[EpisodeDraft] = []
    skip_level: int | None = None

    def emit(text: str, first: int, last: int, kind: str, label: str) -> None:
        nonlocal offset
        content = normalise(text)
        if not is_episode_text(content):
            return
        occurred = current + timedelta(seconds=offset) if current is not None else None
        offset += 1
        drafts.append(
            EpisodeDraft(
                content=content,
                kind=kind,
                actor=actor,
                locator={"path": file.path, "section": label, "lines": [first, last]},
                occurred_at=occurred,
                tags=tags,
            )
        )

    for section in parse_markdown(lines, body):
        if skip_level is not None:
            if 0 < section.level <= skip_level:
                skip_level = None
            else:
                continue
        if section.title and _SLEEP_HEADING.match(section.title):
            skip_level = section.level
            continue
        label = " > ".join(t for t in section.path if not _AGENT_LINE.match(t))
        heading_time = _entry_time(section.title) if section.title else None
        if heading_time is not None and day is not None:
            current = datetime.combine(day, heading_time, tzinfo=UTC)
            offset = 0
        if heading_time is not None and not section.blocks:
            # `## 14:02 deployed v2` with no body: the heading is the whole entry (a bare
            # `## 16:00` says nothing and is dropped).
            if has_words(_TIME.sub("", section.title, count=1)):
                emit(section.title, section.line, section.line, "log_entry", label)
            continue
        previous: Block | None = None
        for block in section.blocks:
            entry_time = _entry_time(block.lines[0])
            if entry_time is not None and day is not None:
                current = datetime.combine(day, entry_time, tzinfo=UTC)
                offset = 0
            kind = "tool_call" if _is_tool_output(block, previous) else "log_entry"
            for text, first, last in block_pieces(block):
                emit(text, first, last, kind, label)
            previous = block
    return drafts
