"""Exact and near-duplicate detection without comparing all pairs.

* Exact: identical keys (the caller's normalised text) group with one dict pass.
* Near: MinHash over content-token unigrams and bigrams, computed for every episode at
  once with NumPy (hash each distinct token once, then ``(a·x + b) mod 2^64`` per
  permutation over one flat array and a segmented minimum), LSH banding to find candidate
  pairs, an estimate filter on the signatures, the vectorised half of the identity guard,
  then the exact shingle Jaccard and the rest of the guard on what survives. Pure-Python
  MinHash costs ~250 s per 100k episodes; this costs about a second.

The LSH helpers are shared with clustering, which runs the same machinery over the
subject terms of sentences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from .text import Features

_SEED = 0x11F1_D4EA  # fixed: the same input must give the same pairs on every run


class TokenHasher:
    """Map strings to stable 64-bit hashes (blake2b), each distinct string hashed once."""

    def __init__(self) -> None:
        self._memo: dict[str, int] = {}

    def __call__(self, token: str) -> int:
        h = self._memo.get(token)
        if h is None:
            h = int.from_bytes(
                hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                "little",
            )
            self._memo[token] = h
        return h

    def flat(self, sets: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Hash a list of token sequences into one flat uint64 array plus segment offsets."""
        lengths = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
        offsets = np.zeros(len(sets) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = [t for s in sets for t in s]
        memo = self._memo
        for t in set(tokens) - memo.keys():
            self(t)
        flat = np.fromiter(map(memo.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
        return flat, offsets


def _perms(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 2**63 - 1, size=k, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63 - 1, size=k, dtype=np.uint64)
    return a, b


def minhash(flat: np.ndarray, offsets: np.ndarray, k: int, seed: int = _SEED) -> np.ndarray:
    """Return an ``(n, k)`` uint32 MinHash signature matrix for segmented element hashes.

    Segment ``i`` is ``flat[offsets[i]:offsets[i+1]]``. Empty segments get the all-ones
    signature, which no real set produces in practice; callers drop empty sets anyway.
    """
    n = len(offsets) - 1
    sig = np.full((n, k), np.iinfo(np.uint32).max, dtype=np.uint32)
    if n == 0 or len(flat) == 0:
        return sig
    starts = offsets[:-1]
    nonempty = offsets[1:] > starts
    idx = starts[nonempty]
    a, b = _perms(k, seed)
    tmp = np.empty_like(flat)
    with np.errstate(over="ignore"):
        for j in range(k):
            # Multiply-add mod 2^64 (wrapping) then the high 32 bits: a cheap universal
            # permutation of already-random 64-bit element hashes.
            np.multiply(flat, a[j], out=tmp)
            np.add(tmp, b[j], out=tmp)
            np.right_shift(tmp, np.uint64(32), out=tmp)
            sig[nonempty, j] = np.minimum.reduceat(tmp, idx).astype(np.uint32)
    return sig


def lsh_pairs(
    sig: np.ndarray,
    bands: int,
    rows: int,
    *,
    window: int = 4,
    tiebreak: np.ndarray | None = None,
    active: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Return candidate pairs ``(i, j)`` with ``i < j`` that share a band bucket.

    Large buckets are not expanded to all pairs: members are sorted by ``tiebreak`` (e.g.
    an identity-profile hash, so likely twins sit together) and each is paired with the
    next ``window`` members only. Work is O(n · bands · window), never quadratic.
    """
    n = sig.shape[0]
    if n < 2:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    index = np.arange(n, dtype=np.int64) if active is None else np.flatnonzero(active)
    tb = np.zeros(n, dtype=np.uint64) if tiebreak is None else tiebreak.astype(np.uint64)
    codes: list[np.ndarray] = []
    mult = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        for band in range(bands):
            cols = sig[index, band * rows : (band + 1) * rows].astype(np.uint64)
            key = cols[:, 0].copy()
            for c in range(1, rows):
                key = key * mult + cols[:, c]
            key = key ^ np.uint64(band)
            order = np.lexsort((index, tb[index], key))
            skey = key[order]
            sidx = index[order]
            for d in range(1, window + 1):
                if d >= len(sidx):
                    break
                same = skey[d:] == skey[:-d]
                if not same.any():
                    continue
                i = sidx[:-d][same]
                j = sidx[d:][same]
                lo = np.minimum(i, j)
                hi = np.maximum(i, j)
                codes.append(lo * n + hi)
    if not codes:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    allc = np.concatenate(codes)
    allc.sort()
    # sort + neighbour compare is several times faster here than np.unique's hash path
    uniq = allc[np.concatenate(([True], allc[1:] != allc[:-1]))] if len(allc) else allc
    return uniq // n, uniq % n


def estimate_filter(
    sig: np.ndarray, i: np.ndarray, j: np.ndarray, threshold: float, chunk: int = 1 << 18
) -> np.ndarray:
    """Return a mask of pairs whose estimated Jaccard (signature agreement) >= threshold."""
    keep = np.zeros(len(i), dtype=bool)
    k = sig.shape[1]
    need = int(np.ceil(threshold * k))
    for s in range(0, len(i), chunk):
        a = sig[i[s : s + chunk]]
        b = sig[j[s : s + chunk]]
        keep[s : s + chunk] = (a == b).sum(axis=1) >= need
    return keep


class PaddedSets:
    """Small sets of element hashes as a padded ``(n, width)`` matrix.

    Pair intersections are then one broadcast comparison per chunk of pairs, so verifying
    hundreds of thousands of LSH candidates costs numpy time, not Python time. Sets wider
    than ``width`` are flagged in ``overflow``; callers check those pairs exactly in Python.
    """

    def __init__(self, flat: np.ndarray, offsets: np.ndarray, width: int) -> None:
        n = len(offsets) - 1
        self.lengths = np.diff(offsets)
        self.overflow = self.lengths > width
        owner = np.repeat(np.arange(n), self.lengths)
        pos = np.arange(len(flat)) - np.repeat(offsets[:-1], self.lengths)
        keep = pos < width
        self.m = np.zeros((n, width), dtype=np.uint64)
        # 0 marks padding, so real elements are forced odd (never 0).
        self.m[owner[keep], pos[keep]] = flat[keep] | np.uint64(1)

    def intersections(self, i: np.ndarray, j: np.ndarray, chunk: int = 8192) -> np.ndarray:
        """Return ``|set_i ∩ set_j|`` for each pair (elements within a set are distinct)."""
        out = np.empty(len(i), dtype=np.int64)
        for s in range(0, len(i), chunk):
            a = self.m[i[s : s + chunk]][:, :, None]
            b = self.m[j[s : s + chunk]][:, None, :]
            out[s : s + chunk] = ((a == b) & (a != 0)).sum(axis=(1, 2))
        return out

    def nested(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Return whether one set of each pair contains the other."""
        if not len(i):
            return np.ones(0, dtype=bool)
        small = np.minimum(self.lengths[i], self.lengths[j])
        need = small > 0
        out = np.ones(len(i), dtype=bool)
        if need.any():
            idx = np.flatnonzero(need)
            out[idx] = self.intersections(i[idx], j[idx]) == small[idx]
        return out


class UnionFind:
    """Union-find with path halving; the smaller index always becomes the root."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if rb < ra:
            ra, rb = rb, ra
        self.parent[rb] = ra
        return ra


# --- identity guard --------------------------------------------------------------------


def _eq_or_empty(a: frozenset[str], b: frozenset[str]) -> bool:
    return not a or not b or a == b


def _nested(a: frozenset[str], b: frozenset[str]) -> bool:
    return a <= b or b <= a


def identity_compatible(a: Features, b: Features, *, values: bool) -> bool:
    """True when two texts may be about the same thing (topic identity guard).

    Hosts and environments must be equal when both texts name one ("ledger-stg-2" vs
    "ledger-prod-1" never merge); identifiers and names must nest (a text naming QueueCo and
    one naming BusCo never merge, one naming only Engine may join one naming Engine
    and the database). With ``values`` numbers and versions must be equal too
    ("worker v1.4" vs "worker v1.5").
    """
    return (
        _eq_or_empty(a.hosts, b.hosts)
        and _eq_or_empty(a.envs, b.envs)
        and _nested(a.idents, b.idents)
        and _nested(a.names, b.names)
        and (not values or a.polar_values() == b.polar_values())
    )


class Profile:
    """The merged identity of a growing group, checked before every union.

    Checking only the pair being joined lets a vague text bridge two specific ones
    ("worker deployed" joining "worker v1.4 …" and "worker v1.5 …"); checking the groups'
    merged profiles stops that chaining.
    """

    __slots__ = ("envs", "hosts", "idents", "names", "values")

    def __init__(self, f: Features, values: bool) -> None:
        self.hosts = f.hosts
        self.envs = f.envs
        self.idents = f.idents
        self.names = f.names
        self.values = f.polar_values() if values else frozenset()

    def compatible(self, other: Profile, values: bool) -> bool:
        """Apply the identity guard to two group profiles."""
        return (
            _eq_or_empty(self.hosts, other.hosts)
            and _eq_or_empty(self.envs, other.envs)
            and _nested(self.idents, other.idents)
            and _nested(self.names, other.names)
            and (not values or self.values == other.values)
        )

    def absorb(self, other: Profile) -> None:
        """Merge another group's identity into this one."""
        self.hosts |= other.hosts
        self.envs |= other.envs
        self.idents |= other.idents
        self.names |= other.names
        self.values |= other.values


def guarded_union(
    n: int,
    sim: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    features: Sequence[Features],
    identity: Identity | None,
    *,
    values: bool,
) -> list[list[int]]:
    """Union verified pairs under the identity guard; return the groups.

    Phase 1 joins pairs whose identities are *equal* with vectorised connected components:
    equal identities can never conflict, and the merged identity is the same one, so this
    cannot block any later merge. Phase 2 takes the remaining pairs best-first (highest
    similarity, then lowest ids) with the merged-profile check, in Python but on far
    fewer pairs. Without exact ``identity`` keys only phase 2 runs.
    """
    if identity is not None:
        key = identity.key(values=values)
        same = key[i] == key[j]
    else:  # no exact identity keys: every pair goes through the profile check
        same = np.zeros(len(i), dtype=bool)
    labels = components(n, i[same], j[same])
    rest = np.flatnonzero(~same)
    if not len(rest):
        return groups_from_labels(labels)
    ri, rj, rs = labels[i[rest]], labels[j[rest]], sim[rest]
    keep = ri != rj
    ri, rj, rs = ri[keep], rj[keep], rs[keep]
    order = np.lexsort((rj, ri, -rs))
    uf = UnionFind(n)
    profiles: dict[int, Profile] = {}
    for a, b in zip(ri[order].tolist(), rj[order].tolist(), strict=True):
        ra, rb = uf.find(a), uf.find(b)
        if ra == rb:
            continue
        pa = profiles.get(ra) or Profile(features[ra], values)
        pb = profiles.get(rb) or Profile(features[rb], values)
        if not pa.compatible(pb, values):
            continue
        root = uf.union(ra, rb)
        keep_p, other = (pa, pb) if root == ra else (pb, pa)
        keep_p.absorb(other)
        profiles[root] = keep_p
        profiles.pop(rb if root == ra else ra, None)
    final = np.fromiter((uf.find(int(x)) for x in labels), dtype=np.int64, count=n)
    return groups_from_labels(final)


@dataclass(frozen=True, slots=True)
class Identity:
    """Per-text order-independent hashes of each identity kind (0 when a text has none).

    They let the identity guard run vectorised over millions of LSH candidate pairs, sort
    likely twins next to each other in large buckets, and key the fast union path.
    """

    hosts: np.ndarray
    envs: np.ndarray
    values: np.ndarray
    idents: np.ndarray
    names: np.ndarray

    @classmethod
    def of(cls, features: Sequence[Features], hasher: TokenHasher) -> Identity:
        """Hash every text's identity sets exactly (sum of element hashes, vectorised)."""

        def col(sets: list[tuple[str, ...]]) -> np.ndarray:
            flat, off = hasher.flat(sets)
            out = np.zeros(len(sets), dtype=np.uint64)
            nonempty = off[1:] > off[:-1]
            if nonempty.any():
                with np.errstate(over="ignore"):
                    sums = np.add.reduceat(flat, off[:-1][nonempty])
                out[nonempty] = sums | np.uint64(1)
            return out

        return cls(*(col(sets) for sets in _kind_sets(features)))

    @classmethod
    def of_unions(
        cls,
        features: Sequence[Features],
        members: np.ndarray,
        offsets: np.ndarray,
        hasher: TokenHasher,
    ) -> Identity:
        """Exact identity hashes of unions: text ``t`` unites ``features[members[o_t:o_t+1]]``.

        The same numbers ``of`` would give for the united features, computed without
        building them: gather every part's element hashes per text, drop repeats, sum —
        all vectorised.
        """
        n = len(offsets) - 1
        text_of_member = np.repeat(np.arange(n), np.diff(offsets))

        def col(sets: list[tuple[str, ...]]) -> np.ndarray:
            flat, off = hasher.flat(sets)
            out = np.zeros(n, dtype=np.uint64)
            lens = np.diff(off)[members]
            total = int(lens.sum())
            if not total:
                return out
            first = np.cumsum(lens) - lens
            pos = np.repeat(off[:-1][members] - first, lens) + np.arange(total)
            vals = flat[pos]
            owner = np.repeat(text_of_member, lens)
            order = np.lexsort((vals, owner))
            vals, owner = vals[order], owner[order]
            keep = np.ones(total, dtype=bool)
            keep[1:] = (vals[1:] != vals[:-1]) | (owner[1:] != owner[:-1])
            vals, owner = vals[keep], owner[keep]
            np.add.at(out, owner, vals)  # wraps mod 2**64, like the per-text sums
            has = np.bincount(owner, minlength=n) > 0
            out[has] |= np.uint64(1)
            return out

        return cls(*(col(sets) for sets in _kind_sets(features)))

    def same(self, a: int, b: int) -> bool:
        """True when two texts have identical identities (every kind hashes equal)."""
        return (
            self.hosts[a] == self.hosts[b]
            and self.envs[a] == self.envs[b]
            and self.values[a] == self.values[b]
            and self.idents[a] == self.idents[b]
            and self.names[a] == self.names[b]
        )

    def take(self, idx: np.ndarray) -> Identity:
        """Return the identities of a subset of texts, in ``idx`` order."""
        return Identity(
            self.hosts[idx], self.envs[idx], self.values[idx], self.idents[idx], self.names[idx]
        )

    def mask(self, i: np.ndarray, j: np.ndarray, *, values: bool) -> np.ndarray:
        """The host/environment (and value) half of the guard for pairs, vectorised."""
        hi, hj = self.hosts[i], self.hosts[j]
        ei, ej = self.envs[i], self.envs[j]
        ok = ((hi == 0) | (hj == 0) | (hi == hj)) & ((ei == 0) | (ej == 0) | (ei == ej))
        if values:
            ok &= self.values[i] == self.values[j]
        return ok

    def key(self, *, values: bool, names: bool = True) -> np.ndarray:
        """Combine the kinds into one hash: equal keys mean identical identities."""
        with np.errstate(over="ignore"):
            k = self.hosts * np.uint64(3) + self.envs * np.uint64(5)
            k += self.idents * np.uint64(7)
            if names:
                k += self.names * np.uint64(11)
            if values:
                k += self.values * np.uint64(13)
        return k


def _kind_sets(features: Sequence[Features]) -> list[list[tuple[str, ...]]]:
    # hosts, envs, values (with polarity), idents, names: the order of Identity's fields
    return [
        [tuple(f.hosts) for f in features],
        [tuple(f.envs) for f in features],
        [tuple(f.polar_values()) for f in features],
        [tuple(f.idents) for f in features],
        [tuple(f.names) for f in features],
    ]


def components(n: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Connected components of an edge list, vectorised; returns each node's min label.

    Min-label propagation with pointer jumping: a handful of numpy passes instead of a
    Python union-find loop over hundreds of thousands of edges.
    """
    labels = np.arange(n, dtype=np.int64)
    if not len(i):
        return labels
    while True:
        m = np.minimum(labels[i], labels[j])
        new = labels.copy()
        np.minimum.at(new, i, m)
        np.minimum.at(new, j, m)
        while True:  # pointer jumping: follow labels to their roots
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, labels):
            return labels
        labels = new


def groups_from_labels(labels: np.ndarray) -> list[list[int]]:
    """Turn component labels into sorted member lists ordered by their smallest member."""
    order = np.lexsort((np.arange(len(labels)), labels))
    sorted_labels = labels[order]
    cuts = [0, *(np.flatnonzero(sorted_labels[1:] != sorted_labels[:-1]) + 1).tolist()]
    cuts.append(len(order))
    flat = order.tolist()
    parts = [flat[a:b] for a, b in pairwise(cuts) if b > a]
    parts.sort(key=lambda p: p[0])
    return parts


# --- episode-level dedupe --------------------------------------------------------------


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """Return the Jaccard similarity of two sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def near_duplicate_groups(
    contents: Sequence[tuple[str, ...]],
    features: Sequence[Features],
    threshold: float,
    hasher: TokenHasher,
    *,
    identity: Identity | None = None,
    k: int = 30,
    bands: int = 10,
) -> list[list[int]]:
    """Group near-duplicate texts (indices into ``contents``) by shingle MinHash + LSH.

    Candidates come from LSH (10 bands × 3 rows catches Jaccard 0.7 with ~98 %
    probability), an estimate filter drops clear misses, and each survivor is confirmed
    with the exact Jaccard of unigram+bigram shingles (bigrams keep word order: "from X
    to Y" is not "from Y to X") and the identity guard with values and polarity, so
    "worker v1.4 …" / "worker v1.5 …" and "we use X" / "we do not use X" never fold.
    """
    n = len(contents)
    if n < 2:
        return [[i] for i in range(n)]
    rows = k // bands
    uni_flat, uni_off = hasher.flat(contents)
    sig = minhash(uni_flat, uni_off, k)
    # Bigram element hashes, built from neighbouring unigram hashes in one vector pass;
    # min over the union of unigrams and bigrams is the min of the two signatures.
    if len(uni_flat) > 1:
        with np.errstate(over="ignore"):
            bi = uni_flat[:-1] * np.uint64(0x9E3779B97F4A7C15) + (
                (uni_flat[1:] << np.uint64(17)) | (uni_flat[1:] >> np.uint64(47))
            )
        ends = uni_off[1:]
        starts = uni_off[:-1]
        bi_len = np.maximum(ends - starts - 1, 0)
        bi_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(bi_len, out=bi_off[1:])
        # keep bigram positions that do not cross into the next text
        valid = np.ones(len(bi), dtype=bool)
        last = ends[:-1] - 1
        valid[last[(last >= 0) & (last < len(bi))]] = False
        bi = bi[valid]
        sig = np.minimum(sig, minhash(bi, bi_off, k))
    else:
        bi = np.empty(0, dtype=np.uint64)
        bi_off = np.zeros(n + 1, dtype=np.int64)
    active = uni_off[1:] > uni_off[:-1]
    # ``features`` may be lazy (built only when read); the caller can then pass the
    # identity hashes, which decide most pairs without touching the features at all.
    if identity is None:
        identity = Identity.of(features, hasher)
    tb = identity.key(values=True, names=False)
    # Near-duplicates share most bands, so a short window already finds them.
    i, j = lsh_pairs(sig, bands, rows, window=2, tiebreak=tb, active=active)
    keep = estimate_filter(sig, i, j, max(threshold - 0.1, 0.05))
    i, j = i[keep], j[keep]
    keep = identity.mask(i, j, values=True)

    def shingles(x: int) -> set[int]:
        # Integer shingle hashes straight from the arrays: no strings, nothing cached.
        out = set(uni_flat[uni_off[x] : uni_off[x + 1]].tolist())
        out.update(bi[bi_off[x] : bi_off[x + 1]].tolist())
        return out

    sims: list[float] = []
    ii: list[int] = []
    jj: list[int] = []
    for a, b in zip(i[keep].tolist(), j[keep].tolist(), strict=True):
        sim = jaccard(shingles(a), shingles(b))
        if sim < threshold:
            continue
        # Equal identity hashes settle the guard; only a pair whose identities differ
        # (one naming more hosts, say) needs the sets themselves.
        if identity.same(a, b) or identity_compatible(features[a], features[b], values=True):
            sims.append(sim)
            ii.append(a)
            jj.append(b)
    return guarded_union(
        n,
        np.asarray(sims, dtype=np.float64),
        np.asarray(ii, dtype=np.int64),
        np.asarray(jj, dtype=np.int64),
        features,
        identity,
        values=True,
    )


def exact_groups(
    keys: Sequence[str], order: Callable[[int], object] | None = None
) -> list[list[int]]:
    """Group indices whose normalised-text keys are identical (first occurrence leads)."""
    out: dict[str, list[int]] = {}
    for idx, key in enumerate(keys):
        out.setdefault(key, []).append(idx)
    groups = list(out.values())
    if order is not None:
        for g in groups:
            g.sort(key=order)
    return groups
