"""Tokens that read as drawn at random: the secret scanner's last resort for a credential
with no known prefix and no "key =" before it."""

from __future__ import annotations

import base64
import binascii
import re

# Shorter runs of token characters are too common in prose and identifiers to judge.
TOKEN_MIN = 20

# A credential with no known prefix and no "key =" before it: a run of token characters
# that reads as drawn at random. Judged inside its run of base64 characters: beyond
# _RANDOM_MAX characters that run is an encoded attachment (the injection scan's
# encoded-blob risk), not a key, unless it is a path whose segments include a word.
_B64_RUN = re.compile(rf"[A-Za-z0-9+/=_-]{{{TOKEN_MIN},}}")
_TOKEN_PART = re.compile(rf"[A-Za-z0-9_-]{{{TOKEN_MIN},}}")
_RANDOM_MAX = 100
LONE_TOKEN = re.compile(r"[A-Za-z0-9_-]{24,200}")
_PATH_WORD = re.compile(r"(?:^|/)[a-z]{2,}(?=/|$)")
# Letters that read as words: a capitalised or lower-case run of three or more, or an
# upper-case run of three or more ("ReplacingMergeTree", "user_signup_flow", "HTTP").
_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{3,}")


def looks_random(value: str) -> bool:
    """Does this token read as drawn at random, as keys and tokens are?

    It needs two each of upper-case letters, lower-case letters and digits (a hex hash,
    a slug or an id in one case has no such mix), fewer than 60 % of its characters in
    word-like runs (identifiers such as "HttpClientV2RetryPolicy" are mostly words; a
    string drawn from the 62 alphanumerics has a third, and above 60 % about 1 in 100 at
    24 characters), and no decoding as base64 into text (an encoded message, which the
    injection scan reads).
    """
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    if min(upper, lower, digits) < 2:
        return False
    worded = sum(len(w) for w in _WORDISH.findall(value))
    return worded < 0.6 * len(value) and not _decodes_to_text(value)


def _decodes_to_text(value: str) -> bool:
    padded = value + "=" * (-len(value) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return False
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in data)
    return len(data) >= 12 and printable >= 0.9 * len(data)


def random_tokens(text: str) -> list[tuple[int, int]]:
    out = []
    for run in _B64_RUN.finditer(text):
        start, chunk = run.start(), run.group()
        if len(chunk) > _RANDOM_MAX and not _PATH_WORD.search(chunk):
            continue
        for part in _TOKEN_PART.finditer(chunk):
            if len(part.group()) <= _RANDOM_MAX and looks_random(part.group()):
                out.append((start + part.start(), start + part.end()))
    return out
