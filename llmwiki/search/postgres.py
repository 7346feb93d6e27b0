"""The PostgreSQL search backend: stored, labelled tsvectors with a GIN index per layer and
a term dictionary of each word's document count and peak rank.

A query is scored from the postings of its words held in the process (`postings`); inside
a transaction, in SQL, by passes that rank only the rows that can reach its list."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection, transaction
from django.db.models import OuterRef, Subquery

from llmwiki.models import SearchDocument, SearchTerm, SearchWatermark
from llmwiki.search import bm25f, postings
from llmwiki.search.backends import CONTEXT_BOOST, Backend, rarity
from llmwiki.search.documents import EPISODE, LAYERS, Watermark, head_columns, project_row_sql

# The text search configuration rows and queries are parsed with: `english` without its
# hyphenated-compound tokens, so "tw-worker-2" is read as tw, worker and 2, as the Whoosh
# backend reads it (migration 0018).
CONFIG = "llmwiki_english"
# ts_rank_cd's weights of labels D, C, B, A: an item's own words (A) in full, its context
# (B) at CONTEXT_BOOST, as the Whoosh backend weighs its fields.
WEIGHTS = f"'{{0, 0, {CONTEXT_BOOST}, 1}}'::float4[]"


def _rank(vec: str, query: str, weights: str = WEIGHTS) -> str:
    """A document's BM25F rank for one word (without its idf), as SQL, with the Whoosh
    backend's K1 and B: the word's occurrences in each field, divided by that field's
    length normalisation and weighted by its boost, saturate once.

    For a one-word query ts_rank_cd adds up the label weights of the word's occurrences,
    so `weights` carries each field's boost times (1 - B) / its normalisation (see
    `_lengths`): every factor stays within the 1 ts_rank_cd allows, and dividing by
    1 - B gives BM25F's frequency. By default the field weights alone: the rank at the
    shortest length, so the most any length or average gives, which is a word's peak."""
    tf = f"ts_rank_cd({weights}, {vec}, {query}) / {1 - bm25f.B}"
    # (K1 + 1) tf / (tf + K1), with the frequency written once so it is computed once.
    return f"({bm25f.K1 + 1} * (1 - {bm25f.K1} / ({bm25f.K1} + {tf})))"


def _lengths(own: str, context: str) -> str:
    """The label weights of `_rank` for a row whose fields are `own` and `context` words
    long, as SQL taking the two average lengths (context's, then own's) as parameters."""
    low, b = 1 - bm25f.B, bm25f.B
    return (
        f"ARRAY[0, 0, {CONTEXT_BOOST * low} / ({low} + {b} * {context} / %s), "
        f"{low} / ({low} + {b} * {own} / %s)]::float4[]"
    )


# A row's word `u.lexeme` as a tsquery of its own, quoted as `_tsquery_term` quotes one.
LEXEME_QUERY = "('''' || replace(replace(u.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery"
# Rows a first ranking pass should read, as the words' document counts estimate them: a
# bound on work, not a tuning; the answer is exact whatever its value (see `_ranked`).
FIRST_PASS_ROWS = 100
# Query words a ranking pass's match names, the highest-scoring first; the others are
# taken as held by every document, so the match stays small however long the query.
MATCH_WORDS = 6
# Float rounding between the bounds added up here and the ranks PostgreSQL adds up.
SLACK = 1e-6
# A row's rank for its word `u.lexeme` at the average lengths its layer's peaks are ranked
# at (`r`, the layer's empty-lexeme row).
PEAK = _rank("d.vec", LEXEME_QUERY, _lengths("d.own", "d.ctx") % ("r.peak_context", "r.peak_own"))
# The layer's empty-lexeme row, beside its rows `d`.
AIMED = (
    "JOIN llmwiki_searchterm r ON r.project_id = d.project_id AND r.layer = d.layer "
    "AND r.lexeme = ''"
)
# Adds (a sign of +1) or takes away (-1) the words of the rows under some keys and page
# key patterns, and the rows themselves and their lengths under the empty lexeme, in one
# statement. Rows added raise their words' peaks (their layer's averages aimed first, see
# `_aim`); rows taken away leave the peaks as they were.
COUNT_TERMS_SQL = f"""
INSERT INTO llmwiki_searchterm (project_id, layer, lexeme, docs, peak, own_words, context_words)
SELECT %s, layer, lexeme, %s * count(*), max(peak), %s * sum(own), %s * sum(ctx) FROM (
  SELECT d.layer, u.lexeme, CASE WHEN %s > 0 THEN {PEAK} ELSE 0 END AS peak, 0 AS own, 0 AS ctx
  FROM llmwiki_searchdocument d {AIMED}, unnest(d.vec) u
  WHERE d.project_id = %s AND (d.key = ANY(%s) OR d.key LIKE ANY(%s))
  UNION ALL
  SELECT d.layer, '', 0, d.own, d.ctx FROM llmwiki_searchdocument d
  WHERE d.project_id = %s AND (d.key = ANY(%s) OR d.key LIKE ANY(%s))
) words GROUP BY layer, lexeme
ON CONFLICT (project_id, layer, lexeme)
DO UPDATE SET docs = llmwiki_searchterm.docs + EXCLUDED.docs,
  peak = greatest(llmwiki_searchterm.peak, EXCLUDED.peak),
  own_words = llmwiki_searchterm.own_words + EXCLUDED.own_words,
  context_words = llmwiki_searchterm.context_words + EXCLUDED.context_words
"""  # noqa: S608 (module constants only)
# The counts, peaks and lengths COUNT_TERMS_SQL keeps, taken again from the rows (for
# `search_index --check`).
RECOUNT_TERMS_SQL = f"""
SELECT d.layer, u.lexeme, count(*), max({PEAK})::float8, 0, 0
FROM llmwiki_searchdocument d {AIMED}, unnest(d.vec) u WHERE d.project_id = %s
GROUP BY d.layer, u.lexeme
UNION ALL
SELECT layer, '', count(*), 0, sum(own), sum(ctx) FROM llmwiki_searchdocument
WHERE project_id = %s GROUP BY layer
"""  # noqa: S608 (module constants only)
# Each word's peak in a layer, ranked again at the averages just aimed at (`_aim`).
REAIM_SQL = f"""
UPDATE llmwiki_searchterm t SET peak = p.peak FROM (
  SELECT u.lexeme, max({PEAK}) AS peak FROM llmwiki_searchdocument d {AIMED}, unnest(d.vec) u
  WHERE d.project_id = %s AND d.layer = %s GROUP BY u.lexeme
) p WHERE t.project_id = %s AND t.layer = %s AND t.lexeme = p.lexeme
"""  # noqa: S608 (module constants only)
# How far a layer's average lengths may move from those its peaks are ranked at before
# they are ranked again: a bound on work (the peaks stay bounds, if looser), not a tuning.
DRIFT = 1.25
# The watermark's columns, in `Watermark`'s order.
MARK_FIELDS = ("episode_id", "audit_id", "revision_id")
# The numbers writes take (migration 0019; see `SearchTerm.writes`).
WRITES_SEQUENCE = "llmwiki_search_writes"
# Serialises writers of one project's rows and term counts (pg_advisory_xact_lock's
# first key: this module's namespace; the second: the project id).
LOCK_NAMESPACE = 0x5EA2C4


class PostgresBackend(Backend):
    """Full-text search over `SearchDocument` rows: their stored, labelled vectors and a GIN
    index per layer (migrations 0010, 0014), with a term dictionary (`SearchTerm`) for each
    word's document frequency and peak rank, on PostgreSQL only."""

    name = "postgresql"

    def __init__(self) -> None:
        # The last query's words from the term dictionary; any write forgets them.
        self._last_terms: tuple[tuple[int, str] | None, dict] = (None, {})

    def watermark(self, project_id):
        row = SearchWatermark.objects.filter(project=project_id).first()
        return Watermark(row.episode_id, row.audit_id, row.revision_id) if row else Watermark()

    def marks(self, project_id):
        """The watermark and the head in one query: every retrieval asks for both."""
        with connection.cursor() as cursor:
            cursor.execute(project_row_sql(connection.vendor, _marks_columns), [project_id])
            row = cursor.fetchone()
        if row is None:
            return Watermark(), Watermark()
        return Watermark(*(n or 0 for n in row[3:])), Watermark(*(n or 0 for n in row[:3]))

    def apply(
        self, project_id, upserts, deletes, pages, mark, *, scrub=False, optimize=False
    ) -> None:
        # A deleted row's text is gone from every query at once; VACUUM reclaims its space.
        deletes, pages = list(deletes), list(pages)
        written = [d.key for d in upserts]
        self._last_terms = (None, {})
        with transaction.atomic(), connection.cursor() as cursor:
            # Two folds of one project at once would count the same rows' words twice.
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_NAMESPACE, project_id])
            # Taken under the lock, so the project's writes commit in the order of their numbers.
            cursor.execute(f"SELECT nextval('{WRITES_SEQUENCE}')")
            (write,) = cursor.fetchone()
            _count_terms(cursor, project_id, deletes + written, pages, -1)
            for i in range(0, len(deletes), 5000):
                SearchDocument.objects.filter(
                    project=project_id, key__in=deletes[i : i + 5000]
                ).delete()
            for page in pages:
                SearchDocument.objects.filter(
                    project=project_id, key__startswith=f"page:{page}:"
                ).delete()
            rows = [
                SearchDocument(
                    project_id=project_id,
                    key=d.key,
                    layer=d.layer,
                    # Matched as one text (the GIN index), ranked apart: see search().
                    text=f"{d.text}\n{d.context}" if d.context else d.text,
                    context=d.context,
                    sensitive=d.sensitive,
                    trust=d.trust,
                    security_class=d.security_class,
                    page_target=d.page_target,
                    occurred_at=d.occurred_at,
                    digest=d.digest,
                    written=write,
                )
                for d in upserts
            ]
            SearchDocument.objects.bulk_create(
                rows,
                batch_size=2000,
                update_conflicts=True,
                unique_fields=["project", "key"],
                update_fields=[
                    "layer",
                    "text",
                    "context",
                    "sensitive",
                    "trust",
                    "security_class",
                    "page_target",
                    "occurred_at",
                    "digest",
                    "written",
                ],
            )
            _aim(cursor, project_id, written)
            _count_terms(cursor, project_id, written, [], +1)
            cursor.execute(
                "UPDATE llmwiki_searchterm SET writes = %s WHERE project_id = %s AND lexeme = ''",
                [write, project_id],
            )
            if mark is not None:
                SearchWatermark.objects.update_or_create(
                    project_id=project_id,
                    defaults={
                        "episode_id": mark.episode_id,
                        "audit_id": mark.audit_id,
                        "revision_id": mark.revision_id,
                    },
                )

    def search(self, project_id, layer, query, *, sensitive, limit, idf=None):
        """Documents holding any of the query's words, ranked by idf-weighted term ranks.

        PostgreSQL's ts_rank knows how often a word occurs in a document but not how rare
        it is in the project, so a word nearly every episode has would weigh as much as
        the one that finds the answer. Each query word is therefore ranked apart and
        weighted by its Okapi idf among the layer's documents (read from the term
        dictionary), as BM25 weighs it. The item's own words count in full and its
        context (label B) at CONTEXT_BOOST, each normalised by its length against the
        average, as the Whoosh backend weighs its fields: the averages are the layer's, or
        with `idf` the episodes' (as `rarity` counts words among them), so a claim is
        scored as an episode of the same words would be.
        """
        # With `idf`, the words as `idf()` just read them for this query.
        terms = self._terms(project_id, query, fresh=idf is None)
        rows = dict(terms.get(layer, {}))
        total = rows.pop("", _NO_TERM).docs
        among = EPISODE if idf is not None and terms[EPISODE].get("", _NO_TERM).docs else layer
        with connection.cursor() as cursor:
            if idf is None:
                idf = {
                    lexeme: bm25f.okapi_idf(total, t.docs) for lexeme, t in rows.items() if t.docs
                }
            averages = terms[among].get("", _NO_TERM).averages()
            grown = terms[layer].get("", _NO_TERM).growth(averages)
            words = [
                _Word(lexeme, t.docs / total, idf[lexeme], idf[lexeme] * _loosened(t.peak, grown))
                for lexeme, t in sorted(rows.items())
                if t.docs > 0 and lexeme in idf
            ]
            if not words:
                return []
            # Highest bound first: `_ranked` names them so; both paths add them up in order.
            words.sort(key=lambda w: -w.bound)
            if not connection.in_atomic_block:
                found = postings.held.top(
                    project_id, layer, terms[layer], words, averages, sensitive, limit
                )
                if found is not None:
                    return found
            return _ranked(cursor, project_id, layer, sensitive, limit, words, total, averages)

    def idf(self, project_id, query):
        counts = {}
        for layer, words in self._terms(project_id, query, fresh=True).items():
            held = {lexeme: t.docs for lexeme, t in words.items() if lexeme and t.docs > 0}
            counts[layer] = (words.get("", _NO_TERM).docs, held)
        return rarity(counts)

    def _terms(self, project_id, query, *, fresh) -> dict[str, dict[str, _Term]]:
        """{layer: {lexeme: its term}} for the query's words ("" counting the layer's
        documents and their lengths). Read `fresh` by `idf()`, then kept for the searches
        of the same retrieval (a round trip to the server costs more than the read)."""
        if not fresh and self._last_terms[0] == (project_id, query):
            return self._last_terms[1]
        out: dict[str, dict[str, _Term]] = defaultdict(dict)
        with connection.cursor() as cursor:
            cursor.execute(
                # Every layer named, so the term dictionary's index finds the words.
                "SELECT layer, lexeme, docs, peak, own_words, context_words, peak_own, "  # noqa: S608
                "peak_context, writes "
                "FROM llmwiki_searchterm WHERE project_id = %s AND layer = ANY(%s) AND lexeme = "
                f"ANY(array_append(tsvector_to_array(to_tsvector('{CONFIG}', %s)), ''))",
                [project_id, list(LAYERS), query],
            )
            for layer, lexeme, *term in cursor.fetchall():
                out[layer][lexeme] = _Term(*term)
        self._last_terms = ((project_id, query), out)
        return out

    def score_texts(self, query, texts, idf):
        """Each text ranked as `search(..., idf=idf)` ranks a document's own words (label
        A): its length against the episodes' average, so each text is scored on its own."""
        if not texts or not idf:
            return [0.0] * len(texts)
        score, params = _text_score(idf, self._averages(query))
        # Each text is parsed once (OFFSET 0 keeps the planner from parsing it once a word).
        texts_sql = (
            f"SELECT n, setweight(to_tsvector('{CONFIG}', body), 'A') AS vec "  # noqa: S608
            "FROM unnest(%s::text[]) WITH ORDINALITY u(body, n) OFFSET 0"
        )
        sql = f"SELECT {score} FROM {_weighed('n', texts_sql)} ORDER BY n"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, list(texts)])
            return [float(row[0]) for row in cursor.fetchall()]

    def rank_rows(self, query, rows, idf):
        """(id, score) of the rows `rows` selects (SQL and its parameters: an id and the
        tsvector of a text as `to_tsvector(CONFIG, ...)` parses it), scored as
        `score_texts` scores that text, best first (then by id), those holding no query
        word left out. Nothing is parsed or sent here: the vectors are kept (OFFSET 0
        weighs each once, not once a word)."""
        if not idf:
            return []
        score, params = _text_score(idf, self._averages(query))
        inner, inner_params = rows
        vectors = f"SELECT k, setweight(words, 'A') AS vec FROM ({inner}) r(k, words) OFFSET 0"  # noqa: S608
        sql = f"SELECT k, {score} AS rank FROM {_weighed('k', vectors)} ORDER BY rank DESC, k"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *inner_params])
            return [(k, float(rank)) for k, rank in cursor.fetchall() if rank > 0]

    def _averages(self, query) -> tuple[float, float]:
        """The episodes' average lengths that `idf()` read with `query`'s words: the ones
        `search(..., idf=idf)` ranks by (1 when it read none)."""
        read, terms = self._last_terms
        if read is None or read[1] != query:
            return _NO_TERM.averages()
        return terms[EPISODE].get("", _NO_TERM).averages()

    def digests(self, project_id):
        return dict(SearchDocument.objects.filter(project=project_id).values_list("key", "digest"))

    def miscounted(self, project_id):
        """Also a word whose kept peak is below what a row holding it ranks (a query would
        then leave that row out of lists it belongs in), and a layer whose kept lengths
        ("layer:", with its count) are not its rows'."""
        kept = SearchTerm.objects.filter(project=project_id).exclude(docs=0)
        kept = {
            (t.layer, t.lexeme): _Term(t.docs, t.peak, t.own_words, t.context_words) for t in kept
        }
        with connection.cursor() as cursor:
            cursor.execute(RECOUNT_TERMS_SQL, [project_id, project_id])
            actual = {(layer, lexeme): _Term(*term) for layer, lexeme, *term in cursor.fetchall()}
        wrong = set()
        for word in kept.keys() | actual:
            have, real = kept.get(word, _NO_TERM), actual.get(word, _NO_TERM)
            if have.peak < real.peak or have._replace(peak=0.0) != real._replace(peak=0.0):
                wrong.add(f"{word[0]}:{word[1]}")
        return sorted(wrong)

    def clear(self, project_id):
        self._last_terms = (None, {})
        with transaction.atomic():
            SearchDocument.objects.filter(project=project_id).delete()
            SearchTerm.objects.filter(project=project_id).delete()
            SearchWatermark.objects.filter(project=project_id).delete()


def _marks_columns() -> tuple:
    kept = SearchWatermark.objects.filter(project=OuterRef("pk"))
    return (*head_columns(), *(Subquery(kept.values(f)[:1]) for f in MARK_FIELDS))


# A text's length in words beside its vector `vec`, for `_text_score`, taking a tsquery
# of every query word twice: a rank divided by the same rank normalised by length (ts_rank
# option 2, every position counted) is the length, without unnesting the vector, which
# costs more than the ranking. A text holding none of the words scores 0 at any length.
_LENGTH = (
    "coalesce(round(ts_rank(vec, %s::tsquery)::float8 "
    "/ nullif(ts_rank(vec, %s::tsquery, 2), 0)), 0) AS len"
)


def _weighed(key: str, vectors: str) -> str:
    """The rows of `vectors` (SQL of a key column `key` and a vector `vec`) as `t`, each
    with its length's field weights `w` for `_text_score`, worked out once a row (OFFSET 0
    keeps the planner from working out the length and weights again for each word)."""
    return (
        f"(SELECT {key}, vec, {_lengths('len', '0')} AS w "  # noqa: S608 (the callers' SQL)
        f"FROM (SELECT {key}, vec, {_LENGTH} FROM ({vectors}) v) l OFFSET 0) t"
    )


def _text_score(idf: dict[str, float], averages: tuple[float, float]) -> tuple[str, list]:
    """A text's score (its vector `t.vec` and field weights `t.w`, see `_weighed`) as the
    sum of each query word's idf-weighted rank, its length against `averages`: fixed
    fragments, one per word; every value travels as a parameter (the rows' last)."""
    terms = sorted(idf)
    score = " + ".join(f"%s * {_rank('t.vec', '%s::tsquery', 't.w')}" for _ in terms)
    params = [x for term in terms for x in (idf[term], _tsquery_term(term))]
    return score, [*params, *averages, tsquery_any(terms), tsquery_any(terms)]


def _count_terms(cursor, project_id: int, keys: list[str], pages: list[int], sign: int) -> None:
    """Add (sign +1) or take away (-1) the words of the rows under `keys` and `pages` from
    the term counts, and the rows themselves from their layer's count."""
    if keys or pages:
        patterns = [f"page:{page}:%" for page in pages]
        cursor.execute(
            COUNT_TERMS_SQL, [project_id, sign, sign, sign, sign] + [project_id, keys, patterns] * 2
        )


class _Term(NamedTuple):
    """A term dictionary row; the lengths and the averages the peaks are ranked at are on
    the empty lexeme's only."""

    docs: int
    peak: float
    own_words: int = 0
    context_words: int = 0
    peak_own: float = 0.0
    peak_context: float = 0.0
    writes: int = 0

    def growth(self, averages: tuple[float, float]) -> float:
        """How many times over `averages` (context's, own's) outgrow those this layer's
        peaks are ranked at, at least 1: a row's BM25F frequency grows with an average no
        faster than the average does, so its peak times this is a bound at `averages`."""
        aimed = (self.peak_context, self.peak_own)
        if not all(aimed):
            return 1.0
        return max(1.0, *(now / then for now, then in zip(averages, aimed, strict=True)))

    def averages(self) -> tuple[float, float]:
        """BM25's average lengths of a layer's context and own words (1 when none), in the
        order `_lengths` takes them."""
        if not self.docs:
            return 1.0, 1.0
        return self.context_words / self.docs or 1.0, self.own_words / self.docs or 1.0


_NO_TERM = _Term(0, 0.0)


def _loosened(peak: float, grown: float) -> float:
    """A rank `peak` (of `_rank`) with its BM25F frequency `grown` times over."""
    if grown <= 1.0 or peak <= 0.0:
        return peak
    k1 = bm25f.K1
    tf = k1 * peak / (k1 + 1 - peak) * grown if peak < k1 + 1 else math.inf
    return (k1 + 1) * tf / (tf + k1) if tf < math.inf else k1 + 1


def _aim(cursor, project_id: int, keys: list[str]) -> None:
    """Before rows just written under `keys` are counted: set the average lengths their
    layer's peaks are ranked at to the layer's averages with them, where it has none yet,
    or where its averages have drifted past DRIFT from them (its peaks then ranked again)."""
    if not keys:
        return
    cursor.execute(
        "SELECT d.layer, count(*), sum(d.own), sum(d.ctx), coalesce(max(r.docs), 0), "
        "coalesce(max(r.own_words), 0), coalesce(max(r.context_words), 0), "
        "coalesce(max(r.peak_own), 0), coalesce(max(r.peak_context), 0) "
        "FROM llmwiki_searchdocument d LEFT JOIN llmwiki_searchterm r ON r.project_id = "
        "d.project_id AND r.layer = d.layer AND r.lexeme = '' "
        "WHERE d.project_id = %s AND d.key = ANY(%s) GROUP BY d.layer",
        [project_id, keys],
    )
    for layer, n, own, ctx, docs, own_words, context_words, *aimed in cursor.fetchall():
        averages = _Term(docs + n, 0.0, own_words + own, context_words + ctx).averages()
        if docs and all(aimed):
            # `aimed` is (own's, context's); `averages` (context's, own's).
            pairs = zip(averages, reversed(aimed), strict=True)
            if max(max(now / then, then / now) for now, then in pairs) <= DRIFT:
                continue
        cursor.execute(
            "INSERT INTO llmwiki_searchterm (project_id, layer, lexeme, docs, peak, own_words, "
            "context_words, peak_own, peak_context) VALUES (%s, %s, '', 0, 0, 0, 0, %s, %s) "
            "ON CONFLICT (project_id, layer, lexeme) DO UPDATE SET peak_own = EXCLUDED.peak_own, "
            "peak_context = EXCLUDED.peak_context",
            [project_id, layer, averages[1], averages[0]],
        )
        if docs:
            cursor.execute(REAIM_SQL, [project_id, layer, project_id, layer])


@dataclass(frozen=True)
class _Word:
    lexeme: str
    share: float  # of the layer's documents that hold it
    idf: float
    bound: float  # the most it adds to a document's score: idf times its peak

    @property
    def query(self) -> str:
        return _tsquery_term(self.lexeme)


def _ranked(cursor, project_id, layer, sensitive, limit, words, total, averages):
    """The `limit` best rows for `words` (highest bound first), exactly, without ranking
    every row that holds one of them.

    A row's score is at most the sum of the bounds of the words it holds. A pass ranks
    only the rows whose bounds reach a floor (a match the GIN index answers): when its
    `limit`-th score reaches the floor too, no row left out can enter the list, and the
    pass is the answer (MaxScore and WAND's bound: Turtle and Flood 1995, Broder et al.
    2003). The first floor is the highest that the words' document counts say about
    FIRST_PASS_ROWS rows reach. If that pass's `limit`-th score falls below it, a second
    pass with that score as the floor is exact; if it finds fewer rows than `limit`, a
    second pass ranks every row holding a word. A later pass leaves out the rows an
    earlier one ranked (their best are kept), so no row is ranked twice.
    """
    named, assumed = words[:MATCH_WORDS], math.fsum(w.bound for w in words[MATCH_WORDS:])
    score = " + ".join(f"%s * {_rank('vec', '%s::tsquery', 'w')}" for _ in words)
    # The SQL is assembled from fixed fragments, one per query word; every value (the
    # words included) travels as a parameter. Each row's field weights for its lengths
    # against `averages` (see `_rank`) are worked out once, not once a word (OFFSET 0
    # keeps the planner from copying them into each word's rank): they cost more than
    # the rank itself.
    sql = (
        f"SELECT key, {score} AS rank, id FROM (SELECT key, id, vec, "  # noqa: S608
        f"{_lengths('own', 'ctx')} AS w FROM llmwiki_searchdocument "
        "WHERE project_id = %s AND layer = %s AND (%s OR NOT sensitive) "
        "AND vec @@ %s::tsquery OFFSET 0) d ORDER BY rank DESC, id LIMIT %s"
    )
    scored = [x for w in words for x in (w.idf, w.query)]
    anything = " | ".join(w.query for w in words)

    def best(match: str) -> list[tuple[str, float, int]]:
        cursor.execute(sql, [*scored, *averages, project_id, layer, sensitive, match, limit])
        return [(key, float(rank), pk) for key, rank, pk in cursor.fetchall()]

    rows = FIRST_PASS_ROWS
    floor = _floor(named, total, rows) + assumed
    found: list[tuple[str, float, int]] = []
    ranked = ""  # the rows earlier passes ranked, as a match
    while True:
        match = _reaching(named, floor * (1 - SLACK) - assumed) or anything
        # The index leaves out what an earlier pass ranked: its best are in `found`.
        fresh = best(f"({match}) & !({ranked})" if ranked else match)
        found = sorted(found + fresh, key=lambda r: (-r[1], r[2]))[:limit]
        if match == anything or (len(found) == limit and found[-1][1] >= floor):
            return [(key, rank) for key, rank, _ in found]
        ranked = f"{ranked} | ({match})" if ranked else f"({match})"
        if len(found) == limit:
            floor = found[-1][1]
        else:
            rows *= 10
            floor = min(floor / 2, _floor(named, total, rows) + assumed)


def _floor(words: list[_Word], total: int, rows: int) -> float:
    """The highest sum of bounds that about `rows` of `total` rows reach, taking the words
    to fall in rows independently (0: every row holding a word)."""
    if total <= rows:
        return 0.0
    chances: dict[float, float] = {0.0: 1.0}  # sum of bounds held -> share of rows
    for w in words:
        grown: dict[float, float] = defaultdict(float)
        for held, share in chances.items():
            grown[held + w.bound] += share * w.share
            grown[held] += share * (1 - w.share)
        chances = grown
    floor, reached = 0.0, 0.0
    for held, share in sorted(chances.items(), reverse=True):
        reached += share * total
        if reached > rows and floor:
            return floor
        floor = held
    return 0.0


def _reaching(words: list[_Word], need: float) -> str:
    """A tsquery for the rows holding words of `words` (highest bound first) whose bounds
    add up to at least `need` ("" when every row holding any of them does)."""
    left = list(itertools.accumulate(w.bound for w in reversed(words)))[::-1]

    def build(i: int, need: float) -> str | None:  # None: no row; "": every row
        if need <= 0:
            return ""
        if i == len(words) or left[i] < need:
            return None
        held = build(i + 1, need - words[i].bound)
        rest = build(i + 1, need)
        if rest == "":
            return ""
        parts = []
        if held is not None:
            parts.append(words[i].query if held == "" else f"{words[i].query} & ({held})")
        if rest is not None:
            parts.append(f"({rest})" if " | " in rest else rest)
        return " | ".join(parts) if parts else None

    if need <= min((w.bound for w in words), default=0):
        return ""
    return build(0, need) or ""


def tsquery_any(lexemes: Iterable[str]) -> str:
    """A tsquery matching a text that holds any of `lexemes`, each taken as written."""
    return " | ".join(map(_tsquery_term, lexemes))


def _tsquery_term(lexeme: str) -> str:
    """A lexeme as a tsquery of its own, quoted so it is taken as written (not re-parsed)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
