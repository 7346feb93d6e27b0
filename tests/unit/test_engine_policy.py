"""The dreaming policy: defaults, validation errors that name the field, renormalising."""

from __future__ import annotations

import pytest

from dreaming.engine import Policy, PolicyError


def test_it_has_default_weights_that_sum_to_one():
    weights = Policy().weights.as_dict()

    assert weights == {
        "relevance": 0.30,
        "frequency": 0.20,
        "query_diversity": 0.15,
        "recency": 0.10,
        "recurrence": 0.10,
        "source_trust": 0.10,
        "richness": 0.05,
    }
    assert sum(weights.values()) == pytest.approx(1.0)


def test_it_round_trips_through_to_dict():
    policy = Policy.from_dict({"min_score": 0.5, "block_flags": ["pii:"], "max_proposals": 7})

    assert Policy.from_dict(policy.to_dict()) == policy
    assert policy.to_dict()["block_flags"] == ["pii:"]


def test_it_treats_none_as_the_defaults():
    assert Policy.from_dict(None) == Policy()


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"min_scor": 0.3}, "min_scor", "unknown key"),
        ({"min_score": "high"}, "min_score", "must be a number"),
        ({"min_score": True}, "min_score", "must be a number"),
        ({"min_score": 1.5}, "min_score", "must be <= 1.0"),
        ({"min_evidence": 0}, "min_evidence", "must be >= 1"),
        ({"min_evidence": 2.5}, "min_evidence", "whole number"),
        ({"recency_half_life_days": float("nan")}, "recency_half_life_days", "finite"),
        ({"weights": {"recency": -0.1}}, "weights.recency", "must be >= 0.0"),
        ({"weights": {"novelty": 0.1}}, "weights.novelty", "unknown signal"),
        ({"weights": [0.3, 0.7]}, "weights", "must be an object"),
        ({"block_flags": "pii:"}, "block_flags", "list of strings"),
    ],
)
def test_it_refuses_bad_values_naming_the_field(data, field, words):
    with pytest.raises(PolicyError) as err:
        Policy.from_dict(data)

    assert err.value.field == field
    assert words in str(err.value)
    assert f"'{field}'" in str(err.value)


def test_it_refuses_weights_that_are_all_zero():
    zeros = dict.fromkeys(Policy().weights.as_dict(), 0)
    with pytest.raises(PolicyError, match="at least one weight"):
        Policy.from_dict({"weights": zeros})


def test_it_renormalises_weights_that_do_not_sum_to_one_and_says_so():
    policy = Policy.from_dict({"weights": {"relevance": 0.8}})

    weights = policy.weights.as_dict()
    assert sum(weights.values()) == pytest.approx(1.0)
    assert weights["relevance"] == pytest.approx(0.8 / 1.5)
    assert "renormalised" in policy.normalised_note


def test_it_accepts_whole_floats_for_integer_fields():
    assert Policy.from_dict({"max_episodes": 100.0}).max_episodes == 100
