"""Text disguised from a human reader or a filter: invisible and bidi characters, Unicode
tag characters, compatibility forms, mixed-script (homoglyph) words and encoded blobs.

Each check reports the disguise itself as a low risk and then undoes it, so that the
phrase and directive checks of ``instructions`` can read what a model would read.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Iterator

from llmwiki.security.instructions import addresses_ai, directive, phrase
from llmwiki.security.results import RiskCollector, quote

__all__ = ["find_encoded", "find_hidden_unicode", "find_homoglyphs"]

_INVISIBLE = re.compile("[\u200b-\u200d\u2060-\u2064\u180e\ufeff]")
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def find_hidden_unicode(text: str, lower: str, risks: RiskCollector) -> None:
    """Flag invisible, bidi and tag characters and read what they hide (non-ASCII text only)."""
    # Every invisible, bidi and tag code point sorts at or above U+180E, so a text whose
    # largest character is below that (Latin, Greek, Cyrillic, Arabic, ...) has none.
    if max(text) >= "\u180e":
        # A byte-order mark at the very start is an encoding artefact, not a hiding place.
        m = _INVISIBLE.search(text, 1 if text.startswith("\ufeff") else 0)
        if m:
            risks.add("risk:invisible_unicode", f"invisible character U+{ord(m.group()):04X}")
            # Zero-width characters are used to split trigger words so filters miss them.
            found = phrase(_INVISIBLE.sub("", text).lower())
            if found:
                risks.add(
                    "risk:injection_phrase",
                    f"split by zero-width characters: {quote(found)}",
                    high=True,
                )
        m = _BIDI.search(text)
        if m:
            name = unicodedata.name(m.group(), "")
            risks.add("risk:bidi_control", f"bidi control U+{ord(m.group()):04X} {name}".rstrip())
        runs = _TAG_RUN.findall(text)
        if runs:
            risks.add("risk:invisible_unicode", f"Unicode tag characters (U+{ord(runs[0][0]):04X})")
            # Tag characters mirror ASCII; decoded, they are text a model may still obey.
            hidden = " ".join("".join(chr(ord(c) - 0xE0000) for c in run) for run in runs)
            found = phrase(hidden.lower())
            if found:
                risks.add(
                    "risk:injection_phrase",
                    f"hidden in Unicode tag characters: {quote(found)}",
                    high=True,
                )
    # Fullwidth and other compatibility forms ("ｉｇｎｏｒｅ") fold to ASCII under NFKC.
    folded = unicodedata.normalize("NFKC", text).lower()
    if folded != lower:
        found = phrase(folded)
        if found:
            risks.add(
                "risk:injection_phrase", f"in compatibility characters: {quote(found)}", high=True
            )


# --------------------------------------------------------------------------- homoglyphs

# Letters of other scripts that render like a Latin letter (after Unicode's confusables
# data). The script of a letter comes from its Unicode name; this table only says which
# foreign letters pass for Latin ones, and is used to undo the disguise before reading.
_LOOKALIKES = {
    # Cyrillic
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "Х": "X", "У": "Y", "І": "I", "Ј": "J", "Ѕ": "S", "Ү": "Y", "Ԛ": "Q", "Ԝ": "W",
    "Һ": "H", "Ӏ": "I",
    # Greek
    "α": "a", "ο": "o", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
    "ϲ": "c", "ϳ": "j", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K",
    "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "զ": "q", "ց": "g",
}  # fmt: skip
# Latin letters that pass for a letter of those scripts, for a foreign word with a Latin
# intruder ("пpивет" with a Latin p).
_LATIN_LOOKALIKES = frozenset(_LOOKALIKES.values())
_FOLD = str.maketrans(_LOOKALIKES)
# Scripts whose letters are confusable with Latin ones; a run of one of them starts a check.
_FOREIGN_RUN = re.compile("[\u0370-\u03ff\u0400-\u052f\u0531-\u058f\u13a0-\u13ff]+")
_SPOOFED_SCRIPTS = frozenset({"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"})
_MAX_WORDS_REPORTED = 3
_LINE_CONTEXT = 400
_MAX_LINES_READ = 16


def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _mixed_words(text: str) -> Iterator[tuple[int, int]]:
    """Yield the spans of words that have letters of one of those scripts and Latin ones."""
    covered = 0
    n = len(text)
    for m in _FOREIGN_RUN.finditer(text):
        start, end = m.span()
        if start < covered:
            continue
        # A word of one script (the usual case in Greek or Cyrillic text) is left alone.
        if not ((start and text[start - 1].isalpha()) or (end < n and text[end].isalpha())):
            continue
        while start and text[start - 1].isalpha():
            start -= 1
        while end < n and text[end].isalpha():
            end += 1
        covered = end
        yield start, end


def _spoof(word: str) -> str | None:
    """Return the scripts that ``word`` mixes to pass for one script, or None."""
    latin: list[str] = []
    foreign: list[str] = []
    scripts = set()
    for ch in word:
        script = _script(ch)
        if script == "LATIN":
            latin.append(ch)
        elif script in _SPOOFED_SCRIPTS:
            foreign.append(ch)
            scripts.add(script.title())
    if not latin or not foreign:
        return None
    if len(latin) >= len(foreign):
        if not any(ch in _LOOKALIKES for ch in foreign):
            return None  # "μs", "kΩ", "ΔT": a symbol next to Latin letters, not a disguise
        if scripts == {"Greek"} and (len(latin) <= 2 or "".join(latin).isupper()):
            return None  # scientific notation such as "TNFα" or "NF-κB"
    elif not any(ch in _LATIN_LOOKALIKES for ch in latin):
        return None
    return "Latin+" + "+".join(sorted(scripts))


def find_homoglyphs(text: str, risks: RiskCollector) -> None:
    """Flag words that mix Latin with look-alike letters, and read the text they disguise."""
    spans = []
    for start, end in _mixed_words(text):
        spoof = _spoof(text[start:end])
        if spoof:
            spans.append((start, end, spoof))
    if not spans:
        return
    for start, end, scripts in spans[:_MAX_WORDS_REPORTED]:
        risks.add("risk:homoglyph", f"mixed-script word {quote(text[start:end])} ({scripts})")
    # Read the text with every look-alike folded, not only those in mixed words: an
    # all-Cyrillic "АІ" next to a spoofed word is part of the same disguise. Folding maps
    # one letter to one, so offsets in ``text`` stay valid in ``folded``.
    folded = text.translate(_FOLD)
    found = phrase(folded.lower())
    if found:
        risks.add("risk:injection_phrase", f"in homoglyph-spoofed words: {quote(found)}", high=True)
        return
    # A disguised word is there to slip an instruction past a filter: read its line (each
    # line once, and only the first few: hostile input can hold a disguised word per line).
    lines_read = set()
    for start, end, _ in spans:
        if len(lines_read) >= _MAX_LINES_READ:
            return
        line_start = folded.rfind("\n", max(0, start - _LINE_CONTEXT), start) + 1
        line_start = max(line_start, start - _LINE_CONTEXT)
        line_end = folded.find("\n", end, end + _LINE_CONTEXT)
        line_end = min(len(folded), end + _LINE_CONTEXT) if line_end < 0 else line_end
        if line_start in lines_read:
            continue
        lines_read.add(line_start)
        line = folded[line_start:line_end].lower()
        order = directive(line)
        if order and (order.score >= 2 or addresses_ai(line)):
            risks.add(
                "risk:homoglyph",
                f"homoglyph-spoofed text gives an order: {quote(order.evidence)}",
                high=True,
            )
            return


# --------------------------------------------------------------------------- encoded blobs

_B64_RUN = re.compile(r"[A-Za-z0-9+/_-](?<![A-Za-z0-9+/_-].)[A-Za-z0-9+/_-]{23,}={0,2}")
# The same runs found in the translated bytes, where the literal prefix makes them cheap.
_B64_GATE_START = b"a" * 24
_B64_GATE_RUN = re.compile(_B64_GATE_START + b"a*")
_HEX_RUN = re.compile(r"[0-9A-Fa-f]+")
_HASH_HEX_LENGTHS = frozenset({32, 40, 56, 64, 96, 128})  # md5, sha1, sha224/256/384/512
_BLOB_MIN = 80
_HEX_BLOB_MIN = 64
_MAX_DECODE_CHARS = 8192
_MAX_DECODES = 16
_PRINTABLE = bytes(range(0x20, 0x7F)) + b"\t\n\r"


def _inspect_blob(run: str, decode: bool) -> tuple[str | None, str | None]:
    """Return (reason it looks like an encoded payload, its text if it decodes to text)."""
    body = run.rstrip("=")
    n = len(body)
    reason = None
    if _HEX_RUN.fullmatch(body):
        if n in _HASH_HEX_LENGTHS:
            return None, None  # a digest: flagging or decoding it would only add noise
        if n >= _HEX_BLOB_MIN:
            reason = f"hex blob of {n} chars"
        if not decode or n % 2:
            return reason, None
        data = bytes.fromhex(body[:_MAX_DECODE_CHARS])
    else:
        # Paths and slugs are long runs too; encoded bytes mix cases and digits.
        mixed = body.upper() != body and body.lower() != body
        if n >= _BLOB_MIN and mixed and not body.replace("-", "").replace("_", "").isalpha():
            reason = f"base64-like blob of {n} chars"
        url = "-" in body or "_" in body
        if not decode or (url and ("+" in body or "/" in body)):
            return reason, None
        chunk = body[:_MAX_DECODE_CHARS]
        chunk = chunk[: len(chunk) - len(chunk) % 4]
        try:
            data = (base64.urlsafe_b64decode if url else base64.b64decode)(chunk)
        except (binascii.Error, ValueError):
            return reason, None
    if not data or len(data.translate(None, _PRINTABLE)) * 10 > len(data):
        return reason, None
    return reason, data.decode("latin-1")


def _blob_runs(text: str, long_gate: bytes | None) -> Iterator[str]:
    """Yield runs of 24+ base64 characters (plus up to two "=" of padding)."""
    if long_gate is None:
        for m in _B64_RUN.finditer(text):
            yield m.group()
        return
    for m in _B64_GATE_RUN.finditer(long_gate):
        start, end = m.span()
        pad = 0
        while pad < 2 and end + pad < len(text) and text[end + pad] == "=":
            pad += 1
        yield text[start : end + pad]


def find_encoded(text: str, long_gate: bytes | None, risks: RiskCollector) -> None:
    """Flag base64 and hex payloads and read the first few that decode to text."""
    if long_gate is not None and _B64_GATE_START not in long_gate:
        return
    for i, run in enumerate(_blob_runs(text, long_gate)):
        reason, decoded = _inspect_blob(run, decode=i < _MAX_DECODES)
        if reason:
            risks.add("risk:encoded_blob", reason)
        found = phrase(decoded.lower()) if decoded else None
        if found:
            risks.add("risk:injection_phrase", f"in an encoded blob: {quote(found)}", high=True)
