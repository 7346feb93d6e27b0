"""Typed slots: (subject, attribute, value) read from statements, and the clashes between them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine import ApprovedClaim, Ep, run_sweep
from dreaming.engine.slots import clashes, may_set, same_subject, slots
from dreaming.engine.text import analyse

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
        "location": "src/game/components/gameloop.tsx",
        "owner": "itself",  # a component named in code doing the work itself
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


def change(text: str) -> dict[str, tuple[frozenset[str], str]]:
    return {s.attribute: (s.subject, s.value) for s in slots(text) if s.attribute != "presence"}


def test_a_change_sets_a_location_an_implementation_a_presence_or_an_owner():
    # where a thing went: told intransitively, transitively, or as "now lives in"
    assert change("- Billing sync moved to `useLedgerHook` with retries.") == {
        "location": ({"bill", "sync"}, "useledgerhook")  # stemmed terms
    }
    assert change("Moved the parser into `lib/parse/core.py`.")["location"][1] == (
        "lib/parse/core.py"
    )
    (now,) = [s for s in slots("Ledger sync now lives in `lib/ledger.py`.")]
    assert now.changed and now.value == "lib/ledger.py"
    # what replaced what, in which file
    (impl,) = [s for s in slots("Replaced `dict` configs with `TypedDict` classes in `cfg.py`.")]
    assert (impl.subject, impl.attribute, impl.value, impl.was) == (
        {"cfg.py"},
        "implementation",
        "typeddict",
        "dict",
    )
    # a dependency removed, and a thing something moved into (so it is there)
    assert {(s.subject, s.value) for s in slots("Removed unused `quickjson` dependency.")} == {
        (frozenset({"quickjson"}), "absent")
    }
    assert (frozenset({"quickjson"}), "present") in {
        (s.subject, s.value) for s in slots("Parsing moved into QuickJson readers.")
    }
    # a component doing its work itself, then passing it on
    assert change("`PumpLoop` (`src/pump.ts`) handles every tick.")["owner"] == (
        {"pumploop"},
        "itself",
    )
    assert change("`PumpLoop` now delegates ticking to the scheduler via `tick()`.")["owner"] == (
        {"pumploop"},
        "schedul",
    )


def test_a_change_denied_or_only_planned_sets_nothing():
    assert slots("We have not moved billing sync to `useLedgerHook`.") == []
    # a switch of products is a decision (conflicts.statements), not where a thing lives
    assert slots("We moved from RabbitMQ to Redis Streams.") == []
    assert slots("Remove unused `quickjson` dependency.") == []  # a plan, not a removal
    assert slots("Removed duplicate render passes.") == []  # nothing named in code
    assert slots("The team handles billing.") == []  # no component named in code


def test_changes_clash_only_with_what_they_change():
    moved = [
        slots("Billing sync moved to `useLedgerHook` with retries."),
        slots("Ledger billing now lives in `lib/ledger.py`."),
        slots("Refactor: invoices moved into `lib/invoice.py`."),  # another subject
    ]
    (clash,) = clashes(moved)
    assert (clash.attribute, sorted(map(sorted, clash.sides))) == ("location", [[0], [1]])
    owners = [
        slots("`PumpLoop` handles every tick."),
        slots("`PumpLoop` now delegates ticking to the scheduler."),
        slots("`ValveLoop` now delegates ticking to the scheduler."),
    ]
    (clash,) = clashes(owners)
    assert (clash.attribute, sorted(map(sorted, clash.sides))) == ("owner", [[0], [1]])
    presence = [slots("Removed unused `quickjson` dependency."), slots("Moved into QuickJson.")]
    assert [c.attribute for c in clashes(presence)] == ["presence"]


def test_a_sweep_holds_what_a_file_held_against_the_replacement_there():
    result = run_sweep(
        [
            ep(1, 0, "To add a shape, add a member to the `Shape` enum in `src/kinds.ts`."),
            ep(2, 5, "Replaced `enum` exports with `as const` objects in `src/kinds.ts`."),
            ep(3, 6, "Shapes are drawn by `src/draw.ts` and listed in `src/kinds.ts`."),
        ]
    )

    (conflict,) = result.conflicts
    assert [s.episode_ids for s in conflict.sides] == [(1,), (2,)]


def test_a_named_place_clashes_only_with_a_move_of_the_same_thing():
    (placed,) = slots("Support chat happens on our Chatly server, channel #help.")
    assert (placed.attribute, placed.value, placed.named) == ("location", "chatly", True)
    moved = slots("Moved support chat to Talkhub today; the old server is read-only.")
    (clash,) = clashes([[placed], moved])
    assert (clash.attribute, clash.sides) == ("location", [[0], [1]])
    # Without a move, one thing may be in two named places at once.
    elsewhere = slots("Support chat happens on the Talkhub bridge as well.")
    assert elsewhere and not clashes([[placed], elsewhere])
    # Nor with the move of another thing that a third statement links it to.
    linked = [
        slots("Spawning logic is in `SpawnLoop`."),
        slots("Extracted board logic into `hooks/context`."),
        slots("Board logic and spawning logic live in `src/game/`."),
    ]
    assert all(0 not in side for c in clashes(linked) for side in c.sides)
    # Nor with a move sharing one word of its name: that word is a topic.
    topic = [slots("Logic happens in the `SpawnLoop`."), linked[1]]
    assert not clashes(topic)
    # A product given its version is no place ("runs on Postgres 15").
    assert "location" not in read("Staging runs on Postgres 15.")


def test_a_sentence_placing_a_named_thing_is_read_for_slots():
    placed = "Support chat happens on our Chatly server, channel #help."
    assert may_set(placed, analyse(placed))
    chatter = "Support chat was quiet all afternoon."
    assert not may_set(chatter, analyse(chatter))


def test_a_sweep_holds_a_named_place_against_a_move_of_that_thing():
    result = run_sweep(
        [
            ep(1, 0, "Support chat happens on our Chatly server, channel #help."),
            ep(2, 7, "Moved support chat to Talkhub today; the old server is read-only."),
        ]
    )

    (conflict,) = result.conflicts
    assert [s.episode_ids for s in conflict.sides] == [(1,), (2,)]
