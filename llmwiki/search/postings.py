"""PostgreSQL search rows' postings, decoded once and held in this process.

The GIN index proves a query's list by walking every posting of its words; a word most
rows hold costs tens of milliseconds a query that way. Here each word a query asks for
is read once (its rows, and how often each row holds it in its own words and in its
context), and later queries score it from memory, as the Whoosh backend scores its
decoded postings (`bm25f.top_k`), with the rank `postgres._rank` gives in SQL.

What is held stays true by the write number the project's writes take (`SearchTerm.
writes`): every query reads it with the term counts, and when it has moved on, the rows
written since are read again and their postings replaced. A row deleted since leaves
postings behind; they can only matter once they reach a list, and the lookup of that
list's keys, which finds no such row, drops them then. Reads inside a transaction go to
SQL instead: a rollback could take back a write this process had already read.

Bounded by `LLMWIKI_SEARCH_POSTINGS_MB` (a posting costs 8 bytes: its row's place and its
two counts) across every layer held; the least recently asked word goes first, but not
one the last RECENT queries used: a query whose words cannot be held without that is
ranked in SQL. Each row a held word names
also keeps its id, lengths and flags (about 34 bytes: 3.4 MB for 100,000 rows).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from django.conf import settings
from django.db import connection

from llmwiki.search import bm25f
from llmwiki.search.backends import CONTEXT_BOOST

# A posting's bytes: its row's place (int32) and its two counts (uint16).
POSTING_BYTES = 8
# Reading again more than this share of a layer's rows costs more than starting afresh.
RELOAD_SHARE = 0.25
# Words used by the last this many queries are not pushed out to make room for others.
RECENT = 1000

# (id, own length, context length, sensitive, lexeme, occurrences in own words, in
# context) of the rows of a project's layer written after a number, for the lexemes asked;
# a row holding none of them once, with lexeme NULL.
_WRITTEN_SQL = """
SELECT d.id, d.own, d.ctx, d.sensitive, u.lexeme, u.own, u.ctx
FROM llmwiki_searchdocument d LEFT JOIN LATERAL (
  SELECT lexeme, cardinality(array_positions(weights, 'A')) AS own,
    cardinality(array_positions(weights, 'B')) AS ctx
  FROM unnest(d.vec) WHERE lexeme = ANY(%s)
) u ON true
WHERE d.project_id = %s AND d.layer = %s AND d.written > %s
"""

# The counts of a word's occurrences in a row's own words (label A) and its context (B),
# as the rank of a one-word query whose label weights are 1 for that label and 0 for the
# other (ts_rank_cd adds up the weights of the occurrences): far cheaper than unnesting the
# row's vector to find the word.
_COUNTS = (
    "ts_rank_cd('{0, 0, 0, 1}', d.vec, %s::tsquery), ts_rank_cd('{0, 0, 1, 0}', d.vec, %s::tsquery)"
)


class _Layer:
    """One layer of one project: its rows' lengths and flags by place, and the postings
    (places and frequencies) of the words asked so far."""

    def __init__(self, writes: int) -> None:
        self.writes = writes
        self.ids = np.empty(0, np.int64)
        self.own = np.empty(0, np.float64)
        self.ctx = np.empty(0, np.float64)
        self.sensitive = np.empty(0, bool)
        self.alive = np.empty(0, bool)
        self.by_id = np.empty(0, np.int64)  # places, in id order (for `lookup`)
        self.words: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # The averages the rows' field weights were last worked out at, and those weights.
        self._weighed: tuple[tuple, tuple[np.ndarray, np.ndarray]] | None = None

    def place(self, rows: Sequence[tuple]) -> np.ndarray:
        """The places of rows (id, own, ctx, sensitive, ...), their lengths and flags set,
        added where new."""
        ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        places = self.lookup(ids)
        new = places < 0
        if new.any():
            fresh = np.unique(ids[new])
            start = len(self.ids)
            self.ids = np.concatenate([self.ids, fresh])
            grow = len(fresh)
            self.own = np.concatenate([self.own, np.zeros(grow)])
            self.ctx = np.concatenate([self.ctx, np.zeros(grow)])
            self.sensitive = np.concatenate([self.sensitive, np.zeros(grow, bool)])
            self.alive = np.concatenate([self.alive, np.zeros(grow, bool)])
            self.by_id = np.argsort(self.ids, kind="stable")
            places[new] = start + np.searchsorted(fresh, ids[new])
        self.own[places] = [r[1] for r in rows]
        self.ctx[places] = [r[2] for r in rows]
        self.sensitive[places] = [r[3] for r in rows]
        self.alive[places] = True
        self._weighed = None
        return places

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """Each id's place, -1 where it has none."""
        if not len(self.ids):
            return np.full(len(ids), -1, np.int64)
        known = self.ids[self.by_id]
        at = np.minimum(np.searchsorted(known, ids), len(known) - 1)
        return np.where(known[at] == ids, self.by_id[at], -1)

    def load(self, rows: Sequence[tuple], lexemes: Sequence[str]) -> None:
        """The postings of `lexemes` from rows (id, own, ctx, sensitive, then each
        lexeme's count in the row's own words and in its context)."""
        places = self.place(rows)
        counts = np.array([r[4:] for r in rows], np.float64).reshape(len(rows), len(lexemes), 2)
        for i, word in enumerate(lexemes):
            own, ctx = counts[:, i, 0], counts[:, i, 1]
            held = np.flatnonzero(own + ctx)
            self.words[word] = (
                places[held].astype(np.int32),
                own[held].astype(np.uint16),
                ctx[held].astype(np.uint16),
            )

    def replace(self, rows: Sequence[tuple], places: np.ndarray) -> None:
        """Rows written again: their old postings out of every word held, the new in."""
        changed = np.zeros(len(self.ids), bool)
        changed[places] = True
        picked = _by_word(rows)
        for word, held in self.words.items():
            keep = ~changed[held[0]]
            new = _postings(rows, places, picked.get(word, []))
            self.words[word] = tuple(
                np.concatenate([old[keep], more]) for old, more in zip(held, new, strict=True)
            )

    def scores(self, words: Sequence[tuple[str, float]], averages) -> np.ndarray:
        """Every place's score for `words` ((lexeme, idf), added up in that order), as
        `postgres._ranked` ranks in SQL: each word's rank (`postgres._rank`) from its field
        weights for the row's lengths against `averages` (context's, own's), in float4
        as PostgreSQL keeps them, times its idf."""
        low, k1 = 1 - bm25f.B, bm25f.K1
        own_weight, ctx_weight = self._weights(tuple(averages))
        out = np.zeros(len(self.ids))
        for word, idf in words:
            at, own, ctx = self.words[word]
            cd = own * own_weight[at] + ctx * ctx_weight[at]
            tf = cd.astype(np.float32).astype(np.float64) / low
            out[at] += idf * ((k1 + 1) * (1 - k1 / (k1 + tf)))
        return out

    def _weights(self, averages: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
        """Each row's label weights for its own words and its context at `averages`
        (context's, own's), rounded to float4 as PostgreSQL keeps them (`postgres._lengths`)."""
        if self._weighed is None or self._weighed[0] != averages:
            low, b = 1 - bm25f.B, bm25f.B
            avg_ctx, avg_own = averages
            own = (low / (low + b * self.own / avg_own)).astype(np.float32)
            ctx = (CONTEXT_BOOST * low / (low + b * self.ctx / avg_ctx)).astype(np.float32)
            self._weighed = (averages, (own.astype(np.float64), ctx.astype(np.float64)))
        return self._weighed[1]


def _by_word(rows: Sequence[tuple]) -> dict[str, list[int]]:
    """The indexes of the rows (..., lexeme, ...) for each lexeme."""
    out: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if row[4] is not None:
            out.setdefault(row[4], []).append(i)
    return out


def _postings(rows, places, picked: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(places, own counts, context counts) of the rows at indexes `picked`."""
    n = len(picked)
    return (
        places[picked].astype(np.int32),
        np.fromiter((rows[i][5] for i in picked), np.uint16, n),
        np.fromiter((rows[i][6] for i in picked), np.uint16, n),
    )


class _Held:
    """Every layer held by this process, with one bound on their postings."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.layers: dict[tuple, _Layer] = {}
        # (layer key, word) -> (postings, the ask that last used it), least recent first.
        self.used: OrderedDict[tuple, tuple[int, int]] = OrderedDict()
        self.asks = 0
        self.size = 0

    @property
    def budget(self) -> int:
        """Postings held at most (read from settings, so a test may change it)."""
        return settings.LLMWIKI_SEARCH_POSTINGS_MB * 1024 * 1024 // POSTING_BYTES

    def top(self, project_id, layer, terms, words, averages, sensitive, limit):
        """The `limit` best (key, score) rows for `words` (each with its lexeme and idf,
        added up in their order), the layer's term dictionary rows `terms` (by lexeme, ""
        counting the layer), or None when their postings could not be held (the caller
        ranks in SQL)."""
        rows = {w.lexeme: terms[w.lexeme].docs for w in words}
        if sum(rows.values()) > self.budget:
            return None
        writes, docs = terms[""].writes, terms[""].docs
        words = [(w.lexeme, w.idf) for w in words]
        db = connection.settings_dict
        key = (db.get("HOST"), db.get("PORT"), db.get("NAME"), project_id, layer)
        with self.lock, connection.cursor() as cursor:
            self.asks += 1
            held = self._current(cursor, key, writes, docs)
            missing = [w for w, _ in words if w not in held.words]
            if missing:
                if not self._room(sum(rows[w] for w in missing)):
                    return None
                held.load(_counted(cursor, key, missing), missing)
            for word, _ in words:
                self._touch(key, word, len(held.words[word][0]))
            scores = held.scores(words, averages)
            self._shed()
            if not sensitive:
                scores[held.sensitive] = 0.0
            return _best(cursor, held, scores, project_id, layer, limit)

    def _current(self, cursor, key, writes, docs) -> _Layer:
        """The layer as held, brought up to `writes` (started afresh when it is behind
        what is held, as after a rollback or a rebuild)."""
        held = self.layers.get(key)
        if held is None or writes < held.writes or not docs:
            return self._fresh(key, writes)
        if writes == held.writes:
            return held
        rows = _written(cursor, key, list(held.words), held.writes)
        places = held.place(rows)
        if len(np.unique(places)) > RELOAD_SHARE * docs:
            return self._fresh(key, writes)
        held.replace(rows, places)
        held.writes = writes
        return held

    def _fresh(self, key, writes) -> _Layer:
        self._drop(key)
        self.layers[key] = _Layer(writes)
        return self.layers[key]

    def _room(self, need: int) -> bool:
        """Whether `need` more postings fit, counting what words asked more than RECENT
        asks ago would free: a word the recent queries use is not pushed out for another
        (each would push the other out in turn, and be read again each time)."""
        short = self.size + need - self.budget
        for size, ask in self.used.values():
            if short <= 0 or ask > self.asks - RECENT:
                break
            short -= size
        return short <= 0

    def _touch(self, key, word, size) -> None:
        entry = (key, word)
        self.size += size - self.used.pop(entry, (0, 0))[0]
        self.used[entry] = (size, self.asks)

    def _shed(self) -> None:
        while self.size > self.budget and len(self.used) > 1:
            (key, word), (size, _) = self.used.popitem(last=False)
            self.size -= size
            held = self.layers.get(key)
            if held is not None:
                held.words.pop(word, None)

    def _drop(self, key) -> None:
        self.layers.pop(key, None)
        for entry in [e for e in self.used if e[0] == key]:
            self.size -= self.used.pop(entry)[0]

    def forget(self) -> None:
        """Hold nothing: the next queries read their words afresh (bench/retrieval.py's
        cold path)."""
        with self.lock:
            self.layers.clear()
            self.used.clear()
            self.size = 0


def _written(cursor, key, lexemes, since: int) -> list[tuple]:
    """`_WRITTEN_SQL`'s rows for `lexemes` in the layer `key` names."""
    cursor.execute(_WRITTEN_SQL, [lexemes, *key[3:], since])
    return cursor.fetchall()


def _counted(cursor, key, lexemes) -> list[tuple]:
    """The rows of the layer `key` names holding any of `lexemes` (by the GIN index): id,
    own length, context length, sensitive, then each lexeme's two counts (`_COUNTS`)."""
    # postgres imports this module.
    from llmwiki.search.postgres import _tsquery_term, tsquery_any

    counts = ", ".join(_COUNTS for _ in lexemes)
    cursor.execute(
        f"SELECT d.id, d.own, d.ctx, d.sensitive, {counts} FROM llmwiki_searchdocument d "  # noqa: S608
        "WHERE d.project_id = %s AND d.layer = %s AND d.vec @@ %s::tsquery",
        [*(_tsquery_term(w) for w in lexemes for _ in range(2)), *key[3:], tsquery_any(lexemes)],
    )
    return cursor.fetchall()


def _best(cursor, held: _Layer, scores: np.ndarray, project_id, layer, limit):
    """The `limit` best live places by score, then id, as (key, score). Rows the lookup of
    their keys no longer finds in the layer are marked gone and the list taken again,
    looking twice as far each time, so many rows deleted at once cost few lookups."""
    scores[~held.alive] = 0.0
    ahead = limit
    while True:
        found = bm25f.best(scores, ahead, held.ids)  # ties by id, as `_ranked` settles them
        ids = [int(i) for i in held.ids[found]]
        cursor.execute(
            "SELECT id, key FROM llmwiki_searchdocument WHERE id = ANY(%s) AND project_id = %s "
            "AND layer = %s",
            [ids, project_id, layer],
        )
        keys = dict(cursor.fetchall())
        gone = [place for place, i in zip(found, ids, strict=True) if i not in keys]
        if not gone:
            return [(keys[i], float(scores[p])) for p, i in zip(found[:limit], ids, strict=False)]
        held.alive[gone] = False
        scores[gone] = 0.0
        ahead *= 2


held = _Held()
