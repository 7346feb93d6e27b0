"""Prompt-injection screening: phrases, role tags, hidden text, encoded blobs, exfiltration.

Every check sits behind a cheap substring gate; the patterns open with literals and are
written so that no input can make them backtrack super-linearly.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterator

from llmwiki.security.results import RiskFinding

__all__ = ["HIGH_RISK", "find_risks"]

# Flags that on their own make an input high risk (the caller quarantines it).
HIGH_RISK = frozenset({"risk:injection_phrase", "risk:exfil_image"})

# A flood of findings helps nobody reading a review queue and costs memory per episode.
_MAX_RISKS = 25
_QUOTE_CHARS = 40

_ARTICLE = r"(?:(?:the|your|my|these|those|any|all)\s+)?"
_IGNORE_REST = (
    r"\s+(?:(?:all|any)\s+)?(?:(?:of\s+)?(?:the|your|my|these|those)\s+)?"
    r"(?:previous|prior|above|preceding|earlier|former|foregoing|system|original|safety)\s+"
    r"(?:instructions?|prompts?|directions|directives|rules|guidelines|guardrails|messages"
    r"|context|constraints|polic(?:y|ies))\b"
    r"|\s+(?:all|any)\s+(?:instructions?|prompts?|rules|guidelines)\b"
    r"|\s+(?:everything|all)\s+(?:above|before|prior|you\s+(?:were|have\s+been)\s+told)\b"
)
_DONT_TELL_REST = (
    r"\s+(?:tell|inform|alert|notify|warn|mention\s+this\s+to)\s+(?:(?:the|your|any)\s+)?"
    r"(?:reviewers?|users?|humans?|maintainers?|admins?|administrators?|operators?"
    r"|moderators?)\b"
)
_BYPASS_REST = (
    r"\s+(?:the\s+)?(?:human\s+)?(?:review|reviewers?|approval|moderation|safety\s+checks?)\b"
)


def _phrase_rule(gates: tuple[str, ...], pattern: str) -> tuple[tuple[str, ...], re.Pattern[str]]:
    return gates, re.compile(pattern)


# Matched against lower-cased text. Each rule runs only when one of its gate words occurs,
# and each pattern opens with a literal word followed by literal words joined by \s+, so
# there is nothing ambiguous to backtrack into.
_PHRASE_RULES = (
    *(_phrase_rule((w,), f"{w}(?:{_IGNORE_REST})") for w in ("ignore", "disregard", "forget")),
    _phrase_rule(("override",), r"override\s+" + _ARTICLE + r"(?:previous\s+|prior\s+|system\s+)?"
                 r"(?:instructions?|rules|guidelines|guardrails|safety|polic(?:y|ies))\b"),
    _phrase_rule(("now",), r"you\s+are\s+now\s+(?:a|an|the|my|in|no\s+longer|free|unrestricted"
                 r"|jailbroken|dan)\b"),
    *(
        _phrase_rule((w,), rf"{w}\s+(?:this|the|these|all|my)\s+"
                     r"(?:memory|memories|candidates?|claims?|submissions?)\b")
        for w in ("approve", "accept", "promote")
    ),
    _phrase_rule(("mark",), r"mark\s+(?:(?:this|it|these|them|me|the\s+\w+)\s+)?as\s+"
                 r"(?:trusted|approved|verified|reviewed)\b"),
    _phrase_rule(("approved", "verified", "trusted"), r"(?:this|the)\s+(?:memory|candidate|claim)"
                 r"\s+(?:is|has\s+been)\s+(?:pre-?)?(?:approved|verified|trusted)\b"),
    _phrase_rule(("prompt",), r"(?:reveal|print|show|output|repeat|leak|dump|display|ignore"
                 r"|override|disregard|replace|change)\s+(?:me\s+)?(?:(?:your|the|my)\s+)?"
                 r"(?:(?:full|entire|original|hidden|secret|initial)\s+)?system\s+prompt\b"
                 r"|new\s+system\s+prompt\b"),
    *(_phrase_rule((gate,), neg + _DONT_TELL_REST)
      for gate, neg in (("not", r"do\s+not"), ("don", r"don['’]?t"), ("never", "never"))),
    _phrase_rule(("instruction",), r"(?:new|updated|real|actual|hidden)\s+instructions?\s*:"),
    *(_phrase_rule((w,), w + _BYPASS_REST) for w in ("bypass", "circumvent", "evade")),
)  # fmt: skip

_LINE_LEAD = frozenset(" \t>*#")
# Role and control tags: (gate, pattern, must-start-a-line). Patterns run on lower text.
_ROLE_RULES = (
    (
        "<",
        re.compile(r"<(?:\|[a-z_]{2,30}\||</?sys>|/?(?:system|assistant|user|instructions?)|/s)>"),
        False,
    ),
    ("[", re.compile(r"\[/?inst\]"), False),
    ("system", re.compile(r"system[ \t]*:"), True),
    ("#", re.compile(r"#[ \t]*(?:system|instructions?)\b"), True),
)

_INVISIBLE = re.compile("[\u200b-\u200d\u2060-\u2064\u180e\ufeff]")
_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")

_EXFIL_IMAGE = re.compile(
    r"!\[[^\[\]\n]{0,300}\]\(\s*<?(https?://[^\s)>]{1,2048})"
    r"|<img\b[^<>]{0,500}?\bsrc\s*=\s*[\"']?(https?://[^\s\"'>]{1,2048})",
    re.I,
)
_HTML_COMMENT = re.compile(r"<!--(.*?)(?:-->|\Z)", re.S)
# A comment that addresses a model by name is a weak signal even without a known phrase.
_ADDRESSES_AI = re.compile(
    r"\b(?:ai|assistant|llm|language\s+model|agent|chatbot|gpt|claude|gemini|copilot)\s*[:,]"
)

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


def _quote(s: str) -> str:
    s = " ".join(s.split())
    if len(s) > _QUOTE_CHARS:
        s = s[: _QUOTE_CHARS - 1] + "…"
    return repr(s)


def _word_start(text: str, pos: int) -> bool:
    return pos == 0 or not text[pos - 1].isalnum()


def _phrase(text_lower: str) -> str | None:
    """Return the first injection phrase in already lower-cased text."""
    for gates, regex in _PHRASE_RULES:
        for gate in gates:
            if gate in text_lower:
                for m in regex.finditer(text_lower):
                    if _word_start(text_lower, m.start()):
                        return m.group()
                break
    return None


def _role_tag(text: str, lower: str) -> str | None:
    for gate, regex, line_start in _ROLE_RULES:
        if gate not in lower:
            continue
        for m in regex.finditer(lower):
            start = m.start()
            if line_start:
                bol = lower.rfind("\n", 0, start) + 1
                if not _LINE_LEAD.issuperset(lower[bol:start]):
                    continue
            return text[start : m.end()] if len(text) == len(lower) else m.group()
    return None


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


def find_risks(
    text: str, lower: str, raw: bytes | None, long_gate: bytes | None
) -> list[RiskFinding]:
    risks: list[RiskFinding] = []

    def add(flag: str, reason: str) -> None:
        finding = RiskFinding(flag, reason)
        if len(risks) < _MAX_RISKS and finding not in risks:
            risks.append(finding)

    phrase = _phrase(lower)
    if phrase:
        add("risk:injection_phrase", f"instruction-like phrase {_quote(phrase)}")

    tag = _role_tag(text, lower)
    if tag:
        add("risk:role_tag", f"role/control tag {_quote(tag.strip())}")

    # Every invisible, bidi and tag code point sorts at or above U+180E, so a text whose
    # largest character is below that (Latin, Greek, Cyrillic, Arabic, ...) has none.
    if raw is None:
        if max(text) >= "\u180e":
            _find_unicode_risks(text, add)
        # Fullwidth and other compatibility forms ("ｉｇｎｏｒｅ") fold to ASCII under NFKC.
        folded = unicodedata.normalize("NFKC", text).lower()
        if folded != lower:
            phrase = _phrase(folded)
            if phrase:
                add("risk:injection_phrase", f"in compatibility characters: {_quote(phrase)}")

    if "<!--" in text:
        for m in _HTML_COMMENT.finditer(text):
            body = m.group(1).lower()
            phrase = _phrase(body)
            if phrase:
                add("risk:html_comment_instruction", f"HTML comment says {_quote(phrase)}")
                add("risk:injection_phrase", f"in an HTML comment: {_quote(phrase)}")
            elif _ADDRESSES_AI.search(body):
                add("risk:html_comment_instruction", "HTML comment addressed to an AI/agent")

    if "![" in text or "<img" in lower:
        for m in _EXFIL_IMAGE.finditer(text):
            url = m.group(1) or m.group(2)
            if "?" in url:
                authority = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
                host = _quote(authority.rsplit("@", 1)[-1])
                add("risk:exfil_image", f"image loads external URL with query string ({host})")

    if long_gate is None or _B64_GATE_START in long_gate:
        for i, run in enumerate(_blob_runs(text, long_gate)):
            reason, decoded = _inspect_blob(run, decode=i < _MAX_DECODES)
            if reason:
                add("risk:encoded_blob", reason)
            phrase = _phrase(decoded.lower()) if decoded else None
            if phrase:
                add("risk:injection_phrase", f"in an encoded blob: {_quote(phrase)}")
    return risks


def _find_unicode_risks(text: str, add: Callable[[str, str], None]) -> None:
    # A byte-order mark at the very start is an encoding artefact, not a hiding place.
    m = _INVISIBLE.search(text, 1 if text.startswith("\ufeff") else 0)
    if m:
        add("risk:invisible_unicode", f"invisible character U+{ord(m.group()):04X}")
        # Zero-width characters are used to split trigger words so filters miss them.
        phrase = _phrase(_INVISIBLE.sub("", text).lower())
        if phrase:
            add("risk:injection_phrase", f"split by zero-width characters: {_quote(phrase)}")
    m = _BIDI.search(text)
    if m:
        name = unicodedata.name(m.group(), "")
        add("risk:bidi_control", f"bidi control U+{ord(m.group()):04X} {name}".rstrip())
    runs = _TAG_RUN.findall(text)
    if runs:
        add("risk:invisible_unicode", f"Unicode tag characters (U+{ord(runs[0][0]):04X})")
        # Tag characters mirror ASCII; decoded, they are text a model may still obey.
        hidden = " ".join("".join(chr(ord(c) - 0xE0000) for c in run) for run in runs)
        phrase = _phrase(hidden.lower())
        if phrase:
            add("risk:injection_phrase", f"hidden in Unicode tag characters: {_quote(phrase)}")
