"""What every importer shares: normalising text, episode drafts, timestamps."""

from __future__ import annotations

from datetime import datetime

import pytest

from llmwiki.importers import (
    MEMORY_TYPES,
    EpisodeDraft,
    normalise,
)
from llmwiki.importers.base import parse_timestamp
from llmwiki.vocabulary import IMPORTED_KINDS
from tests.unit.importers.files import dt


def test_normalise_strips_trailing_spaces_and_collapses_long_blank_runs() -> None:
    assert normalise("  a  \t\r\nb\n\n\n\n\n\nc\n\n") == "a\nb\n\n\nc"


def test_normalise_composes_to_nfc_but_keeps_invisible_and_bidi_characters() -> None:
    text = "cafe\u0301 \u200b\u202eevil\u202c\ufeff"
    assert normalise(text) == "caf\u00e9 \u200b\u202eevil\u202c\ufeff"


def test_episode_drafts_refuse_unknown_kinds_actors_and_naive_times() -> None:
    with pytest.raises(ValueError, match="kind"):
        EpisodeDraft("x", "gossip", "system", {})
    with pytest.raises(ValueError, match="actor"):
        EpisodeDraft("x", "note", "bob", {})
    with pytest.raises(ValueError, match="timezone"):
        EpisodeDraft("x", "note", "system", {}, occurred_at=datetime(2026, 1, 1))
    assert set(IMPORTED_KINDS) >= {"note", "log_entry", "chat_turn", "decision", "tool_call"}
    assert "handoff-only" in MEMORY_TYPES


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-04-13T09:00:00Z", "2026-04-13T09:00:00"),
        ("2026-04-13T11:00:00+02:00", "2026-04-13T09:00:00"),
        ("2026-04-13 09:00", "2026-04-13T09:00:00"),
        ("2026-04-13", "2026-04-13T00:00:00"),
        (1776070800, "2026-04-13T09:00:00"),
        (1776070800000, "2026-04-13T09:00:00"),
        ("1776070800.5", "2026-04-13T09:00:00.500000"),
    ],
)
def test_parse_timestamp_reads_iso_and_epoch_seconds_or_milliseconds(
    value: object, expected: str
) -> None:
    assert parse_timestamp(value) == dt(expected)


def test_parse_timestamp_returns_none_when_absent_and_refuses_nonsense() -> None:
    assert parse_timestamp(None) is None
    assert parse_timestamp("") is None
    with pytest.raises(ValueError, match="not an ISO 8601 timestamp"):
        parse_timestamp("last tuesday")
