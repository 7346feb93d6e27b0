"""Clustering sentences into facts: subject groups, identity guard, value split."""

from __future__ import annotations

from dreaming.engine.cluster import core_terms, fact_anchor, split_by_value, subject_groups
from dreaming.engine.dedupe import TokenHasher
from dreaming.engine.text import analyse

FIVE = [
    "The staging database runs PostgreSQL 16 on db-staging-2.",
    "staging DB is Postgres 16 (host db-staging-2)",
    "Reminder: db-staging-2 is our staging database, PostgreSQL 16.",
    "staging runs on postgres 16 — db-staging-2",
    "The staging Postgres (v16) lives on db-staging-2.",
]


def group(texts: list[str]) -> list[list[int]]:
    return subject_groups([analyse(t) for t in texts], 0.5, TokenHasher())


def test_it_groups_five_wordings_of_one_fact():
    assert group(FIVE) == [[0, 1, 2, 3, 4]]


def test_it_keeps_another_host_apart_even_when_the_words_match():
    texts = [*FIVE, "The production database runs PostgreSQL 16 on db-prod-1."]
    assert group(texts) == [[0, 1, 2, 3, 4], [5]]


def test_it_keeps_two_products_apart():
    texts = [
        "Decision: use RabbitMQ for the shipment event queue",
        "Decision: use Kafka for the shipment event queue",
    ]
    assert group(texts) == [[0], [1]]


def test_it_does_not_let_a_vague_sentence_bridge_two_hosts():
    texts = [
        "the nightly backup job runs on tw-app-1",
        "the nightly backup job runs",
        "the nightly backup job runs on tw-app-2",
    ]
    groups = group(texts)
    assert not any({0, 2} <= set(g) for g in groups)


def test_it_splits_a_subject_by_value():
    feats = [
        analyse(t) for t in ("worker v1.4 deployed", "worker v1.5 deployed", "worker deployed")
    ]
    parts = split_by_value([0, 1, 2], feats)

    assert [(sorted(v), m) for v, m in parts] == [(["1.4"], [0]), (["1.5"], [1]), ([], [2])]


def test_it_joins_valueless_sentences_to_the_only_value():
    feats = [analyse(t) for t in ("worker v1.5 deployed", "worker deployed")]
    assert [m for _, m in split_by_value([0, 1], feats)] == [[0, 1]]


def test_it_splits_by_polarity():
    feats = [analyse(t) for t in ("we deploy on Fridays", "we never deploy on Fridays")]
    assert len(split_by_value([0, 1], feats)) == 2


def test_it_finds_the_core_terms_of_a_cluster():
    feats = [analyse(t) for t in FIVE]
    assert core_terms(range(5), feats, 0.5) == {"staging", "postgre", "db-staging-2", "database"}


def test_it_anchors_host_product_and_version_whatever_else_a_sentence_says():
    texts = [
        "The qa database runs PostgreSQL 15 on db-qa-3.",
        "noting for later: db-qa-3 = our qa Postgres, version 15, don't restore prod dumps there",
        "10:40 env check (don't trust the log): qa postgres is v15 and lives on db-qa-3",
    ]
    anchors = {fact_anchor(t) for t in texts}
    assert len(anchors) == 1
    (a,) = anchors
    assert (a.host, a.product, a.envs, a.values) == ("db-qa-3", "postgre", {"qa"}, {"15"})


def test_it_anchors_nothing_for_readings_counts_tickets_or_two_facts():
    assert fact_anchor("The production database runs PostgreSQL 15 on db-prod-4.").host == (
        "db-prod-4"
    )
    assert fact_anchor("dump of db-prod-4 is 1.92 GB, yesterday 1.89 GB") is None
    assert fact_anchor("cache-3 disk at 71% on /var") is None
    assert fact_anchor("OPS-12: worker 2 failed again") is None
    assert fact_anchor("ledger v2.1 on edge-1 and ledger v2.2 on edge-2") is None
    assert fact_anchor("Rolled ledger back to v2.1 on edge-1.") is None  # "to v2.1"


def test_it_marks_a_denied_version_in_the_anchor():
    assert "¬" in fact_anchor("db-qa-3 is not Postgres 15 any more").values
