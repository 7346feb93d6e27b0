"""Deep: signal formulas, weighting, and page routing with named rules."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from dreaming.engine import Policy, RecallStats
from dreaming.engine.consolidate import choose, text_key
from dreaming.engine.route import route
from dreaming.engine.score import EvidenceView, signals, weighted
from dreaming.engine.text import analyse

NOW = datetime(2026, 3, 10, tzinfo=UTC)


def view(**kw) -> EvidenceView:
    base = {
        "n_support": 3,
        "days": 3,
        "newest": NOW,
        "trust": [0.6, 0.8],
        "recall": [],
        "key_terms": 3,
    }
    base.update(kw)
    return EvidenceView(**base)


def test_it_computes_each_signal_as_documented():
    raw = signals(
        view(recall=[RecallStats(2, 4, 2, 0.9), RecallStats(1, 1, 1, 0.6)]), NOW, Policy()
    )

    assert raw["relevance"] == pytest.approx((0.9 * 2 + 0.6) / 3)
    assert raw["frequency"] == pytest.approx(math.log1p(3) / math.log1p(10))
    assert raw["query_diversity"] == pytest.approx(1.0)  # 5 distinct queries
    assert raw["recency"] == pytest.approx(1.0)
    assert raw["recurrence"] == pytest.approx(1.0)
    assert raw["source_trust"] == pytest.approx(0.7)
    assert raw["richness"] == pytest.approx(0.5)


def test_it_halves_recency_every_half_life():
    raw = signals(view(newest=NOW - timedelta(days=14)), NOW, Policy())
    assert raw["recency"] == pytest.approx(0.5)


def test_it_caps_frequency_and_diversity_at_one():
    raw = signals(view(n_support=50, days=9), NOW, Policy())
    assert raw["frequency"] == 1.0 and raw["query_diversity"] == 1.0


def test_it_weights_signals_and_keeps_the_breakdown():
    raw = dict.fromkeys(
        [
            "relevance",
            "frequency",
            "query_diversity",
            "recency",
            "recurrence",
            "source_trust",
            "richness",
        ],
        1.0,
    )
    score, breakdown = weighted(raw, Policy())

    assert score == pytest.approx(1.0)
    assert breakdown["relevance.w"] == pytest.approx(0.30)
    assert breakdown["richness"] == 1.0


def r(text: str, contested: str | None = None, procedural: float = 0.0):
    return route(
        text, contested=contested, procedural_votes=procedural, subject_label="s", day_label="d"
    )


def test_it_routes_by_named_rules():
    assert r("The worker runs on tw-app-1.").page == "SYSTEM_OVERVIEW"
    assert r("We decided to use Caddy.").page == "DECISION_LOG"
    assert r("Only Grace may approve production deploys.").page == "GOVERNANCE"
    assert r("Never deploy on Fridays.").page == "GOVERNANCE"
    assert r("Run `make deploy` then check the dashboard.").page == "RUNBOOKS"
    assert r("Is cache-3 still in use?").page == "OPEN_QUESTIONS"
    assert r("SLO means service level objective.").page == "GLOSSARY"
    assert "decided" in r("We decided to use Caddy.").reason


def test_it_sends_contested_values_to_open_questions_and_reversals_to_the_decision_log():
    assert r("The staging DB is Postgres 16.", contested="value").page == "OPEN_QUESTIONS"
    assert r("Redis Streams carries the shipment queue.", contested="reversal").page == (
        "DECISION_LOG"
    )


def test_it_follows_procedural_evidence():
    assert r("The worker drains slowly.", procedural=0.8).page == "RUNBOOKS"


def test_it_chooses_the_most_representative_clean_sentence():
    texts = [
        "staging DB is Postgres 16 (host db-staging-2)",
        "The staging database runs PostgreSQL 16 on db-staging-2.",
        "The deploy key is [REDACTED:ssh_key] on db-staging-2 for Postgres 16 staging.",
        "$ psql -h db-staging-2",
    ]
    feats = [analyse(t) for t in texts]
    junk = [None, None, None, "shell_command"]
    core = {"staging", "database", "postgres", "db-staging-2"}
    got = choose([0, 1, 2, 3], texts, feats, junk, [0.6] * 4, [1] * 4, core, 640)

    assert got.unit == 1  # full coverage, same trust, well-formed beats shorter
    only_bad = choose([2, 3], texts, feats, junk, [0.6] * 4, [1] * 4, core, 640)
    assert only_bad.unit is None and "redacted" in only_bad.reason


def test_it_keys_candidates_by_their_normalised_text():
    assert text_key("The worker runs.") == text_key("the  worker runs")
    assert text_key("a").startswith("cand:")
