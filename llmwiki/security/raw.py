"""What the raw layer keeps of a source in which the gate found secrets: its text redacted.

The episodes of such a source were redacted one by one; the stored file must not keep the
credential either. Each text of the file is redacted with the same detectors. If a secret
found in an episode cannot be found again in the file's text (an importer decoded it from
an escaped form), that text is replaced by a notice: no live credential is kept anywhere.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable

from llmwiki.archives import decode_text, read_zip_texts
from llmwiki.errors import InputError
from llmwiki.security.secrets import LONG_RUN_GATE, find_secrets, redact

# Fixed entry metadata, so the same original always gives the same redacted bytes.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
WITHHELD_TEXT = (
    "[REDACTED:source] The gate found a secret in this file that it could not locate in "
    "its raw text, so the text is not kept; its episodes hold the redacted content.\n"
)


def redact_secrets(text: str, *, keep_lines: bool = False) -> tuple[str, set[str]]:
    """`text` with every secret the detectors find redacted, and their fingerprints;
    `keep_lines` keeps the line breaks of a multi-line secret (see `redact`)."""
    raw = text.encode("ascii") if text.isascii() else None
    gate = raw.translate(LONG_RUN_GATE) if raw is not None else None
    spans = find_secrets(text, text.lower(), raw, gate)
    if not spans:
        return text, set()
    redacted, findings = redact(text, spans, keep_lines=keep_lines)
    return redacted, {f.fingerprint for f in findings}


def redact_texts(texts: Iterable[tuple[str, str]], expected: set[str]) -> list[tuple[str, str]]:
    """Redact each `(name, text)`; `expected` are the fingerprints the episodes carried."""
    out: list[tuple[str, str]] = []
    found: set[str] = set()
    for name, text in texts:
        redacted, fingerprints = redact_secrets(text)
        out.append((name, redacted))
        found |= fingerprints
    if expected - found:
        return [(name, WITHHELD_TEXT) for name, _ in out]
    return out


def redacted_file(texts: list[tuple[str, str]], expected: set[str], *, is_zip: bool) -> bytes:
    """The bytes to store for a file (a plain text, or a zip of texts) that held secrets."""
    redacted = redact_texts(texts, expected)
    if not is_zip:
        return "".join(text for _, text in redacted).encode("utf-8")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in redacted:
            archive.writestr(
                zipfile.ZipInfo(name, _ZIP_DATE),
                text.encode("utf-8"),
                compress_type=zipfile.ZIP_DEFLATED,
            )
    return buffer.getvalue()


def redacted_stored(name: str, data: bytes, expected: set[str], *, is_event: bool) -> bytes:
    """Redact a blob stored as received before the raw layer redacted secrets.

    `name` is the source's path; an agent's posted event (`is_event`) is JSON whose
    content is redacted in place.
    """
    try:
        if is_event:
            event = json.loads(data)
            [(_, event["content"])] = redact_texts([("content", event["content"])], expected)
            return json.dumps(event, sort_keys=True, ensure_ascii=False).encode()
        is_zip = name.lower().endswith(".zip")
        texts = read_zip_texts(name, data) if is_zip else [(name, decode_text(name, data))]
    except (InputError, ValueError, KeyError, TypeError):
        return WITHHELD_TEXT.encode()
    return redacted_file(texts, expected, is_zip=is_zip)
