"""The lines around an episode in its source's raw text, for the episode page.

The raw layer keeps each source's bytes (redacted when the gate found secrets); an
episode's locator names the file (``bundle.zip!notes/ops.md`` inside a zip) and its lines.
Secrets are redacted again on the way out, so a blob stored before redaction existed
still never shows a credential.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from llmwiki import archives
from llmwiki.blobs import blob_read
from llmwiki.errors import InputError
from llmwiki.models import Episode, Source
from llmwiki.security.raw import redact_secrets

AROUND = 3  # lines shown before and after the episode's own lines


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    inside: bool  # one of the episode's own lines


@dataclass
class SourceExcerpt:
    lines: list[Line] = field(default_factory=list)
    # Why no lines are shown, in words ("" when there are lines).
    missing: str = ""


def line_span(locator: dict) -> tuple[int, int] | None:
    """The episode's first and last line (1-based), if its locator has them."""
    lines = locator.get("lines")
    if isinstance(lines, list) and len(lines) == 2 and all(isinstance(n, int) for n in lines):
        first, last = lines
    elif isinstance(locator.get("line"), int):
        first = last = locator["line"]
    else:
        return None
    if first < 1 or last < first:
        return None
    return first, last


def _zip_member(path: str, data: bytes, member: str, limits: archives.Limits) -> str | None:
    """One member's text; a page view should not inflate the whole archive for it."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            info = zf.getinfo(member)
            with zf.open(info) as fh:
                raw = fh.read(limits.max_entry_uncompressed + 1)
    except KeyError:
        # Names the import normalised differ from the stored entry: read it the import's way.
        return dict(archives.read_zip_texts(path, data, limits)).get(member)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(path, f"damaged archive ({exc})") from None
    return archives.decode_text(f"{path}!{member}", raw, limits)


def _source_text(source: Source, path: str) -> str | None:
    """The decoded text of the file `path` names: the source itself or a member of its zip."""
    data = blob_read(source.sha256)
    limits = archives.Limits()
    archive, sep, member = path.partition("!")
    if sep and archive.lower().endswith(".zip"):
        return _zip_member(archive, data, member, limits)
    return archives.decode_text(path, data, limits)


def source_excerpt(episode: Episode, around: int = AROUND) -> SourceExcerpt:
    """The episode's lines and `around` lines either side, from its source's raw text."""
    source = episode.source
    if source is None:
        return SourceExcerpt(missing="This episode was posted as an event; it has no file.")
    if source.status == Source.Status.ERASED:
        return SourceExcerpt(missing="The source was erased; its raw text is gone.")
    span = line_span(episode.locator or {})
    if span is None:
        return SourceExcerpt(missing="The locator names no lines in the source.")
    try:
        text = _source_text(source, (episode.locator or {}).get("path", source.path))
    except FileNotFoundError:
        return SourceExcerpt(missing="The source's raw file is missing from the blob store.")
    except InputError as exc:
        return SourceExcerpt(missing=f"The source's raw file cannot be read: {exc.reason}.")
    if text is None:
        return SourceExcerpt(missing="The file is no longer in the source's archive.")
    # Secrets are redacted again on the way out, keeping line breaks so numbers still hold.
    all_lines = redact_secrets(text, keep_lines=True)[0].split("\n")
    first, last = span
    if first > len(all_lines):
        return SourceExcerpt(missing="The source has fewer lines than the locator names.")
    start, end = max(1, first - around), min(len(all_lines), last + around)
    return SourceExcerpt(
        lines=[Line(n, all_lines[n - 1], first <= n <= last) for n in range(start, end + 1)]
    )
