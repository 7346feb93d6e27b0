"""Write-path security gate for raw text: secrets, PII and prompt-injection screening.

Pure Python (no Django). ``scan()`` runs on every episode at ingest, so it is built for
throughput: every detector sits behind a cheap substring prefilter, all regexes are
precompiled and written so that no input can make them backtrack super-linearly.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from llmwiki.errors import InputError

__all__ = [
    "SECURITY_CLASSES",
    "RiskFinding",
    "ScanResult",
    "SecretFinding",
    "iban_ok",
    "luhn_ok",
    "scan",
]

SECURITY_CLASSES = ("public", "internal", "restricted")

# Flags that on their own make an input high risk (the caller quarantines it).
_HIGH_RISK = frozenset({"risk:injection_phrase", "risk:exfil_image"})

# A flood of findings helps nobody reading a review queue and costs memory per episode.
_MAX_RISKS = 25
_QUOTE_CHARS = 40


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """A secret that was redacted: its detector and a fingerprint, never the value."""

    kind: str
    fingerprint: str

    @property
    def flag(self) -> str:
        return f"secret:{self.kind}"


@dataclass(frozen=True, slots=True)
class RiskFinding:
    """A prompt-injection signal: ``risk:<name>`` plus a short, secret-free reason."""

    flag: str
    reason: str


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Outcome of ``scan()``: the redacted text and everything the gate noticed."""

    text: str
    secrets: tuple[SecretFinding, ...] = ()
    pii: tuple[str, ...] = ()
    risks: tuple[RiskFinding, ...] = ()
    risk_level: str = "none"
    security_class: str = "internal"

    @property
    def flags(self) -> tuple[str, ...]:
        """Return every flag (secret:, pii:, risk:) once, sorted."""
        found = {s.flag for s in self.secrets}
        found.update(self.pii)
        found.update(r.flag for r in self.risks)
        return tuple(sorted(found))

    @property
    def high_risk(self) -> bool:
        return self.risk_level == "high"


# --------------------------------------------------------------------------- secrets


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
    # Token-shaped secrets are at least _TOKEN_MIN characters of [A-Za-z0-9_-] in a row.
    # Their hints are looked for only inside such runs, found once per text at C speed, so
    # ordinary prose (no runs) skips them all and a text with one run checks a few bytes.
    token: bool = True


_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_TOKEN_CHARS = _ALNUM + "_-"
_TOKEN_MIN = 20
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
_TOKEN_RUN_START = b"a" * _TOKEN_MIN
# Base64 characters are a superset of token characters, so one check of this gate tells
# both the token detectors and the encoded-blob scan whether there is anything to do.
_B64_CHARS = _ALNUM + "+/_-"
_LONG_RUN_GATE = _gate_table(_B64_CHARS, "a")
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


def _find_secrets(
    text: str, lower: str, raw: bytes | None, long_gate: bytes | None
) -> list[tuple[int, int, str]]:
    """Return non-overlapping ``(start, end, kind)`` spans, earlier detectors winning."""
    spans: list[tuple[int, int, str]] = []  # sorted, non-overlapping
    if raw is None or long_gate is None:
        runs = text
    elif _TOKEN_RUN_START in long_gate:
        gate = raw.translate(_TOKEN_GATE)
        runs = " ".join(text[m.start() : m.end()] for m in _TOKEN_RUN.finditer(gate))
    else:
        runs = ""

    def keep(start: int, end: int, kind: str) -> None:
        if start >= end or text.startswith("[REDACTED:", start):
            return  # a marker from an earlier pass is not a secret
        i = bisect.bisect_left(spans, (start,))
        if i > 0 and spans[i - 1][1] > start:
            return
        if i < len(spans) and spans[i][0] < end:
            return
        spans.insert(i, (start, end, kind))

    # Lower-casing can change the length of a few non-ASCII strings; offsets found in
    # ``lower`` are only valid for ``text`` when the lengths agree.
    aligned = len(lower) == len(text)
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
            keep(start, end, kind)

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
                keep(start, end, "generic_secret")

    # A value known to be a secret is redacted wherever else it appears, even where no
    # detector would have recognised it (a bare query parameter, a quoted echo).
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
            keep(pos, pos + len(value), kind)
            pos = text.find(value, pos + len(value))
    return spans


def _redact(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, tuple[SecretFinding, ...]]:
    parts: list[str] = []
    findings: dict[tuple[str, str], SecretFinding] = {}
    pos = 0
    for start, end, kind in spans:
        parts.append(text[pos:start])
        parts.append(f"[REDACTED:{kind}]")
        fp = _fingerprint(text[start:end])
        findings.setdefault((kind, fp), SecretFinding(kind, fp))
        pos = end
    parts.append(text[pos:])
    return "".join(parts), tuple(findings.values())


# --------------------------------------------------------------------------- PII

# Anchored on the "@" (a literal, so the engine skips straight to it); the local part is
# walked backwards in Python.
_EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_EMAIL_LOCAL = frozenset(_ALNUM + "._%+-")
# File names like icon@2x.png and git@github.com look like addresses but are not people.
_NOT_TLDS = frozenset(
    {"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "json", "css", "html", "txt"}
)

# One pass finds every digit run that could be a phone or card number; Python classifies.
# The look-behind (after the first character, so the engine can still skip to candidate
# characters) stops matches from starting mid-token: ids, versions, decimals, emails.
_NUMBER_RUN = re.compile(
    # ASCII classes on purpose: \d and \w test Unicode categories and are markedly slower.
    r"[+(0-9](?<![A-Za-z0-9_.:/+@#-].)"
    # At least eight more digits follow: dates, times and versions never become candidates.
    r"(?=(?:[ ().-]{0,3}[0-9]){8})"
    r"[0-9 ().-]{5,32}[0-9](?![A-Za-z0-9_@:/]|[.-][0-9])"
)
_IBAN_HEAD = re.compile(r"[A-Z]{2}[0-9]{2} ")
_SEPARATORS_TO_SPACE = str.maketrans("().-+", "     ")
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9].)[A-Z][0-9]{2}(?: ?[A-Z0-9]){11,32}")
# Digits become "0" and separators vanish, so a run of zeros is a run of digits with
# separators between them. _NUMBER_RUN needs nine digits, or eight after "+" or "(":
# without such a run (dates have eight) the regex cannot match and is skipped.
_DIGIT_GATE = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_DIGIT_SEPARATORS = b" ().-+"
_EIGHT_DIGITS = b"0" * 8
_IBAN_GATE = bytes(
    0x41 if 0x41 <= b <= 0x5A else 0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256)
)

# ISO 13616 registry lengths; an unknown country code is not treated as an IBAN.
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
    "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


_LUHN_DOUBLED = {str(d): (2 * d) // 10 + (2 * d) % 10 for d in range(10)}


def luhn_ok(digits: str) -> bool:
    """Return whether a string of digits passes the Luhn checksum."""
    total = sum(map(int, digits[-1::-2])) + sum(map(_LUHN_DOUBLED.__getitem__, digits[-2::-2]))
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """Return whether ``candidate`` (spaces allowed) is an IBAN with a valid mod-97 check."""
    compact = candidate.replace(" ", "").upper()
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is None or len(compact) != expected or not compact.isascii():
        return False
    if not compact.isalnum() or not compact[2:4].isdigit():
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _classify_number(run: str) -> str | None:
    groups = run.translate(_SEPARATORS_TO_SPACE).split()
    digits = "".join(groups)
    n = len(digits)
    odd = "(" in run or ")" in run or "." in run or "+" in run
    card_shaped = 13 <= n <= 19 and not odd and digits[0] in "23456"
    if card_shaped and digits.count(digits[0]) != n and luhn_ok(digits):
        return "pii:card"
    international = run.startswith(("+", "(+"))
    if run.count("+") > international:
        return None
    if international:
        return "pii:phone" if 8 <= n <= 15 else None
    if run.isdigit():
        # A bare digit string is far more often an id, count or timestamp than a phone.
        return None
    sizes = list(map(len, groups))
    if "." in run:
        if len(sizes) == 4 and max(sizes) <= 3:
            return None  # an IPv4 address
        if min(sizes) < 2 or max(sizes) > 4:
            return None  # decimals and version strings
    if max(sizes) > 8:
        return None
    if run.startswith("00") and 10 <= n <= 15:
        return "pii:phone"
    if 10 <= n <= 11:
        return "pii:phone"
    return None


def _has_email(text: str) -> bool:
    for m in _EMAIL_DOMAIN.finditer(text):
        at = m.start()
        i = at
        while i > 0 and at - i <= 64 and text[i - 1] in _EMAIL_LOCAL:
            i -= 1
        local = text[i:at]
        if not local or at - i > 64 or not local[0].isalnum() or local == "git":
            continue
        tld = m.group().rsplit(".", 1)[-1]
        if tld.isalpha() and len(tld) >= 2 and tld.lower() not in _NOT_TLDS:
            return True
    return False


def _find_pii(text: str, raw: bytes | None) -> tuple[str, ...]:
    found: set[str] = set()
    if "@" in text and _has_email(text):
        found.add("pii:email")
    if raw is None:
        numbers = True
    else:
        digits = raw.translate(_DIGIT_GATE, _DIGIT_SEPARATORS)
        numbers = _EIGHT_DIGITS in digits and (
            _EIGHT_DIGITS + b"0" in digits or b"+" in raw or b"(" in raw
        )
    if numbers:
        for m in _NUMBER_RUN.finditer(text):
            start = m.start()
            if start >= 5 and _IBAN_HEAD.fullmatch(text, start - 5, start):
                continue  # the digits of an IBAN's account part, judged as an IBAN below
            flag = _classify_number(m.group())
            if flag:
                found.add(flag)
                if "pii:card" in found and "pii:phone" in found:
                    break
    if raw is not None and b"AA00" not in raw.translate(_IBAN_GATE):
        return tuple(sorted(found))
    for m in _IBAN.finditer(text):
        compact = m.group().replace(" ", "")
        expected = _IBAN_LENGTHS.get(compact[:2])
        if expected and len(compact) >= expected and iban_ok(compact[:expected]):
            found.add("pii:iban")
            break
    return tuple(sorted(found))


# --------------------------------------------------------------------------- injection

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
_B64_GATE_RUN = re.compile(b"a" * 24 + b"a*")
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


def _find_risks(
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

    if long_gate is None or _TOKEN_RUN_START in long_gate:
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


# --------------------------------------------------------------------------- entry point


def scan(text: str, *, base_class: str = "internal") -> ScanResult:
    """Redact secrets in ``text`` and flag PII and prompt-injection risks.

    ``base_class`` is the caller's starting security class ("public", "internal" or
    "restricted"); secrets or PII raise the suggestion to "restricted".
    """
    if base_class not in SECURITY_CLASSES:
        raise InputError("base_class", f"unknown security class {base_class!r}")
    lower = text.lower()
    # Pure-ASCII text (the common case) gets byte-level prefilters and skips Unicode checks.
    raw = text.encode("ascii") if text.isascii() else None
    long_gate = raw.translate(_LONG_RUN_GATE) if raw is not None else None
    spans = _find_secrets(text, lower, raw, long_gate)
    if spans:
        text, secrets = _redact(text, spans)
        lower = text.lower()
        if raw is not None:
            raw = text.encode("ascii")
            long_gate = raw.translate(_LONG_RUN_GATE)
    else:
        secrets = ()
    # PII and risks are read from the redacted text so a reason can never quote a secret.
    pii = _find_pii(text, raw)
    risks = tuple(_find_risks(text, lower, raw, long_gate))
    if any(r.flag in _HIGH_RISK for r in risks):
        level = "high"
    elif risks:
        level = "low"
    else:
        level = "none"
    security_class = "restricted" if secrets or pii else base_class
    return ScanResult(
        text=text,
        secrets=secrets,
        pii=pii,
        risks=risks,
        risk_level=level,
        security_class=security_class,
    )
