"""CSV and TSV files of events: one episode per row.

Which column holds the time, the actor and the text is read from the header row (common
names: time/timestamp/date, actor/user/author, text/message/content…) or given
explicitly, as `--columns time=When,actor=Who,text=What` on the command line. Other
non-empty columns are kept under the text as "Column: value" lines. The format is RFC
4180's (quoted cells may span lines); a `.tsv` file is split at tabs.
"""

from __future__ import annotations

import csv
import io

from llmwiki.errors import InputError

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    is_episode_text,
    normalise,
    timestamp_and_zone,
)

SUFFIXES = (".csv", ".tsv")
ROLES = ("time", "actor", "text")
HEADER_NAMES: dict[str, tuple[str, ...]] = {
    "time": ("time", "timestamp", "datetime", "date", "created_at", "created", "occurred_at",
             "ts", "when", "at"),
    "actor": ("actor", "user", "author", "speaker", "who", "sender", "from", "agent", "name",
              "username"),
    "text": ("text", "message", "content", "body", "event", "description", "summary", "note",
             "what", "details"),
}  # fmt: skip


def parse_columns(spec: str) -> dict[str, str]:
    """Read "time=When,actor=Who,text=What" into {role: header}; raise InputError if bad."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        role, sep, header = item.partition("=")
        role = role.strip().lower()
        if not sep or role not in ROLES or not header.strip():
            raise InputError(
                "--columns", f"{item!r}: expected role=Header with role one of time, actor, text"
            )
        mapping[role] = header.strip()
    return mapping


def _key(header: str) -> str:
    return header.strip().lower().replace(" ", "_").replace("-", "_")


def detect_columns(headers: list[str]) -> dict[str, str]:
    """{role: header} for each role a header names, first match in HEADER_NAMES order."""
    by_key = {_key(h): h for h in reversed(headers)}
    found: dict[str, str] = {}
    for role, names in HEADER_NAMES.items():
        for name in names:
            if name in by_key and by_key[name] not in found.values():
                found[role] = by_key[name]
                break
    return found


def parse_csv(file: TextFile, columns: dict[str, str] | None = None) -> list[EpisodeDraft]:
    """One event episode per row, its columns chosen by `columns` or by the header names."""
    tab = file.path.lower().endswith(".tsv")
    text = file.text[1:] if file.text.startswith("\ufeff") else file.text
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t" if tab else ",", strict=True)
    try:
        headers = next(reader, None)
    except csv.Error as exc:
        raise InputError(file.path, f"line 1: {exc}") from None
    if not headers or not any(h.strip() for h in headers):
        raise InputError(file.path, "no header row: the first line must name the columns")
    mapping = {**detect_columns(headers), **(columns or {})}
    for role, header in mapping.items():
        if header not in headers:
            raise InputError(
                file.path, f"no column {header!r} for {role}; columns: {', '.join(headers)}"
            )
    if "text" not in mapping:
        raise InputError(
            file.path,
            f"no text column among {', '.join(headers)}; name one with "
            "--columns text=HEADER (and time=…, actor=…)",
        )
    index = {role: headers.index(header) for role, header in mapping.items()}
    used = set(index.values())
    drafts: list[EpisodeDraft] = []
    last = 1
    while True:
        try:
            row = next(reader, None)
        except csv.Error as exc:
            raise InputError(file.path, f"line {reader.line_num}: {exc}") from None
        if row is None:
            break
        first, last = last + 1, reader.line_num
        if not any(cell.strip() for cell in row):
            continue

        def cell(role: str, row: list[str] = row) -> str:
            at = index.get(role)
            return row[at].strip() if at is not None and at < len(row) else ""

        extra = [
            f"{headers[i]}: {value.strip()}"
            for i, value in enumerate(row)
            if i not in used and i < len(headers) and value.strip()
        ]
        content = normalise("\n".join([cell("text"), *extra]) if extra else cell("text"))
        if not is_episode_text(cell("text")):
            continue
        try:
            occurred_at, zone = timestamp_and_zone(cell("time") or None)
        except ValueError as exc:
            raise InputError(
                file.path, f"line {first}, column {mapping['time']!r}: {exc}"
            ) from None
        locator: dict = {"path": file.path, "lines": [first, last]}
        if zone:
            locator["zone"] = zone
        drafts.append(
            EpisodeDraft(
                content=content,
                kind="event",
                actor=actor_id("user", cell("actor") or "unknown"),
                locator=locator,
                occurred_at=occurred_at,
            )
        )
    return drafts
