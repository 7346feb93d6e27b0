"""Contradictions: decision statements, reversal and negation matching, value conflicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine.conflicts import (
    conflict_key,
    decision_conflicts,
    scopes_agree,
    statements,
    values_clash,
)
from dreaming.engine.slots import slots

T0 = datetime(2026, 3, 2, tzinfo=UTC)


def test_it_reads_a_decision_to_use_something_for_a_scope():
    (st,) = statements("Decision: use RabbitMQ for the shipment event queue")

    assert (st.kind, st.obj, st.obj_text) == ("use", "rabbit", "RabbitMQ")
    assert st.scope == {"shipment", "event", "queue"}


def test_it_reads_reversals_as_leaving_one_thing_and_using_another():
    sts = statements("We moved from RabbitMQ to Redis Streams for the shipment event queue")

    assert [(s.kind, s.obj) for s in sts] == [("rev", "rabbit"), ("use", "redis")]
    assert [s.kind for s in statements("Replaced nginx with Caddy on the edge hosts.")] == [
        "rev",
        "use",
    ]
    assert statements("We no longer use Jenkins for CI builds")[0].kind == "rev"


def test_it_reads_negations_and_not_their_verb_as_a_use():
    assert [(s.kind, s.obj) for s in statements("We do not use MongoDB.")] == [("neg", "mongodb")]
    assert statements("The search-indexer reads from cache-3.") == []
    assert statements("Please use the staging database.") == []  # no named object


def test_it_agrees_scopes_when_one_is_unstated_or_they_overlap():
    assert scopes_agree(frozenset(), frozenset({"queue"}))
    assert scopes_agree(frozenset({"shipment", "queue"}), frozenset({"shipment", "event", "queue"}))
    assert not scopes_agree(frozenset({"billing"}), frozenset({"shipment", "queue"}))


def test_it_matches_a_reversal_only_against_what_was_said_before_it():
    use = statements("Decision: use RabbitMQ for the shipment event queue")[0]
    rev = statements("We moved from RabbitMQ to Redis Streams for the shipment event queue")[0]
    first = [T0, T0 + timedelta(days=3)]
    claims = [None, None]

    found = decision_conflicts([(0, use), (1, rev)], first, first, claims)
    assert [(f.kind, f.sides) for f in found] == [("reversal", [[0], [1]])]
    later_use = [T0 + timedelta(days=5), T0 + timedelta(days=3)]
    assert decision_conflicts([(0, use), (1, rev)], later_use, later_use, claims) == []


def test_it_matches_a_reversal_against_an_approved_claim_whatever_its_date():
    use = statements("We use RabbitMQ for the shipment event queue")[0]
    rev = statements("We switched from RabbitMQ to Kafka for the shipment event queue")[0]

    found = decision_conflicts([(0, use), (1, rev)], [None, T0], [None, T0], [42, None])
    assert found[0].claims == [42, None]


def test_it_derives_conflict_keys_from_content():
    a = conflict_key("value", "Staging DB", ["x", "y"])
    assert a == conflict_key("value", "staging db", ["y", "x"])
    assert a != conflict_key("reversal", "staging db", ["x", "y"])


def test_only_lasting_states_set_a_slot_not_status_lines_readings_or_ids():
    def state(text: str) -> bool:
        return bool(slots(text))

    assert state("The staging DB is Postgres 16.")
    assert not state("CI green on tag v2.3.1 (run 1863).")  # no link, a status and a run id
    assert not state("16:30 CI run 1871 green.")
    assert not state("dump of db-prod-4 is 1.92 GB")  # a reading
    assert not state("queue depth is 124,406 messages")  # a count
    assert not state("08:20 disabled the relay on edge-1, it is off")  # a logged event
    assert not state("worker v1.5 deployed to tw-app-1")


def test_it_lets_a_more_precise_version_agree_with_its_release_line():
    assert not values_clash(frozenset({"1.4"}), frozenset({"1.4.2", "2.3.0"}))
    assert values_clash(frozenset({"1.4"}), frozenset({"1.5"}))
    assert values_clash(frozenset({"16"}), frozenset({"15"}))
