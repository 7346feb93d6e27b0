"""Top-k BM25F over a Whoosh index, scored with numpy arrays.

Whoosh's own searcher walks a query's postings one document at a time in Python, about
80 µs per matching document. OR queries of everyday words match a fifth of a project's
episodes, so at 100k episodes one query took seconds (bench/RESULTS.md). Here each
term's postings are decoded a block at a time into arrays, and scoring, masking and
top-k are array operations over every document of the index at once.

The files stay Whoosh's. The scores are BM25F proper (Robertson and Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009): a term's frequency in each
field is normalised by that field's length, weighted by the field's boost, and the sum
saturates once, with Okapi's idf over the documents holding the term in any field.
Whoosh's own BM25F scores each field apart and adds the saturated scores, so a word said
in both the turn and its context counted twice; on the LoCoMo dev split the proper
form ranks an evidence turn in the top 5 for 0.706 of questions against 0.665.
Ties go in document order, as in Whoosh.

Segments never change once written (a deletion is a separate list), so what is decoded
from one (field lengths, a term's postings) is kept for later queries, bounded by
`CACHE_POSTINGS` postings across every index the process has open.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from whoosh.reading import TermNotFound

K1, B = 1.2, 0.75  # Whoosh's BM25F defaults, the usual Okapi values
# About 50 MB of ids and weights: a term cached per segment costs 8 bytes a posting.
CACHE_POSTINGS = 6_000_000
_NONE = (np.empty(0, np.int32), np.empty(0, np.float32))


def okapi_idf(doc_count: int, df: int) -> float:
    """ln(1 + (N - df + 0.5) / (df + 0.5)): positive for every df, unlike Robertson's."""
    return math.log(1 + (doc_count - df + 0.5) / (df + 0.5))


class _Cache:
    """What was decoded from each segment (field lengths, postings); least recent out."""

    def __init__(self, budget: int):
        self.budget = budget
        self.size = 0
        self.lock = threading.Lock()
        self.entries: OrderedDict[tuple, tuple[np.ndarray, ...]] = OrderedDict()

    def get(self, key: tuple, decode) -> tuple[np.ndarray, ...]:
        """`key` starts with the segment's (index, segment id)."""
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
                return found
        found = decode()
        with self.lock:
            if key not in self.entries:
                self.entries[key] = found
                self.size += len(found[0])
            while self.size > self.budget and len(self.entries) > 1:
                _, dropped = self.entries.popitem(last=False)
                self.size -= len(dropped[0])
        return found

    def drop_postings(self) -> None:
        """Keep field lengths, forget postings: a query then reads its terms from disk
        (bench/retrieval.py measures that cold path)."""
        with self.lock:
            for key in [k for k in self.entries if len(k) == 3]:
                self.size -= len(self.entries.pop(key)[0])

    def forget(self, segments: set[tuple[str, str]]) -> None:
        with self.lock:
            for key in [k for k in self.entries if k[0] in segments]:
                self.size -= len(self.entries.pop(key)[0])


_cache = _Cache(CACHE_POSTINGS)


def _decode(matcher) -> tuple[np.ndarray, np.ndarray]:
    """A term's postings as (document numbers, term frequencies) within its segment."""
    if hasattr(matcher, "_read_ids") and hasattr(matcher, "_next_block"):
        # Whoosh's on-disk postings (W3LeafMatcher): a block of up to 128 at a time. These
        # are the codec's own helpers; tests/unit/test_search_bm25f.py guards them across upgrades.
        ids, weights = [], []
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            ids.append(np.asarray(matcher._ids, dtype=np.int32))
            weights.append(np.asarray(matcher._weights, dtype=np.float32))
            matcher._next_block()
        if not ids:
            return _NONE
        return np.concatenate(ids), np.concatenate(weights)
    # Postings inlined in the term's entry (rare terms): the matcher's public interface.
    pairs = []
    while matcher.is_active():
        pairs.append((matcher.id(), matcher.weight()))
        matcher.next()
    if not pairs:
        return _NONE
    ids, weights = zip(*pairs, strict=True)
    return np.asarray(ids, dtype=np.int32), np.asarray(weights, dtype=np.float32)


class _Segment:
    def __init__(self, index_key: str, reader, offset: int):
        self.reader = reader
        self.offset = offset
        self.count = reader.doc_count_all()
        self.key = (index_key, reader.segment().segment_id())

    def postings(self, field: str, text: str) -> tuple[np.ndarray, np.ndarray]:
        def decode():
            # The raw postings: deletions are masked for every term at once in top_k().
            reader = self.reader
            try:
                matcher = reader._terms.matcher(
                    field, reader._text_to_bytes(field, text), reader.schema[field].format
                )
            except TermNotFound:
                return _NONE
            return _decode(matcher)

        return _cache.get((self.key, field, text), decode)

    def lengths(self, field: str) -> np.ndarray:
        def decode():
            length = self.reader.doc_field_length
            return (
                np.fromiter(
                    (length(i, field, 0) or 0 for i in range(self.count)), np.float32, self.count
                ),
            )

        return _cache.get((self.key, field), decode)[0]


_live: dict[str, set[tuple[str, str]]] = {}


def _segments(index_key: str, searcher) -> list[_Segment]:
    # An index with no segment yet (created by a delete before any write) reads as one
    # empty reader without a segment: nothing to score.
    segments = [
        _Segment(index_key, r, o)
        for r, o in searcher.ixreader.leaf_readers()
        if r.segment() is not None
    ]
    live = {s.key for s in segments}
    gone = _live.get(index_key, set()) - live
    if gone:  # a merge replaced them: what was decoded from them is of no further use
        _cache.forget(gone)
    _live[index_key] = live
    return segments


def forget(index_key: str) -> None:
    """Drop what was decoded from an index that is being removed."""
    _cache.forget(_live.pop(index_key, set()))


def saturated(idf: float, weighted_tf):
    """One term's share of a BM25F score, given its length-normalised, boosted frequency."""
    return idf * (K1 + 1) * weighted_tf / (weighted_tf + K1)


def doc_freqs(
    index_key: str, searcher, fields: Sequence[tuple[str, float]], terms: Iterable[str]
) -> tuple[int, dict[str, int]]:
    """The index's document count and, per term, the documents holding it in any of
    `fields`: what `top_k` reads its idf from (deleted documents count, as there)."""
    segments = _segments(index_key, searcher)
    total = searcher.doc_count_all()
    held = np.zeros(total, bool)
    out = {}
    for text in terms:
        held.fill(False)
        for field, _ in fields:
            for seg in segments:
                ids, _ = seg.postings(field, text)
                held[ids + seg.offset] = True
        out[text] = int(held.sum())
    return total, out


def top_k(
    index_key: str,
    searcher,
    fields: Sequence[tuple[str, float]],
    terms: Iterable[str],
    limit: int,
    exclude: tuple[str, str] | None = None,
    idf: Mapping[str, float] | None = None,
    averages: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """The `limit` best (document number, score) pairs for any of `terms` in `fields`.

    `fields` pairs each field with its boost; documents holding the `exclude` term
    (field, text) are left out, as are deleted ones. `index_key` names the index for the
    cache (its directory). `idf` gives each term's weight and `averages` each field's
    average length when the scores must be comparable with another index's (the same
    statistics for both); by default they are this index's own.
    """
    terms = list(terms)
    segments = _segments(index_key, searcher)
    total = searcher.doc_count_all()
    scores = np.zeros(total, np.float64)
    weighted = np.zeros(total, np.float64)
    if averages is None:
        averages = {field: searcher.avg_field_length(field) or 1.0 for field, _ in fields}
    for text in terms:
        # BM25F: the term's frequencies in every field, each normalised by the field's
        # length and weighted by its boost, are added before saturating once.
        weighted.fill(0.0)
        for field, boost in fields:
            avg = averages[field]
            for seg in segments:
                ids, tf = seg.postings(field, text)
                if len(ids):
                    norm = (1 - B) + B * seg.lengths(field)[ids] / avg
                    weighted[ids + seg.offset] += boost * tf / norm
        matched = np.flatnonzero(weighted)
        if len(matched):
            weight = idf[text] if idf is not None else okapi_idf(total, len(matched))
            scores[matched] += saturated(weight, weighted[matched])
    for seg in segments:
        if seg.reader.has_deletions():
            gone = np.fromiter(seg.reader.deleted_docs_set, np.int64)
            scores[gone + seg.offset] = 0.0
        if exclude is not None:
            ids, _ = seg.postings(*exclude)
            scores[ids + seg.offset] = 0.0
    # Ties go in document order, as Whoosh's collector settles them.
    return [(int(i), float(scores[i])) for i in best(scores, limit)]


def best(scores: np.ndarray, limit: int, ties: np.ndarray | None = None) -> np.ndarray:
    """The places of the `limit` best positive `scores`, best first, equal scores in the
    order of `ties` (one key per place; by default the places' own), without sorting every
    place that scored."""
    found = np.flatnonzero(scores > 0)
    if len(found) > limit:
        # Every place scoring at least the limit-th best, so ties at the cut go by `ties`.
        kth = np.partition(scores[found], len(found) - limit)[len(found) - limit]
        found = found[scores[found] >= kth]
    order = found if ties is None else ties[found]
    return found[np.lexsort((order, -scores[found]))][:limit]
