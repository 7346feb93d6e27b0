"""Secret detection and redaction: credential patterns, generic assignments, echoes.

Every detector sits behind a cheap substring prefilter, all regexes are precompiled and
written so that no input can make them backtrack super-linearly.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from llmwiki.security.randomness import LONE_TOKEN, TOKEN_MIN, random_tokens
from llmwiki.security.results import SecretFinding

__all__ = ["LONG_RUN_GATE", "find_secrets", "redact"]


@dataclass(frozen=True, slots=True)
class _Detector:
    kind: str
    # Substrings of which at least one must occur before the regex is worth running.
    hints: tuple[str, ...]
    regex: re.Pattern[str]
    group: int | str = 0
    # Characters that may not precede a match. Checked in Python rather than with a
    # leading look-behind, because a pattern that opens with a literal lets the regex
    # engine jump straight to candidates instead of trying every position.
    not_after: str | None = None
    accept: Callable[[str], bool] | None = None
    hints_lower: bool = False
    # Token-shaped secrets are at least TOKEN_MIN characters of [A-Za-z0-9_-] in a row.
    # Their hints are looked for only inside such runs, found once per text at C speed, so
    # ordinary prose (no runs) skips them all and a text with one run checks a few bytes.
    token: bool = True


_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_TOKEN_CHARS = _ALNUM + "_-"
# Character-class checks only need a sample; hostile input can be megabytes long.
_CLASS_SAMPLE = 4096
_MAX_ECHO_VALUES = 64


def _gate_table(chars: str, mark: str) -> bytes:
    """Build a bytes.translate table mapping ``chars`` to ``mark`` and all else to space.

    Translating a text's bytes and then searching for a run of ``mark`` answers "is there
    a run of these characters?" at C speed; the regex engine scans character classes
    roughly ten times slower than that on this kind of input.
    """
    return bytes(ord(mark) if chr(b) in chars else 0x20 for b in range(256))


_TOKEN_GATE = _gate_table(_TOKEN_CHARS, "a")
_TOKEN_RUN_START = b"a" * TOKEN_MIN
# Base64 characters are a superset of token characters, so one check of this gate tells
# both the token detectors and the encoded-blob scan whether there is anything to do.
_B64_CHARS = _ALNUM + "+/_-"
LONG_RUN_GATE = _gate_table(_B64_CHARS, "a")
# Spelled as a literal prefix so the engine can use its fast substring search.
_TOKEN_RUN = re.compile(re.escape(_TOKEN_RUN_START) + b"a*")

_PLACEHOLDERS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "secret",
        "token",
        "changeme",
        "changeit",
        "example",
        "redacted",
        "placeholder",
        "undefined",
        "required",
        "optional",
        "string",
        "none",
        "null",
        "true",
        "false",
        "yourpassword",
        "mypassword",
        "secretkey",
        "apikey",
        "api_key",
    }
)
_PLACEHOLDER_WORDS = ("your_", "your-", "example", "placeholder", "redacted", "xxxx", "****")
_DOTTED_IDENT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _is_placeholder(value: str) -> bool:
    low = value.lower()
    if low in _PLACEHOLDERS or len(set(low)) <= 2:
        return True
    if low[0] in "$%{<" or "{{" in low or "${" in low:
        # Template or environment references point at a secret; they are not one.
        return True
    return any(w in low for w in _PLACEHOLDER_WORDS)


def _accept_password_in_url(value: str) -> bool:
    return not _is_placeholder(value)


def _char_classes(value: str) -> tuple[bool, bool, bool, bool]:
    lower = upper = digit = symbol = False
    for ch in value:
        if ch.isdigit():
            digit = True
        elif ch.islower():
            lower = True
        elif ch.isupper():
            upper = True
        elif ch not in "_.-":
            symbol = True
    return lower, upper, digit, symbol


def _accept_generic(value: str, quoted: bool) -> bool:
    # Conservative on purpose: prose such as "the token: see the docs" or code such as
    # "token = self.session_token" must not be redacted, so a value needs the texture of a
    # credential (length plus a digit or symbol) before it counts.
    if len(value) < 8 or _is_placeholder(value):
        return False
    low = value.lower()
    if low.startswith(("http://", "https://", "file:", "/")) or _DOTTED_IDENT.fullmatch(value):
        return False
    lower, upper, digit, symbol = _char_classes(value[:_CLASS_SAMPLE])
    if not (lower or upper):
        return False
    if digit or symbol:
        return True
    return quoted and lower and upper


def _accept_letters_and_digits(value: str) -> bool:
    # Real keys mix letters and digits; "sk-" or "hf_" plus one long word does not.
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    # A truncated block is redacted to the end of the text: half a key is still a key.
    r".*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)

# Anchored on the literal "://" so the engine skips straight to URLs; the scheme is read
# backwards in Python. Any scheme counts: user:password@ in a URL is a credential.
_URL_CREDENTIALS = re.compile(r"://[^\s:/@?#]*:(?P<pw>[^\s@/?#]+)@")
_URL_KEY = re.compile(r"://(?P<key>[A-Za-z0-9_-]{16,})@")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_DB_SCHEMES = frozenset(
    {
        "postgres",
        "postgresql",
        "mysql",
        "mariadb",
        "mongodb",
        "mongodb+srv",
        "redis",
        "rediss",
        "amqp",
        "amqps",
        "mssql",
        "sqlserver",
        "cockroachdb",
    }
)

_DETECTORS: tuple[_Detector, ...] = (
    _Detector("private_key", ("PRIVATE KEY",), _PEM, token=False),
    _Detector(
        "aws_access_key",
        ("AKIA", "ASIA"),
        re.compile(r"A(?:KI|SI)A[0-9A-Z]{16}(?![A-Za-z0-9])"),
        not_after=_ALNUM,
    ),
    _Detector(
        "aws_secret_key",
        ("aws",),
        re.compile(
            r"(?i)aws_?secret_?(?:access_?)?key[\"']?[ \t]*[:=][ \t]*[\"']?"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        1,
        hints_lower=True,
        token=False,
    ),
    _Detector(
        "github_pat",
        ("github_pat_",),
        re.compile(r"github_pat_[A-Za-z0-9_]{60,255}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        re.compile(r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9])"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "gitlab_token",
        ("glpat-",),
        re.compile(r"glpat-[A-Za-z0-9_-]{20,}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "anthropic_api_key",
        ("sk-ant-",),
        re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "openai_api_key",
        ("sk-",),
        re.compile(
            r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"
            r"|(?!ant-)[A-Za-z0-9]{20,}(?![A-Za-z0-9_-]))"
        ),
        not_after=_TOKEN_CHARS,
        accept=_accept_letters_and_digits,
    ),
    _Detector(
        "stripe_key",
        ("_live_", "_test_"),
        re.compile(r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "google_api_key",
        ("AIza",),
        re.compile(r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "slack_token",
        ("xox", "xapp-"),
        re.compile(r"x(?:ox[abprs]|app)-[0-9A-Za-z-]{15,}"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "slack_webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/]{20,}"),
        token=False,
    ),
    _Detector(
        "telegram_bot_token",
        (":AA",),
        re.compile(r"[0-9]{8,10}:AA[0-9A-Za-z_-]{33}(?![0-9A-Za-z_-])"),
        not_after="0123456789",
        token=False,
    ),
    _Detector(
        "huggingface_token",
        ("hf_",),
        re.compile(r"hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])"),
        not_after=_TOKEN_CHARS,
        accept=_accept_letters_and_digits,
    ),
    _Detector(
        "npm_token",
        ("npm_",),
        re.compile(r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        not_after=_TOKEN_CHARS,
    ),
    _Detector(
        "jwt",
        ("eyJ",),
        # The look-behind keeps the engine from retrying at every "eyJ" inside one long
        # run, which would make a failing match quadratic in the run's length.
        re.compile(
            r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
        ),
    ),
    _Detector(
        "basic_auth",
        ("authorization",),
        re.compile(
            r"(?i)authorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+([A-Za-z0-9+/]{8,}=*)"
        ),
        1,
        hints_lower=True,
        token=False,
    ),
    _Detector(
        "bearer_token",
        ("authorization",),
        re.compile(
            r"(?i)authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|token|bot)[ \t]+"
            r"([A-Za-z0-9._~+/-]{8,}=*)"
        ),
        1,
        hints_lower=True,
        token=False,
    ),
    _Detector(
        # A bare "Bearer <token>" needs more length and a digit to tell it from prose.
        "bearer_token",
        ("bearer",),
        re.compile(r"(?i)bearer[ \t]+([A-Za-z0-9._~+/-]{20,}=*)"),
        1,
        not_after=_ALNUM,
        accept=_accept_letters_and_digits,
        hints_lower=True,
        token=False,
    ),
    _Detector(
        "url_credentials",
        ("://",),
        _URL_CREDENTIALS,
        "pw",
        accept=_accept_password_in_url,
        token=False,
    ),
    _Detector(
        # A key as the user part of a URL (an error-reporting DSN, a token-in-URL remote):
        # the host reads it as a credential even with no password after it.
        "url_credentials",
        ("://",),
        _URL_KEY,
        "key",
        accept=_accept_letters_and_digits,
        token=False,
    ),
)

# Generic "key = value" assignments. One pattern per key word, each opening with a
# literal, run over the lower-cased text; the value is judged on the original text.
_ASSIGNED_VALUE = (
    # The key word must end the key name: "token_count = 12345678" is not a secret.
    r"(?![a-z0-9_-])[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?:\"(?P<dq>[^\"\s]{8,})\"|'(?P<sq>[^'\s]{8,})'|(?P<bare>[^\s\"'`,;(){}\[\]<>]{8,}))"
)
_GENERIC_KEYS = {
    "pass": r"pass(?:word|wd|phrase)?",
    "pwd": r"pwd",
    "secret": r"secret(?:[_-]?key)?",
    "api": r"api(?:[_-]?key)",
    "access": r"access[_-]?key",
    "private": r"private[_-]?key",
    "token": r"token",
    "credential": r"credentials?",
}
_GENERIC = {
    hint: (re.compile(key + _ASSIGNED_VALUE), re.compile(key + _ASSIGNED_VALUE, re.I))
    for hint, key in _GENERIC_KEYS.items()
}


# Private keys come first: their bodies may contain token-like runs that must not be
# claimed by another detector and leave the rest of the key in the text.
_LEADING = tuple(d for d in _DETECTORS if d.kind == "private_key")
_TOKEN_DETECTORS = tuple(d for d in _DETECTORS if d.token)
_TRAILING = tuple(d for d in _DETECTORS if not d.token and d not in _LEADING)
_NON_TOKEN_DETECTORS = _LEADING + _TRAILING
_ALL_DETECTORS = _LEADING + _TOKEN_DETECTORS + _TRAILING
_FOLDED = {
    d.regex: re.compile(d.regex.pattern.removeprefix("(?i)")) for d in _DETECTORS if d.hints_lower
}


def _prev_ok(text: str, start: int, not_after: str) -> bool:
    return start == 0 or text[start - 1] not in not_after


def _fingerprint(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# Unicode's format characters (category Cf: zero-width spaces and joiners, bidi controls,
# the byte-order mark, tag characters, ...) as of the Unicode version Python ships. They
# render as nothing, so one inside a key ("AKIA" U+200B "...") hides it from the patterns
# but not from a reader who copies it.
_FORMAT_CHARS = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]"
)


def find_secrets(
    text: str, lower: str, raw: bytes | None, long_gate: bytes | None
) -> list[tuple[int, int, str]]:
    """Return non-overlapping ``(start, end, kind)`` spans, earlier detectors winning.

    A text with format characters (never ASCII) is read a second time without them; a
    secret found only that way is redacted over its span in ``text``, hidden characters
    included.
    """
    spans = _find_spans(text, lower, raw, long_gate)
    if raw is not None:
        return spans
    hidden = [m.start() for m in _FORMAT_CHARS.finditer(text)]
    if not hidden:
        return spans
    visible = _FORMAT_CHARS.sub("", text)
    ascii_raw = visible.encode("ascii") if visible.isascii() else None
    found = _find_spans(
        visible,
        visible.lower(),
        ascii_raw,
        ascii_raw.translate(LONG_RUN_GATE) if ascii_raw is not None else None,
    )
    if not found:
        return spans
    # The k-th removed character sat at ``hidden[k] - k`` in ``visible``: a position there
    # moves right by the number of removed characters at or before it.
    shifts = [pos - k for k, pos in enumerate(hidden)]

    def original(i: int) -> int:
        return i + bisect.bisect_right(shifts, i)

    mapped = [(original(start), original(end - 1) + 1, kind) for start, end, kind in found]
    return _union(spans, mapped)


def _union(
    first: list[tuple[int, int, str]], second: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """Merge two sorted span lists; overlapping spans become one, named after the earliest
    (``first``'s on a tie)."""
    merged: list[tuple[int, int, str]] = []
    # Sorting puts ``first``'s span ahead of an equal-start span of ``second``.
    order = sorted([(s, 0, e, k) for s, e, k in first] + [(s, 1, e, k) for s, e, k in second])
    for start, _, end, kind in order:
        if merged and start < merged[-1][1]:
            prev_start, prev_end, prev_kind = merged[-1]
            merged[-1] = (prev_start, max(prev_end, end), prev_kind)
        else:
            merged.append((start, end, kind))
    return merged


def _find_spans(
    text: str, lower: str, raw: bytes | None, long_gate: bytes | None
) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []  # sorted, non-overlapping
    if raw is None or long_gate is None:
        runs = text
    elif _TOKEN_RUN_START in long_gate:
        gate = raw.translate(_TOKEN_GATE)
        runs = " ".join(text[m.start() : m.end()] for m in _TOKEN_RUN.finditer(gate))
    else:
        runs = ""
    # Lower-casing can change the length of a few non-ASCII strings; offsets found in
    # ``lower`` are only valid for ``text`` when the lengths agree.
    aligned = len(lower) == len(text)
    _detected(spans, text, lower, runs, aligned)
    _generic(spans, text, lower, aligned)
    if long_gate is None or _TOKEN_RUN_START in long_gate:
        _random(spans, text)
    _echoes(spans, text)
    return spans


def _keep(spans: list[tuple[int, int, str]], text: str, start: int, end: int, kind: str) -> None:
    """Add a span unless it is empty, a marker, or overlaps one found before."""
    if start >= end or text.startswith("[REDACTED:", start):
        return  # a marker from an earlier pass is not a secret
    i = bisect.bisect_left(spans, (start,))
    if i > 0 and spans[i - 1][1] > start:
        return
    if i < len(spans) and spans[i][0] < end:
        return
    spans.insert(i, (start, end, kind))


def _detected(spans: list, text: str, lower: str, runs: str, aligned: bool) -> None:
    """What the detectors for known formats find, those whose hints occur."""
    for det in _ALL_DETECTORS if runs else _NON_TOKEN_DETECTORS:
        hay = runs if det.token else lower if det.hints_lower else text
        for hint in det.hints:
            if hint in hay:
                break
        else:
            continue
        if det.hints_lower and aligned:
            # Case-insensitive patterns lose the engine's literal-prefix search; match the
            # lower-cased copy case-sensitively instead (the values' classes ignore case).
            matches = _FOLDED[det.regex].finditer(lower)
        else:
            matches = det.regex.finditer(text)
        for m in matches:
            if det.not_after is not None and not _prev_ok(text, m.start(), det.not_after):
                continue
            start, end = m.span(det.group)
            if det.accept is not None and not det.accept(text[start:end]):
                continue
            kind = det.kind
            if det.regex is _URL_CREDENTIALS:
                i = m.start()
                while i > 0 and text[i - 1] in _SCHEME_CHARS:
                    i -= 1
                scheme = text[i : m.start()].lower()
                if not scheme[:1].isalpha():
                    continue
                if scheme in _DB_SCHEMES:
                    kind = "connection_string"
            _keep(spans, text, start, end, kind)


def _generic(spans: list, text: str, lower: str, aligned: bool) -> None:
    """Values assigned to a secret-sounding name (`password = …`, `"api_key": "…"`)."""
    for hint, (exact, folded) in _GENERIC.items():
        if hint not in lower:
            continue
        for m in exact.finditer(lower) if aligned else folded.finditer(text):
            if not _prev_ok(lower if aligned else text, m.start(), _ALNUM):
                continue
            if m.group("bare") is not None:
                start, end = m.span("bare")
                # Sentence punctuation after a bare value is not part of it.
                while end > start and text[end - 1] in ".!?":
                    end -= 1
                quoted = False
            else:
                start, end = m.span("dq" if m.group("dq") is not None else "sq")
                quoted = True
            if _accept_generic(text[start:end], quoted):
                _keep(spans, text, start, end, "generic_secret")


def _random(spans: list, text: str) -> None:
    """Tokens random enough to be keys, whatever names them."""
    for start, end in random_tokens(text):
        _keep(spans, text, start, end, "random_token")
    # A message that is nothing but one long token is a value pasted on its own, a key
    # more often than anything: a commit hash comes with words ("fixed in 3f9a…").
    bare = text.strip().strip("`'\"")
    if LONE_TOKEN.fullmatch(bare) and _accept_letters_and_digits(bare):
        start = text.index(bare)
        _keep(spans, text, start, start + len(bare), "random_token")


def _echoes(spans: list, text: str) -> None:
    """A value known to be a secret is redacted wherever else it appears, even where no
    detector would have recognised it (a bare query parameter, a quoted echo)."""
    seen: set[str] = set()
    for start, end, kind in list(spans):
        value = text[start:end]
        if len(value) < 8 or value in seen:
            continue
        seen.add(value)
        if len(seen) > _MAX_ECHO_VALUES:
            break  # each value costs a pass over the text; hostile input may hold thousands
        pos = text.find(value)
        while pos != -1:
            _keep(spans, text, pos, pos + len(value), kind)
            pos = text.find(value, pos + len(value))


def redact(
    text: str, spans: list[tuple[int, int, str]], *, keep_lines: bool = False
) -> tuple[str, tuple[SecretFinding, ...]]:
    """`text` with each span replaced by its marker; `keep_lines` keeps a multi-line
    secret's line breaks after the marker, so the lines below keep their numbers."""
    parts: list[str] = []
    findings: dict[tuple[str, str], SecretFinding] = {}
    pos = 0
    for start, end, kind in spans:
        parts.append(text[pos:start])
        parts.append(f"[REDACTED:{kind}]")
        if keep_lines:
            parts.append("\n" * text.count("\n", start, end))
        fp = _fingerprint(text[start:end])
        findings.setdefault((kind, fp), SecretFinding(kind, fp))
        pos = end
    parts.append(text[pos:])
    return "".join(parts), tuple(findings.values())
