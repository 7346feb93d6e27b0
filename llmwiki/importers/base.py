"""Episode drafts, input files and the text helpers every importer shares.

Nothing here imports Django: importers turn raw text into drafts, and the ingest service
(after the security gate) turns drafts into stored episodes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from llmwiki.vocabulary import IMPORTED_KINDS

MEMORY_TYPES = (
    "working",
    "episodic",
    "semantic-candidate",
    "procedural-candidate",
    "handoff-only",
)

# Paragraphs longer than this are split at sentence boundaries: OpenClaw caps promoted snippets
# at ~640 chars, and an episode should stay one reviewable thought.
MAX_EPISODE_CHARS = 1200

_KIND_SET = frozenset(IMPORTED_KINDS)
_MEMORY_TYPE_SET = frozenset(MEMORY_TYPES)


@dataclass(frozen=True)
class TextFile:
    """One decoded input file; `path` is relative with forward slashes."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class EpisodeDraft:
    """A normalised episode an importer proposes; the gate and the service decide the rest."""

    content: str
    kind: str
    actor: str
    locator: dict
    occurred_at: datetime | None = None
    memory_type: str = "episodic"
    memory_type_reason: str = ""
    tags: tuple[str, ...] = ()
    # Text an importer trimmed from `content` (a long tool output): never stored as an
    # episode, but the gate scans it, so a credential in the cut tail is still caught.
    omitted: str = ""

    def __post_init__(self) -> None:
        # Cheap invariant checks: a wrong kind or a naive datetime is an importer bug, and
        # catching it here keeps it out of the append-only episode table.
        if self.kind not in _KIND_SET:
            raise ValueError(f"unknown episode kind {self.kind!r}")
        if self.memory_type not in _MEMORY_TYPE_SET:
            raise ValueError(f"unknown memory type {self.memory_type!r}")
        if not self.actor.startswith(("user:", "agent:")) and self.actor != "system":
            raise ValueError(f"actor must be user:<name>, agent:<name> or system: {self.actor!r}")
        if self.occurred_at is not None and self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at must be timezone-aware")

    def with_memory_type(self, memory_type: str, reason: str) -> EpisodeDraft:
        """Return a copy labelled with `memory_type` and the rule that chose it."""
        # Built directly: dataclasses.replace() costs several times more per call, and this
        # runs once per episode.
        return EpisodeDraft(
            self.content,
            self.kind,
            self.actor,
            self.locator,
            self.occurred_at,
            memory_type,
            reason,
            self.tags,
            self.omitted,
        )


_ACTOR_PREFIXES = ("user:", "agent:")


def actor_id(kind: str, name: str) -> str:
    """`kind:name`, unless the source already wrote a full actor ("agent:builder", "system").

    Sources name people both ways, so prefixing blindly gave "user:agent:builder".
    """
    name = name.strip()
    folded = name.lower()
    if folded == "system":
        return "system"
    for prefix in _ACTOR_PREFIXES:
        if folded.startswith(prefix):
            return prefix + (name[len(prefix) :].strip() or "unknown")
    return f"{kind}:{name}"


_TRAILING_WS = re.compile(r"[ \t]+$", re.MULTILINE)
# More than two blank lines in a row carry no meaning; two are kept so that a deliberate
# visual break inside an episode survives.
_BLANK_RUN = re.compile(r"\n{4,}")
_HAS_WORD = re.compile(r"[^\W_]")


def normalise(text: str) -> str:
    """Return `text` NFC-normalised, without trailing spaces or runs of >2 blank lines.

    Invisible and bidi characters are kept on purpose: the security gate flags them, and
    silently dropping them here would hide an injection attempt from it.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    # Substring tests first: they are far cheaper than the regex on the common clean text.
    if " \n" in text or "\t\n" in text:
        text = _TRAILING_WS.sub("", text)
    if "\n\n\n\n" in text:
        text = _BLANK_RUN.sub("\n\n\n", text)
    # Only spaces, tabs and newlines are trimmed at the ends; other Unicode whitespace may be
    # an evasion trick the gate needs to see.
    text = text.strip(" \t\n")
    return unicodedata.normalize("NFC", text)


def has_words(text: str) -> bool:
    """Return whether `text` holds at least one letter or digit (not pure punctuation)."""
    return _HAS_WORD.search(text) is not None


_ONLY_COMMENTS = re.compile(r"(?:<!--.*?-->\s*)+", re.DOTALL)


def is_episode_text(content: str) -> bool:
    """Return whether normalised `content` is worth an episode.

    Empty text, pure punctuation (`---`, `| --- |`) and blocks made only of HTML comments
    (tool markers such as OpenClaw's promotion keys, invisible when rendered) are not.
    """
    if not content or _HAS_WORD.search(content) is None:
        return False
    return not (content.startswith("<!--") and _ONLY_COMMENTS.fullmatch(content))


def split_lines(text: str) -> list[str]:
    """Split `text` into lines the way editors number them (LF, CRLF or CR).

    `str.splitlines` is avoided: it also breaks on U+2028, form feeds and other separators,
    which would shift line numbers away from what a reviewer sees in the file.
    """
    if text.startswith("\ufeff"):
        # A byte-order mark is an encoding artefact of the whole file, not content.
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def clean_path(path: str) -> str:
    """Return `path` with forward slashes and without a leading `./` or `/`."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")


def basename(path: str) -> str:
    """Return the last component of a relative path (either slash style)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1]


# --- timestamps ---------------------------------------------------------------------------

_NUMERIC = re.compile(r"-?\d+(?:\.\d+)?$")


def parse_timestamp(value: object) -> datetime | None:
    """Parse ISO 8601 or epoch seconds/milliseconds into a UTC datetime; raise ValueError.

    Naive values are taken as UTC. Epoch numbers above 1e11 are milliseconds and above 1e14
    microseconds: 1e11 seconds is the year 5138, so no real timestamp is ambiguous.
    """
    if value is None or value == "":
        return None
    if type(value) is str:
        text = value.strip()
        if _NUMERIC.match(text):
            return _from_epoch(float(text))
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=UTC)
    raise ValueError(f"not a timestamp: {value!r}")


def timestamp_and_zone(value: object) -> tuple[datetime | None, str]:
    """parse_timestamp, plus the UTC offset the source wrote ("+02:00"; "" for UTC or none).

    Episodes are stored in UTC; the offset says what the wall clock read where it was
    written, which a reader of a chat log or an e-mail needs.
    """
    parsed = parse_timestamp(value)
    zone = ""
    if type(value) is str and not _NUMERIC.match(value.strip()):
        try:
            offset = datetime.fromisoformat(value.strip()).utcoffset()
        except ValueError:
            offset = None
        if offset:
            zone = _offset_text(offset.total_seconds())
    return parsed, zone


def _offset_text(seconds: float) -> str:
    sign = "-" if seconds < 0 else "+"
    minutes = int(abs(seconds)) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def offset_of(moment: datetime) -> str:
    """The UTC offset of an aware datetime as "+02:00", or "" when it is UTC."""
    offset = moment.utcoffset()
    return _offset_text(offset.total_seconds()) if offset else ""


# Tool outputs longer than this are cut: a 2 MB build log is evidence that a build ran, not
# a thought to review, and the cut says how much was left out.
MAX_TOOL_OUTPUT_CHARS = 4000


def trim_output(text: str, limit: int = MAX_TOOL_OUTPUT_CHARS) -> tuple[str, str]:
    """Return (text cut to about `limit` chars with a note saying so, the part cut off)."""
    if len(text) <= limit:
        return text, ""
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    kept, omitted = text[:cut].rstrip(), text[cut:]
    return f"{kept}\n[… trimmed: {len(omitted):,} more characters]", omitted


def _from_epoch(number: float) -> datetime:
    if abs(number) >= 1e14:
        number /= 1e6
    elif abs(number) >= 1e11:
        number /= 1e3
    try:
        return datetime.fromtimestamp(number, UTC)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"epoch timestamp out of range: {number!r}") from None


def lenient_timestamp(value: object) -> datetime | None:
    """Parse a front-matter date, returning None instead of raising on nonsense.

    Front matter is written by hand ("last week"); rejecting a whole note over it would
    lose the note, while a missing date only falls back to the retrieval time.
    """
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


# --- YAML-ish front matter ----------------------------------------------------------------

# Front matter longer than this is not front matter: a leading "---" then is a thematic
# break, and the bound keeps a file without a closing fence from being rescanned.
_MAX_FRONT_MATTER_LINES = 200
_FM_KEY = re.compile(r"([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*))?$")


def parse_front_matter(lines: list[str]) -> tuple[dict[str, str | list[str]], int]:
    """Parse a leading `---` … `---` block; return (fields, index of the first body line).

    Only the YAML subset people write by hand is understood: `key: value`, quoted values,
    inline `[a, b]` lists, block `- item` lists and `|`/`>` scalars. Values stay strings.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0
    for end in range(1, min(len(lines), _MAX_FRONT_MATTER_LINES)):
        if lines[end].strip() in ("---", "..."):
            return _parse_yamlish(lines[1:end]), end + 1
    return {}, 0


def _parse_yamlish(lines: list[str]) -> dict[str, str | list[str]]:
    fields: dict[str, str | list[str]] = {}
    key: str | None = None
    block: list[str] | None = None
    for raw in lines:
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if raw[:1] in (" ", "\t", "-") and key is not None:
            # Continuation of the previous key: a block list item or a block scalar line.
            if stripped.startswith("- ") or stripped == "-":
                items = fields.get(key)
                if not isinstance(items, list):
                    items = []
                    fields[key] = items
                items.append(_unquote(stripped[1:].strip()))
            elif block is not None:
                block.append(stripped)
                fields[key] = " ".join(block)
            continue
        match = _FM_KEY.match(stripped)
        if match is None:
            key = None
            continue
        key = match.group(1).lower()
        value = (match.group(2) or "").strip()
        block = None
        if value in ("|", ">", "|-", ">-", "|+", ">+"):
            block = []
            fields[key] = ""
        elif value.startswith("[") and value.endswith("]"):
            fields[key] = [_unquote(v.strip()) for v in value[1:-1].split(",") if v.strip()]
        else:
            fields[key] = _unquote(value)
    return fields


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def front_matter_tags(fields: dict[str, str | list[str]]) -> tuple[str, ...]:
    """Return the `tags` (or `tag`/`keywords`) field as a clean tuple, order kept."""
    raw = fields.get("tags", fields.get("tag", fields.get("keywords", ())))
    if isinstance(raw, str):
        raw = raw.split(",") if "," in raw else raw.split()
    seen: dict[str, None] = {}
    for tag in raw:
        cleaned = tag.strip().lstrip("#").strip()
        if cleaned:
            seen.setdefault(cleaned, None)
    return tuple(seen)


def front_matter_date(
    fields: dict[str, str | list[str]], keys: tuple[str, ...] = ("date", "created")
) -> datetime | None:
    """Return the first parseable date among `keys`, or None."""
    for key in keys:
        value = fields.get(key)
        # A bare number is never a hand-written date ("2026" would read as epoch seconds).
        if isinstance(value, str) and value and not _NUMERIC.match(value):
            parsed = lenient_timestamp(value)
            if parsed is not None:
                return parsed
    return None


def front_matter_str(fields: dict[str, str | list[str]], key: str) -> str:
    """Return a scalar front-matter field as a stripped string ('' when absent or a list)."""
    value = fields.get(key)
    return value.strip() if isinstance(value, str) else ""
