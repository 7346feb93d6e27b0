"""Typed slots: (subject, attribute, value) read from statements, and the clashes between them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine import ApprovedClaim, Ep, run_sweep
from dreaming.engine.slots import clashes, same_subject, slots

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def read(text: str) -> dict[str, str]:
    return {s.attribute: s.value for s in slots(text)}


def ep(i: int, day: float, text: str) -> Ep:
    return Ep(
        id=i,
        occurred_at=T0 + timedelta(days=day, minutes=i),
        content=text,
        kind="note",
        memory_type="episodic",
        actor="alice",
        source_id=i % 3,
        source_trust=0.6,
    )


def test_it_reads_typed_values_from_the_predicate():
    assert read("The staging database runs PostgreSQL 16 on db-staging-2.") == {
        "version:postgre": "16",
        "host": "db-staging-2",
    }
    assert read("The events Redis listens on port 6380, separate from the cache.") == {
        "port": "6380"
    }
    assert read("The invoice export job runs every Monday 06:00 on tw-app-1.") == {
        "schedule": "mon 06:00",
        "host": "tw-app-1",
    }
    assert read("The uplink interval is 10 minutes.") == {"duration": "600"}
    assert read("Unit tests live under `src/tests/`.") == {"location": "src/tests"}
    assert read("`FrameBridge` (`src/game/components/GameLoop.tsx`) drives each frame.") == {
        "location": "src/game/components/gameloop.tsx"
    }


def test_it_reads_nothing_from_readings_counts_events_and_denials():
    assert slots("The cache is about 40 ms behind.") == []
    assert slots("All 9 sync workers busy on tw-app-1.") == []  # a count and a status
    assert slots("worker v1.5 deployed to tw-app-1") == []  # an event
    assert slots("dump of db-prod-4 is 1.92 GB") == []  # a measured size
    assert slots("worker v1.4 = prod") == []  # one release among several
    assert slots("The events Redis is not on port 6380.") == []
    assert slots("Rendering: R3F (@react-three/fiber) with SceneGraph (https://x.example/a).") == []


def test_environments_and_hosts_in_the_subject_keep_subjects_apart():
    (prod,) = [s for s in slots("The production DB runs Postgres 16.")]
    (staging,) = [s for s in slots("The staging DB runs Postgres 15.")]
    (bare,) = [s for s in slots("Staging runs on Postgres 15.")]
    assert not same_subject(prod, staging)
    assert same_subject(bare, staging)
    (a,) = slots("The cache on tw-app-1 listens on port 6379.")
    (b,) = slots("The cache on tw-app-2 listens on port 6380.")
    assert not same_subject(a, b)


def test_it_reports_a_clash_only_within_one_subject_and_attribute():
    items = [
        slots("The events Redis listens on port 6379."),
        slots("The events Redis listens on port 6380."),
        slots("The session store listens on port 6381."),
        slots("The events Redis listens on port 6380 now."),
    ]
    (clash,) = clashes(items)
    assert clash.attribute == "port"
    assert sorted(map(sorted, clash.sides)) == [[0], [1, 3]]


def test_a_more_precise_version_or_path_agrees_and_a_series_is_no_clash():
    assert clashes([slots("The API runs Django 5.2."), slots("The API runs Django 5.2.1.")]) == []
    assert (
        clashes([slots("Tests live in `src/tests/`."), slots("Tests live in `src/tests/a/`.")])
        == []
    )
    series = [slots(f"The sync interval is {n} minutes.") for n in (5, 7, 9)]
    assert clashes(series) == []


def test_a_sweep_reports_a_version_against_an_approved_claim():
    claim = ApprovedClaim(8, "The staging database runs PostgreSQL 16 on db-staging-2.", "SO")
    result = run_sweep([ep(1, 0, "Staging runs on Postgres 15.")], approved_claims=[claim])

    (conflict,) = result.conflicts
    assert conflict.kind == "value"
    assert [s.claim_id for s in conflict.sides] == [8, None]


def test_a_sweep_reports_two_schedules_of_one_job_and_files_neither_as_settled():
    result = run_sweep(
        [
            ep(1, 0, "The invoice export job runs every Monday 06:00 on tw-app-1."),
            ep(2, 1, "The invoice export job runs every Monday 06:00 on tw-app-1, as before."),
            ep(3, 3, "The invoice export job runs every Friday 16:00 on tw-app-2."),
            ep(4, 4, "The invoice export job runs every Friday 16:00 on tw-app-2 from now."),
        ]
    )

    (conflict,) = result.conflicts
    assert [s.episode_ids for s in conflict.sides] == [(1, 2), (3, 4)]
    assert result.candidates
    assert {c.page_target for c in result.candidates} == {"OPEN_QUESTIONS"}


def test_a_denial_is_never_support_for_the_statement_it_denies():
    result = run_sweep(
        [
            ep(1, 0, "We moved from RabbitMQ to Redis Streams for the event queue."),
            ep(2, 1, "We moved from RabbitMQ to Redis Streams for the event queue, ops runs it."),
            ep(3, 3, "we do not use Redis Streams for the event queue"),
        ]
    )

    assert [c.kind for c in result.conflicts] == ["negation"]
    for cand in result.candidates:
        roles = {e.episode_id: e.role for e in cand.evidence}
        if "moved" in cand.text:
            assert roles[3] == "contradict"
