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
   are different facts ("Engine 16" vs "Engine 15", "worker v1.4" vs "v1.5"); the split
   is also what conflict detection reads. Sentences with no value join the only value
   present, or stay together when there are several.

Before both stages, **entity anchors** settle the commonest short fact outright: a host,
a product and its version stated together ("EngineDB 16 on ledger-db-2", "ledger-db-2
= our ledger Engine, version 16"). Sentences sharing host, product, environment and
version are one fact however much else they say: a restatement buried in a long log line
("for whoever runs the next upgrade: …, don't point the reporting app anywhere else
even when the prod dump is being restored") has too few subject terms in common to reach
the Jaccard threshold, and its stray "prod" and "don't" would fail the identity guard and
the polarity split, although neither is about the fact. Only the anchor's own
neighbourhood decides its environment and polarity.

Time proximity is deliberately not a merge criterion: a fact restated three weeks later
is the strongest signal dreaming has. It enters through recency and recurrence instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NamedTuple

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
from .text import (
    _TIME_CHUNK_RE,
    _VERSION_RE,
    ENV,
    HOST,
    NEG_CUE,
    NOT_MARK,
    NOT_SUBJECT,
    NUM,
    TOKEN_RE,
    Features,
    host_envs,
    token_info,
    word_list,
)


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


class Anchor(NamedTuple):
    """A host + product + version fact a sentence states (see the module docstring)."""

    host: str
    product: str
    envs: frozenset[str]
    values: frozenset[str]  # the version, plus the negation mark when it is denied

    @property
    def subject(self) -> tuple[str, str, frozenset[str]]:
        """What the fact is about; sentences differing only in ``values`` disagree."""
        return self.host, self.product, self.envs


# Words that may stand between a product and its version ("Engine, version 16",
# "engine is v16"); anything else there means the number is not the product's version.
_VERSION_LINK = frozenset(word_list("version versions ver v release is was are"))
# A number followed by one of these is a measurement or a count, which no host "is".
_MEASURE_UNITS = frozenset(
    word_list(
        """
    b kb mb gb tb kib mib gib tib byte bytes % percent ms msec sec secs second seconds s min
    mins minute minutes h hr hrs hour hours day days week weeks x k m row rows message
    messages msg msgs req reqs request requests rps qps run runs entry entries event events
    item items file files line lines test tests failure failures error errors
    """
    )
)
TICKET_RE = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z][A-Z0-9]*)*-\d+\b")  # OPS-150, INC-7
_HOST_REACH = 6  # tokens between a host and the version it runs
_ENV_REACH = 3  # tokens around the anchor that may name its environment
_NEG_REACH = 2  # tokens before the anchor a negation may govern it from
_Tok = tuple[str, int]  # canonical form, flags
# chunk -> (its tokens, local indices of versions, of hosts that are not ticket ids,
# whether it holds a negation)
_Chunk = tuple[tuple[_Tok, ...], tuple[int, ...], tuple[int, ...], bool]
_ANCHOR_MEMO: dict[str, _Chunk] = {}
_HOST_ENVS: dict[str, frozenset[str]] = {}
_ANCHOR_MEMO_MAX = 200_000


def forget() -> None:
    """Forget the memoised chunks and host environments (``engine.forget``)."""
    _ANCHOR_MEMO.clear()
    _HOST_ENVS.clear()


def _anchor_chunk(chunk: str) -> _Chunk:
    """Classify one whitespace chunk's tokens once (chunks repeat across sentences)."""
    if len(_ANCHOR_MEMO) >= _ANCHOR_MEMO_MAX:
        _ANCHOR_MEMO.clear()
    toks: list[_Tok] = []
    versions: list[int] = []
    hosts: list[int] = []
    if not _TIME_CHUNK_RE.fullmatch(chunk):  # a clock time is when, never what
        for tok in TOKEN_RE.findall(chunk):
            canon, flags = token_info(tok)
            if flags & NUM and _VERSION_RE.fullmatch(tok.lower()):
                versions.append(len(toks))
            elif flags & HOST and not TICKET_RE.fullmatch(tok):
                hosts.append(len(toks))
            toks.append((canon, flags))
    got = (tuple(toks), tuple(versions), tuple(hosts), any(f & NEG_CUE for _, f in toks))
    _ANCHOR_MEMO[chunk] = got
    return got


def _envs_of(host: str) -> frozenset[str]:
    got = _HOST_ENVS.get(host)
    if got is None:
        if len(_HOST_ENVS) >= _ANCHOR_MEMO_MAX:
            _HOST_ENVS.clear()
        got = _HOST_ENVS[host] = frozenset(host_envs(host))
    return got


# A sentence reporting what happened ("Deployed worker v1.4 to app-7") is a timeline
# entry, not a standing fact; ordinary clustering keeps such entries apart by their
# other details. Skipping them also spares the token walk most lines of a busy log.
PAST_EVENTS = frozenset(
    word_list(
        """
    deployed released upgraded downgraded bumped rolled installed uninstalled merged tagged
    shipped built published pushed restarted rebooted scaled took ran started stopped failed
    reached hit spiked increased decreased grew dropped migrated reverted
    """
    )
)


def may_anchor(f: Features) -> bool:
    """Cheap test on a sentence's features: could it hold a fact anchor at all?"""
    return bool(f.hosts) and bool(f.values) and PAST_EVENTS.isdisjoint(f.content)


def fact_anchor(text: str) -> Anchor | None:
    """Return the one host + product + version fact a sentence states, or None.

    A version is a bare number or ``vN.N`` (not "71%", not "1.92 GB", not "124 rows")
    right after its product, or after "version"/"is" following it; a host within a few
    tokens of it names where that product runs (ticket ids such as ``OPS-150`` look like
    host names and are skipped). A sentence stating two different such facts returns
    None: it is a comparison or a summary, and merging it would bridge both facts.
    """
    get = _ANCHOR_MEMO.get
    toks: list[_Tok] = []
    versions: list[int] = []
    hosts: list[int] = []
    negated = False
    for c in text.split():
        part, v, h, neg = get(c) or _anchor_chunk(c)
        if v:
            at = len(toks)
            versions += [at + k for k in v]
        if h:
            at = len(toks)
            hosts += [at + k for k in h]
        negated |= neg
        toks += part
    if not versions or not hosts:
        return None  # most sentences: no version, or no host to run it on
    found: set[Anchor] = set()
    n = len(toks)
    for vi in versions:
        if vi + 1 < n and toks[vi + 1][0] in _MEASURE_UNITS:
            continue
        pi = vi - 1
        while pi >= 0 and toks[pi][0] in _VERSION_LINK:
            pi -= 1
        if pi < 0 or toks[pi][1] & (NOT_SUBJECT | HOST | ENV):
            continue  # "to v1.2", "at 16": the number is not a product's version
        product = toks[pi][0]
        value = frozenset({toks[vi][0]})
        for hi in hosts:
            if hi < pi - _HOST_REACH or hi > vi + _HOST_REACH:
                continue
            lo, top = min(hi, pi), max(hi, vi)
            values = value
            if negated and any(t[1] & NEG_CUE for t in toks[max(0, lo - _NEG_REACH) : top + 1]):
                values = value | NOT_MARK
            host = toks[hi][0]
            envs = _envs_of(host)
            if not envs:
                # The host name says nothing: the words around the anchor may.
                window = toks[max(0, lo - _ENV_REACH) : top + _ENV_REACH + 1]
                envs = frozenset(t[0] for t in window if t[1] & ENV and not t[1] & HOST)
            found.add(Anchor(host, product, envs, values))
    if len(found) != 1:
        return None
    return found.pop()
