"""Secrets split by invisible or formatting characters are still found and redacted."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from llmwiki.security import scan
from llmwiki.security.raw import redact_secrets
from llmwiki.security.secrets import _FORMAT_CHARS

# Assembled at run time so that no credential-shaped string sits in the source tree.
AWS_TAIL = "IOSFODNN7" + "EXAMPL2"
GITHUB_BODY = "abcdEFGH12" * 4


@pytest.mark.parametrize(
    "hidden",
    ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u00ad", "\U000e0041"],
)
def test_a_key_split_by_a_format_character_is_redacted_with_it(hidden):
    text = f"deploy with AKIA{hidden}{AWS_TAIL} then restart"
    result = scan(text)
    assert result.text == "deploy with [REDACTED:aws_access_key] then restart"
    assert "secret:aws_access_key" in result.flags
    assert result.security_class == "restricted"


def test_a_token_split_many_times_is_redacted_over_its_whole_original_span():
    split = "\u200d".join(GITHUB_BODY[i : i + 5] for i in range(0, len(GITHUB_BODY), 5))
    text = f"token ghp_{split} is live\u200b"
    result = scan(text)
    assert result.text == "token [REDACTED:github_token] is live\u200b"
    assert not any(part in result.text for part in (GITHUB_BODY[:5], GITHUB_BODY[-5:]))


def test_two_hidden_keys_and_a_plain_one_are_all_redacted():
    plain = "AKIA" + AWS_TAIL[::-1]
    text = f"a AKIA\u200b{AWS_TAIL} b {plain} c ghp_\u2060{GITHUB_BODY} d"
    result = scan(text)
    assert result.text == (
        "a [REDACTED:aws_access_key] b [REDACTED:aws_access_key] c [REDACTED:github_token] d"
    )


def test_a_key_followed_by_a_hidden_character_and_a_letter_is_still_found():
    # Without the hidden character the key would run into the letter and stop matching;
    # the text as written is still read, so the key is found there.
    result = scan(f"AKIA{AWS_TAIL}\u200bx end")
    assert result.text.startswith("[REDACTED:aws_access_key]")
    assert AWS_TAIL not in result.text


def test_the_raw_layer_finds_the_same_secret_as_the_gate():
    # The stored blob is redacted by fingerprint; both readings must agree on the span.
    text = f"key AKIA\u200b{AWS_TAIL}"
    redacted, fingerprints = redact_secrets(text)
    assert redacted == "key [REDACTED:aws_access_key]"
    assert fingerprints == {f.fingerprint for f in scan(text).secrets}


def test_text_without_hidden_characters_reads_as_before():
    assert scan("plain prose about the deploy").text == "plain prose about the deploy"
    assert scan("caf\u00e9 au lait \u2014 no keys").secrets == ()


def test_the_format_characters_are_unicodes_category_cf():
    expected = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    actual = {c for c in range(sys.maxunicode + 1) if _FORMAT_CHARS.fullmatch(chr(c))}
    assert actual == expected
