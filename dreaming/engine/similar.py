"""Paraphrase-level grouping: which sentences state the same fact in other words.

Teams restate a fact in new words every time ("invoices end up in the ledger schema, one
partition per month" / "reminder: the ledger tables are monthly partitions"). What such
restatements keep is not their wording but their *rare* terms: the names of the things
the fact relates. So a sentence is a set of stemmed subject terms (identifiers, hosts and
code spans kept whole; values left out so that a changed value stays in the group and
conflict detection can see it), each weighted by its inverse document frequency over the
sweep's sentences, and two sentences are about the same fact when they share at least
two informative terms and those shared terms carry a large enough part of the shorter
sentence's weight.

Nothing compares all pairs. Each sentence proposes itself under the pairs of its
``_RARE_TERMS`` rarest terms (a pair of rare terms is far more specific than either term);
sentences sharing such a key are the only candidate neighbours, and a key shared by more
than ``_MAX_BUCKET`` sentences is a topic, not a fact, and proposes nothing. The cost is
linear in the number of sentences.

Grouping is star clustering: the sentence with the most (and strongest) neighbours becomes
a centre and takes its neighbours that pass the identity guard *against the centre*; then
the next unassigned sentence, and so on. Every member is directly similar to its centre, so
groups never chain ("A is like B, B is like C") into a topic, and the centre is the
wording that best represents the group.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise

import numpy as np
import Stemmer
from scipy import sparse

from .text import Features

_STEM = Stemmer.Stemmer("english")
_STEMS: dict[str, str] = {}

# A block joins a centre only if the centre is one of its closest few: a fact is rarely
# restated more than a handful of times in one block's immediate neighbourhood, and a
# true restatement ranks first or second for nearly every block (see ``similarity``).
_TOP = 3
# Two words seen together in this share of the blocks holding the rarer one are a name.
_PHRASE_SHARE = 0.8
# Rows of the candidate product per step: bounds its memory whatever the sweep's size.
_CHUNK = 4096
# Two shared terms is the least a relation between two things can be stated with; one
# shared term is only a topic ("the service").
MIN_SHARED_TERMS = 2


def forget() -> None:
    """Forget the memoised stems (``engine.forget``)."""
    _STEMS.clear()


def stem(term: str) -> str:
    """Return the stem of a plain word; identifiers, hosts and numbers stay whole."""
    got = _STEMS.get(term)
    if got is None:
        got = _STEM.stemWord(term) if term.isalpha() else term
        if len(_STEMS) > 200_000:
            _STEMS.clear()
        _STEMS[term] = got
    return got


def terms_of(f: Features) -> frozenset[str]:
    """Return a sentence's grouping terms: stemmed subject terms and values."""
    return frozenset(stem(t) for t in f.subject | f.values)


def block_terms(blocks: Sequence[Sequence[Features]]) -> list[frozenset[str]]:
    """Return each block's grouping terms, with fixed two-word names made one term.

    Two adjacent words that nearly always appear together ("field visit", a place
    name in two words) name one thing; counted as two terms they would weigh double and
    make any two blocks mentioning that one thing look like restatements. A pair is a
    phrase when it is seen in two blocks or more and in at least ``_PHRASE_SHARE`` of
    the blocks holding its rarer word. (Known cost: a word that also appears alone,
    "ledger" beside "ledger schema", then no longer matches its lone mentions.)
    """
    seqs: list[list[list[str]]] = []
    uni: dict[str, int] = {}
    bi: dict[tuple[str, str], int] = {}
    for feats in blocks:
        block_seqs = []
        seen_u: set[str] = set()
        seen_b: set[tuple[str, str]] = set()
        for f in feats:
            keep = f.subject | f.values
            seq = [stem(t) for t in f.content if t in keep]
            block_seqs.append(seq)
            seen_u.update(seq)
            seen_b.update(pairwise(seq))
        seqs.append(block_seqs)
        for t in seen_u:
            uni[t] = uni.get(t, 0) + 1
        for p in seen_b:
            bi[p] = bi.get(p, 0) + 1
    out: list[frozenset[str]] = []
    for block_seqs in seqs:
        terms: set[str] = set()
        absorbed: set[str] = set()
        for seq in block_seqs:
            terms.update(seq)
            for a, b in pairwise(seq):
                k = bi[(a, b)]
                if a != b and k >= 2 and k >= _PHRASE_SHARE * min(uni[a], uni[b]):
                    terms.add(a + " " + b)
                    absorbed.update((a, b))
        out.append(frozenset(terms - absorbed))
    return out


# A sweep too small to estimate rarity is read as if it were embedded in this many
# unrelated sentences: without it a term seen twice among five sentences would count as
# common, and no small batch could ever group.
_BACKGROUND = 64


class TermIndex:
    """Document frequencies of grouping terms over one set of blocks."""

    def __init__(self, df: dict[str, int], blocks: int) -> None:
        """The index of `blocks` blocks holding each term in `df[term]` of them."""
        self.n = blocks + _BACKGROUND
        self.df = df
        self._log_n = math.log(self.n)
        # Shared information that would turn up less than once among all pairs of
        # blocks by chance (a Bonferroni bound over n² pairs): 2 ln n nats.
        self.threshold = 2.0 * self._log_n
        self._idf: dict[str, float] = {}

    @classmethod
    def of(cls, term_sets: Sequence[frozenset[str]]) -> TermIndex:
        df: dict[str, int] = {}
        for ts in term_sets:
            for t in ts:
                df[t] = df.get(t, 0) + 1
        return cls(df, len(term_sets))

    def idf(self, term: str) -> float:
        """ln(n / df): the information, in nats, of finding the term in a block."""
        got = self._idf.get(term)
        if got is None:
            got = self._idf[term] = self._log_n - math.log(max(self.df.get(term, 0), 1))
        return got


def similarity(a: frozenset[str], b: frozenset[str], index: TermIndex) -> float:
    """The information two blocks share: the summed idf of their common terms, in nats.

    Under independence, the chance that two blocks share a set of terms is the product of
    the terms' frequencies, so the summed idf is the log-improbability of the overlap.
    Rare shared names dominate it, common words add almost nothing, and unlike a ratio it
    does not punish a short restatement for sitting in a long log line. (On a development
    corpus, a block's true restatement was its best-scoring neighbour 48 times in 54 by
    this measure, against 42 by idf cosine and 30 by the shared share of idf mass.)
    """
    shared = a & b
    if len(shared) < MIN_SHARED_TERMS:
        return 0.0
    idf = index.idf
    # fsum is exact whatever the order a set iterates in, which varies with the hash seed.
    return math.fsum(idf(t) for t in shared)


def neighbours(
    term_sets: Sequence[frozenset[str]],
    index: TermIndex,
    factor: float = 1.0,
) -> list[list[tuple[int, float]]]:
    """Return, per block, the blocks sharing at least ``factor`` × the index's threshold.

    Two sparse products, neither all-pairs: candidates are the pairs sharing a term no
    commoner than √n blocks (``generating``), found with a chunked block × term product;
    only those pairs get their full shared information computed.
    """
    n = len(term_sets)
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    if n < 2:
        return out
    threshold = index.threshold * factor
    df = index.df
    cap = generating(index.n)
    cols: dict[str, int] = {}
    rows_all: list[int] = []
    cols_all: list[int] = []
    gen_rows: list[int] = []
    gen_cols: list[int] = []
    for x, ts in enumerate(term_sets):
        # Columns numbered in sorted order, not the set's (hash-seeded) order, so the
        # float sums below, and every tie they decide, are the same on every run.
        for t in sorted(ts):
            d = df.get(t, 0)
            if d < 2:
                continue  # a term seen once is shared with nothing
            c = cols.get(t)
            if c is None:
                c = cols[t] = len(cols)
            rows_all.append(x)
            cols_all.append(c)
            if d <= cap:
                gen_rows.append(x)
                gen_cols.append(c)
    if not gen_rows:
        return out
    idf = np.zeros(len(cols), dtype=np.float64)
    for t, c in cols.items():
        idf[c] = index.idf(t)
    shape = (n, len(cols))
    full = sparse.csr_matrix((idf[cols_all], (rows_all, cols_all)), shape=shape, dtype=np.float64)
    ones = sparse.csr_matrix(
        (np.ones(len(rows_all), dtype=np.float32), (rows_all, cols_all)), shape=shape
    )
    gen = sparse.csr_matrix(
        (np.ones(len(gen_rows), dtype=np.float32), (gen_rows, gen_cols)), shape=shape
    )
    gen_t = gen.T.tocsr()
    for lo in range(0, n, _CHUNK):
        hi = min(lo + _CHUNK, n)
        cand = (gen[lo:hi] @ gen_t).tocoo()
        a = cand.row.astype(np.int64) + lo
        b = cand.col.astype(np.int64)
        keep = a < b
        a, b = a[keep], b[keep]
        if not len(a):
            continue
        info = np.asarray(full[a].multiply(ones[b]).sum(axis=1)).ravel()
        shared = np.asarray(ones[a].multiply(ones[b]).sum(axis=1)).ravel()
        ok = (info >= threshold) & (shared >= MIN_SHARED_TERMS)
        for x, y, s in zip(a[ok].tolist(), b[ok].tolist(), info[ok].tolist(), strict=True):
            out[x].append((y, s))
            out[y].append((x, s))
    return out


def generating(n: int) -> int:
    """The commonest a term may be and still propose candidate pairs: √n blocks.

    Such a term carries at most ½ ln n nats, so a pair sharing only terms that common
    needs four of them to reach the 2 ln n threshold; those rare pairs are given up to
    keep the candidate product near-linear.
    """
    return max(math.isqrt(n), 8)


def star_groups(
    n: int,
    near: Sequence[Sequence[tuple[int, float]]],
    compatible: Callable[[int, int], bool],
    prefer: Sequence[float],
) -> list[list[int]]:
    """Star clustering: strongest centres first, each taking its free compatible neighbours.

    A neighbour joins a centre only if the centre is among its own ``_TOP`` closest
    blocks: a long block shares a little with many others, and without this it would
    gather several facts around itself. ``prefer`` breaks ties between equally connected
    centres (source trust): a curated note's wording represents a fact before a chat's.
    """
    top = [{y for y, _ in sorted(near[x], key=lambda ys: (-ys[1], ys[0]))[:_TOP]} for x in range(n)]
    strength = [sum(s for _, s in near[x]) for x in range(n)]
    order = sorted(range(n), key=lambda x: (-strength[x], -prefer[x], x))
    owner = [-1] * n
    groups: list[list[int]] = []
    for c in order:
        if owner[c] >= 0:
            continue
        members = [c]
        owner[c] = len(groups)
        for m, _ in sorted(near[c], key=lambda ms: (-ms[1], ms[0])):
            if owner[m] < 0 and c in top[m] and compatible(c, m):
                owner[m] = owner[c]
                members.append(m)
        groups.append(members)
    # The greedy order decides which blocks are centres, not which centre a block restates
    # best: a member taken by an earlier, more connected centre moves to the centre it
    # shares most with (one that would have taken it too), so a restatement is not kept
    # by a centre that merely shares its topic.
    centres = [g[0] for g in groups]
    centre_group = {c: gi for gi, c in enumerate(centres)}
    regrouped: list[list[int]] = [[c] for c in centres]
    for members in groups:
        for m in members[1:]:
            choices = [
                (sim, -y)
                for y, sim in near[m]
                if y in centre_group and y in top[m] and compatible(y, m)
            ]
            if choices:
                owner[m] = centre_group[-max(choices)[1]]
            regrouped[owner[m]].append(m)
    groups = regrouped
    # Two stars whose centres are close neighbours (either way) are one fact told from
    # two centres (five short wordings pair up before any gathers all of them). Each star
    # merges at most once and only into a star that has not merged itself: no chains.
    centre_of = [g[0] for g in groups]
    merged_into = list(range(len(groups)))
    for gi, c in enumerate(centre_of):
        for y, _ in sorted(near[c], key=lambda ys: (-ys[1], ys[0])):
            gj = owner[y]
            if gj == gi or y != centre_of[gj] or merged_into[gj] != gj or merged_into[gi] != gi:
                continue
            if (y in top[c] or c in top[y]) and compatible(c, y):
                merged_into[gi] = gj
                break
    out: dict[int, list[int]] = {}
    for gi, members in enumerate(groups):
        out.setdefault(merged_into[gi], []).extend(members)
    return sorted((sorted(g) for g in out.values()), key=lambda g: g[0])
