"""Exact and near-duplicate detection: vectorised MinHash, LSH, identity guard."""

from __future__ import annotations

import numpy as np
import pytest

from dreaming.engine.dedupe import (
    Identity,
    TokenHasher,
    components,
    estimate_filter,
    exact_groups,
    groups_from_labels,
    jaccard,
    lsh_pairs,
    minhash,
    near_duplicate_groups,
)
from dreaming.engine.text import analyse


def near(texts: list[str], threshold: float = 0.7) -> list[list[int]]:
    feats = [analyse(t) for t in texts]
    return near_duplicate_groups([f.content for f in feats], feats, threshold, TokenHasher())


def test_it_estimates_jaccard_from_signatures():
    hasher = TokenHasher()
    a = [f"w{i}" for i in range(100)]
    b = [f"w{i}" for i in range(30, 130)]  # true Jaccard 70/130
    flat, off = hasher.flat([a, b])
    sig = minhash(flat, off, 256)

    estimate = float((sig[0] == sig[1]).mean())
    assert estimate == pytest.approx(70 / 130, abs=0.08)


def test_it_gives_the_same_signature_for_the_same_set_in_any_order():
    hasher = TokenHasher()
    flat, off = hasher.flat([["a", "b", "c"], ["c", "a", "b"]])
    sig = minhash(flat, off, 32)

    assert (sig[0] == sig[1]).all()


def test_it_finds_candidate_pairs_without_comparing_all_pairs():
    hasher = TokenHasher()
    sets = [["shared", "words", "here", f"x{i}"] for i in range(2000)]
    flat, off = hasher.flat(sets)
    sig = minhash(flat, off, 24)
    i, j = lsh_pairs(sig, 12, 2, window=3)

    # 2000 near-identical sets would be ~2M pairs; the windowed buckets keep it linear.
    assert 0 < len(i) <= 2000 * 12 * 3
    assert (i < j).all()


def test_it_filters_pairs_by_estimated_similarity():
    hasher = TokenHasher()
    flat, off = hasher.flat([["a", "b", "c", "d"], ["a", "b", "c", "d"], ["x", "y", "z", "w"]])
    sig = minhash(flat, off, 32)
    keep = estimate_filter(sig, np.array([0, 0]), np.array([1, 2]), 0.5)

    assert keep.tolist() == [True, False]


def test_it_folds_a_repaste_with_a_different_timestamp():
    groups = near(
        [
            "09:14 Restarted the notifier on tw-app-2 because the queue depth kept growing.",
            "10:05 Restarted the notifier on tw-app-2 because the queue depth kept growing.",
            "The ledger exports invoices every night to the finance bucket.",
        ]
    )
    assert [0, 1] in groups and [2] in groups


def test_it_never_folds_texts_that_differ_in_version_host_or_polarity():
    groups = near(
        [
            "worker v1.4 deployed to tw-app-1 after the canary passed",
            "worker v1.5 deployed to tw-app-1 after the canary passed",
            "worker v1.5 deployed to tw-app-2 after the canary passed",
            "We use MongoDB for the analytics store in production.",
            "We do not use MongoDB for the analytics store in production.",
        ]
    )
    assert all(len(g) == 1 for g in groups)


def test_it_keeps_word_order_when_it_matters():
    groups = near(
        [
            "We moved from RabbitMQ to Redis Streams for the shipment queue.",
            "We moved from Redis Streams to RabbitMQ for the shipment queue.",
        ]
    )
    assert groups == [[0], [1]]


def test_it_groups_exact_duplicates():
    assert exact_groups(["a", "b", "a"]) == [[0, 2], [1]]


def test_it_computes_connected_components_vectorised():
    labels = components(6, np.array([0, 1, 4]), np.array([1, 2, 5]))

    assert groups_from_labels(labels) == [[0, 1, 2], [3], [4, 5]]


def test_it_applies_the_host_half_of_the_guard_to_pairs():
    hasher = TokenHasher()
    feats = [analyse(t) for t in ("db on db-1", "db on db-2", "db somewhere")]
    ident = Identity.of(feats, hasher)

    mask = ident.mask(np.array([0, 0]), np.array([1, 2]), values=False)
    assert mask.tolist() == [False, True]


def test_it_measures_jaccard():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 1.0


def test_it_hashes_unions_of_parts_exactly_as_the_united_texts():
    from dreaming.engine.light import _aggregate

    hasher = TokenHasher()
    parts = [analyse(t) for t in ("db on db-1 v16", "and db-1 again", "cache-3 in staging", "x")]
    texts = [[0, 1], [2], [1, 2, 3]]
    members = np.array([p for t in texts for p in t])
    offsets = np.array([0, 2, 3, 6])
    united = Identity.of([_aggregate([parts[p] for p in t]) for t in texts], hasher)
    got = Identity.of_unions(parts, members, offsets, hasher)

    for kind in ("hosts", "envs", "values", "idents", "names"):
        assert getattr(got, kind).tolist() == getattr(united, kind).tolist()
