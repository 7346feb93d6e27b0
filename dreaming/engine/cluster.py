"""Cluster sentences into facts: same subject, same identity, same value.

Two stages, neither comparing all pairs:

1. **Subject groups.** MinHash over each sentence's subject terms (key terms with numbers,
   filler and markers removed), LSH banding (12 bands × 2 rows: a pair at Jaccard 0.5
   shares a bucket with ~97 % probability, and single-link grouping only needs one of
   the paths between two members), an estimate filter, then the exact Jaccard
   and the topic identity guard. LSH buckets are the inverted index on key terms here:
   a bucket is keyed by a pair of min-hashed terms, so very common single terms never
   make a giant posting list, and a large bucket is walked with a sorted window instead
   of being expanded to all pairs. The exact Jaccard and the guard run vectorised on
   padded set matrices. Pairs with identical identities join by connected components;
   the rest go best-first under the merged-profile guard, so a vague sentence cannot
   bridge two hosts or two products.
2. **Value split.** Within a subject group, sentences with different numbers or versions
   are different facts ("Postgres 16" vs "Postgres 15", "worker v1.4" vs "v1.5"); the split
   is also what conflict detection reads. Sentences with no value join the only value
   present, or stay together when there are several.

Time proximity is deliberately not a merge criterion: a fact restated three weeks later
is the strongest signal dreaming has. It enters through recency and recurrence instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .dedupe import (
    Identity,
    PaddedSets,
    TokenHasher,
    estimate_filter,
    guarded_union,
    identity_compatible,
    jaccard,
    lsh_pairs,
    minhash,
)
from .text import Features


def subject_groups(
    features: Sequence[Features],
    threshold: float,
    hasher: TokenHasher,
    identity: Identity | None = None,
    *,
    k: int = 24,
    bands: int = 12,
    window: int = 3,
) -> list[list[int]]:
    """Group sentences whose subject terms overlap by Jaccard >= ``threshold``."""
    n = len(features)
    if n < 2:
        return [[i] for i in range(n)]
    identity = identity or Identity.of(features, hasher)
    flat, offsets = hasher.flat([tuple(f.subject) for f in features])
    sig = minhash(flat, offsets, k)
    active = offsets[1:] > offsets[:-1]
    # Sort bucket members by identity so that, in an oversized bucket, the window pairs
    # sentences that can actually merge.
    tb = identity.key(values=False)
    i, j = lsh_pairs(sig, bands, k // bands, window=window, tiebreak=tb, active=active)
    # The estimate (24 permutations, σ ≈ 0.1 at J = 0.5) only has to clear obvious
    # misses; single-link grouping tolerates the odd lost edge.
    keep = estimate_filter(sig, i, j, max(threshold - 0.15, 0.05))
    i, j = i[keep], j[keep]
    keep = identity.mask(i, j, values=False)
    i, j = i[keep], j[keep]
    # Exact Jaccard of the subject sets, vectorised; the rare very long sentence is
    # checked in Python below.
    subj = PaddedSets(flat, offsets, 16)
    inter = subj.intersections(i, j)
    la, lb = subj.lengths[i], subj.lengths[j]
    sim = inter / np.maximum(la + lb - inter, 1)
    wide = subj.overflow[i] | subj.overflow[j]
    ok = (sim >= threshold) & ~wide
    # Names and identifiers must nest (the rest of the identity guard), also vectorised.
    names = PaddedSets(*hasher.flat([tuple(f.names) for f in features]), 6)
    idents = PaddedSets(*hasher.flat([tuple(f.idents) for f in features]), 6)
    too_many = names.overflow[i] | names.overflow[j] | idents.overflow[i] | idents.overflow[j]
    idx = np.flatnonzero(ok & ~too_many)
    nested = names.nested(i[idx], j[idx]) & idents.nested(i[idx], j[idx])
    good = idx[nested]
    # Exact Python check for the few pairs the matrices could not decide.
    extra_s: list[float] = []
    extra_i: list[int] = []
    extra_j: list[int] = []
    for x in np.flatnonzero(wide | (ok & too_many)).tolist():
        a, b = int(i[x]), int(j[x])
        fa, fb = features[a], features[b]
        s_ab = jaccard(fa.subject, fb.subject)
        if s_ab >= threshold and identity_compatible(fa, fb, values=False):
            extra_s.append(s_ab)
            extra_i.append(a)
            extra_j.append(b)
    return guarded_union(
        n,
        np.concatenate((sim[good], np.asarray(extra_s, dtype=np.float64))),
        np.concatenate((i[good], np.asarray(extra_i, dtype=np.int64))),
        np.concatenate((j[good], np.asarray(extra_j, dtype=np.int64))),
        features,
        identity,
        values=False,
    )


def split_by_value(
    members: Sequence[int], features: Sequence[Features]
) -> list[tuple[frozenset[str], list[int]]]:
    """Split one subject group into facts by value set and polarity; (values, members) pairs.

    Members are in index order and the facts are ordered by their first member.
    """
    if len(members) == 1:  # most subjects are one sentence
        return [(features[members[0]].polar_values(), list(members))]
    by_value: dict[frozenset[str], list[int]] = {}
    valueless: list[int] = []
    for m in members:
        # A negated statement is its own fact: "we deploy on Fridays" and "we never
        # deploy on Fridays" must not become one candidate.
        v = features[m].polar_values()
        (by_value.setdefault(v, []) if v else valueless).append(m)
    parts = list(by_value.items())
    if valueless:
        # A plain sentence supports the one value present, never a negated statement.
        if len(parts) == 1 and "¬" not in parts[0][0]:
            parts[0][1].extend(valueless)
        else:
            parts.append((frozenset(), valueless))
    for _, p in parts:
        p.sort()
    parts.sort(key=lambda vp: vp[1][0])
    return parts


def core_terms(
    members: Sequence[int], features: Sequence[Features], share: float
) -> set[str] | frozenset[str]:
    """Return subject terms present in at least ``share`` of the members (at least one)."""
    return core_terms_multi(members, features, (share,))[0]


def core_terms_multi(
    members: Sequence[int], features: Sequence[Features], shares: Sequence[float]
) -> list[set[str] | frozenset[str]]:
    """Return ``core_terms`` for several shares from one counting pass (read-only sets)."""
    if len(members) == 1:
        only = features[members[0]].subject  # shared, not copied: most clusters are single
        return [only for _ in shares]
    counts: dict[str, int] = {}
    for m in members:
        for t in features[m].subject:
            counts[t] = counts.get(t, 0) + 1
    out = []
    for share in shares:
        need = max(1, math.ceil(share * len(members)))
        out.append({t for t, c in counts.items() if c >= need})
    return out
