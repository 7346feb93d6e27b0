"""REM: lifecycle markers, sticky closed work, themes across days."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dreaming.engine.reflect import (
    Event,
    TopicIndex,
    combine,
    find_marker,
    fold,
    heading_state,
    lifecycle_for,
    status_field,
    term_themes,
    topic_need,
)
from dreaming.engine.text import analyse

T0 = datetime(2026, 3, 2, tzinfo=UTC)


def event(text: str, day: int, eid: int = 0, checkbox: str | None = None) -> Event:
    marker = find_marker(text, checkbox)
    assert marker is not None, text
    return Event(marker, T0 + timedelta(days=day), eid or day, 0, analyse(text))


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("Closed: billing-export migration finished.", "closed"),
        ("The billing-export migration is done", "done"),
        ("Shipped the new invoice-sync to production", "done"),
        ("archived: old geo-lookup dashboards", "archived"),
        ("wontfix: flaky search test on ci-runner-2", "closed"),
        ("Snoozed until 2026-04-01: ledger rotation", "snoozed"),
        ("waiting on Grace for the ledger review", "waiting"),
        ("blocked by the finance sign-off for invoice-sync", "waiting"),
        ("TODO: rotate the vault tokens on edge-2", "todo"),
        ("Reopened: billing-export migration", "reopened"),
        ("Grace: closed the invoice-sync spike.", "closed"),
        ("Wrapped up: the ledger rotation (finished 03-10).", "done"),
        ("Old notebook archived, no follow-up planned.", "archived"),
    ],
)
def test_it_reads_lifecycle_markers(text, state):
    assert find_marker(text).state == state


def test_it_reads_checkboxes_as_markers():
    assert find_marker("rotate vault tokens", " ").state == "todo"
    assert find_marker("rotate vault tokens", "x").state == "done"
    assert find_marker("The search-indexer reads from cache-3.") is None


def test_the_kind_of_effort_is_not_the_topic_of_its_marker():
    assert find_marker("Closed the turnstile work: all four gates scan passes.").topic == {
        "turnstile"
    }
    assert find_marker("Closed the job.").topic == {"job"}  # nothing else to name it by


def test_a_speaker_label_is_not_the_topic_of_its_marker():
    marker = find_marker("Grace: closed the invoice-sync spike.")
    assert marker.topic == {"invoice-sync", "spike"}
    assert find_marker("Note: the invoice-sync spike runs nightly.") is None


def test_it_takes_the_topic_from_the_clause_the_marker_governs():
    marker = find_marker("Closed: billing-export migration, old cron removed on batch-7.")
    assert marker.topic == {"billing-export", "migration"}


def test_it_parses_the_snooze_date():
    assert find_marker("snoozed until 2026-04-01 the ledger rotation").until.isoformat() == (
        "2026-04-01"
    )


def test_it_lets_the_latest_marker_win():
    state, decided = lifecycle_for(
        [event("TODO: x ledger rotation", 0), event("waiting on Bob: ledger rotation", 1)], T0
    )
    assert state == "waiting" and decided.episode_id == 1


def test_it_keeps_closed_work_closed_until_it_is_reopened():
    closed = event("Closed: ledger rotation", 1)
    todo_again = event("TODO: ledger rotation", 2)
    reopened = event("Reopened: ledger rotation", 3)

    assert lifecycle_for([event("TODO: ledger rotation", 0), closed, todo_again], T0)[0] == (
        "closed"
    )
    assert lifecycle_for([closed, todo_again, reopened], T0)[0] == "active"


def test_it_keeps_closed_work_closed_across_topics():
    closed = fold([event("Closed: ledger rotation", 1)])
    later_todo = fold([event("TODO: ledger rotation on edge-2", 2)])

    assert combine([closed, later_todo], T0)[0] == "closed"


def test_it_wakes_snoozed_work_when_the_snooze_runs_out():
    snoozed = event("snoozed until 2026-03-05: ledger rotation", 0)

    assert lifecycle_for([snoozed], T0)[0] == "snoozed"
    assert lifecycle_for([snoozed], T0 + timedelta(days=10))[0] == "active"


def test_it_needs_every_term_of_a_short_topic():
    assert topic_need(2) == 2 and topic_need(3) == 3 and topic_need(4) == 3
    index = TopicIndex(
        [{"worker", "tw-app-3"}, {"worker", "cleanup", "tw-app-3"}],
        {"worker", "cleanup", "tw-app-3"},
    )

    assert index.clusters_for(frozenset({"worker", "cleanup", "tw-app-3"})) == {1}
    assert index.clusters_for(frozenset({"worker", "tw-app-3"})) == {0, 1}


def test_it_finds_terms_recurring_on_enough_days():
    themes = term_themes(
        [("postgres", "staging"), ("postgres",), ("lunch",)],
        [[1, 2], [3], [1]],
        [2, 1, 1],
        3,
        10,
    )
    assert [(t.label, t.days, t.episodes) for t in themes] == [("postgres", 3, 3)]


def test_a_heading_gives_its_items_a_state_only_when_it_names_nothing_else():
    assert heading_state("Completed") == "done"
    assert heading_state("Archived") == "archived"
    assert heading_state("In Progress") == "todo"
    assert heading_state("Pending") is None
    assert heading_state("Recent changes") is None
    assert heading_state("Closed: billing export") is None  # a marker about a subject
    assert heading_state("") is None


def test_a_status_field_is_read_as_the_document_state():
    assert status_field("**Status:** Done  \n**Added:** 2025-12-12") == "done"
    assert status_field("Status: archived") == "archived"
    assert status_field("**Status:** In Progress") == "todo"
    assert status_field("Status: Draft") is None
    assert status_field("The job reports its status: done or not.") is None
