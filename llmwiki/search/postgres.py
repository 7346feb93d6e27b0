"""The PostgreSQL search backend: stored, labelled tsvectors with a GIN index per layer and
a term dictionary of each word's document count and peak rank, so a query ranks only the
rows that can reach its list."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import OuterRef, Subquery

from llmwiki.models import SearchDocument, SearchTerm, SearchWatermark
from llmwiki.search import bm25f
from llmwiki.search.backends import CONTEXT_BOOST, Backend, rarity
from llmwiki.search.documents import LAYERS, Watermark, head_columns, project_row_sql

# ts_rank's weights of labels D, C, B, A: an item's own words (A) in full, its context
# (B) at CONTEXT_BOOST, as the Whoosh backend weighs its fields.
WEIGHTS = f"'{{0, 0, {CONTEXT_BOOST}, 1}}'::float4[]"


def _rank(vec: str, query: str, words: str | None = None) -> str:
    """A document's rank for one word, as SQL: ts_rank divided by 1 + the log of the
    number of the item's own words, `words` (a row's `own` column, kept by the trigger of
    migration 0015; by default the vector's length, for a text with no context). Its
    context does not count, so an episode is not set back against a claim of the same
    words for the turn beside it. Without it a long document (a whole runbook) outranks a
    short one that states the answer, only for holding more words, where the Whoosh
    backend's BM25 normalises by length. Dividing only lowers a rank, so peaks kept from
    before stay upper bounds."""
    words = words or f"greatest(length({vec}), 1)"
    return f"(ts_rank({WEIGHTS}, {vec}, {query}) / (1 + ln({words})))"


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
# Adds (a sign of +1) or takes away (-1) the words of the rows under some keys and page
# key patterns, and the rows themselves under the empty lexeme, in one statement. Rows
# added raise their words' peaks; rows taken away leave the peaks as they were.
COUNT_TERMS_SQL = f"""
INSERT INTO llmwiki_searchterm (project_id, layer, lexeme, docs, peak)
SELECT %s, layer, lexeme, %s * count(*), max(peak) FROM (
  SELECT d.layer, u.lexeme,
    CASE WHEN %s > 0 THEN {_rank("d.vec", LEXEME_QUERY, "d.own")} ELSE 0 END AS peak
  FROM llmwiki_searchdocument d, unnest(d.vec) u
  WHERE d.project_id = %s AND (d.key = ANY(%s) OR d.key LIKE ANY(%s))
  UNION ALL
  SELECT d.layer, '', 0 FROM llmwiki_searchdocument d
  WHERE d.project_id = %s AND (d.key = ANY(%s) OR d.key LIKE ANY(%s))
) words GROUP BY layer, lexeme
ON CONFLICT (project_id, layer, lexeme)
DO UPDATE SET docs = llmwiki_searchterm.docs + EXCLUDED.docs,
  peak = greatest(llmwiki_searchterm.peak, EXCLUDED.peak)
"""  # noqa: S608 (module constants only)
# The counts and peaks COUNT_TERMS_SQL keeps, taken again from the rows (for
# `search_index --check`).
RECOUNT_TERMS_SQL = f"""
SELECT layer, u.lexeme, count(*), max({_rank("vec", LEXEME_QUERY, "own")})::float8
FROM llmwiki_searchdocument, unnest(vec) u WHERE project_id = %s GROUP BY layer, u.lexeme
UNION ALL
SELECT layer, '', count(*), 0 FROM llmwiki_searchdocument WHERE project_id = %s GROUP BY layer
"""  # noqa: S608 (module constants only)
# The watermark's columns, in `Watermark`'s order.
MARK_FIELDS = ("episode_id", "audit_id", "revision_id")
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
                ],
            )
            _count_terms(cursor, project_id, written, [], +1)
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
        context (label B) at CONTEXT_BOOST, as the Whoosh backend weighs its fields.
        """
        # With `idf`, the words as `idf()` just read them for this query.
        rows = dict(self._terms(project_id, query, fresh=idf is None).get(layer, {}))
        total = rows.pop("", (0, 0.0))[0]
        with connection.cursor() as cursor:
            if idf is None:
                idf = {lexeme: bm25f.okapi_idf(total, n) for lexeme, (n, _) in rows.items() if n}
            words = [
                _Word(lexeme, docs / total, idf[lexeme], idf[lexeme] * peak)
                for lexeme, (docs, peak) in sorted(rows.items())
                if docs > 0 and lexeme in idf
            ]
            if not words:
                return []
            return _ranked(cursor, project_id, layer, sensitive, limit, words, total)

    def idf(self, project_id, query):
        counts = {}
        for layer, words in self._terms(project_id, query, fresh=True).items():
            held = {lexeme: n for lexeme, (n, _) in words.items() if lexeme and n > 0}
            counts[layer] = (words.get("", (0, 0.0))[0], held)
        return rarity(counts)

    def _terms(self, project_id, query, *, fresh) -> dict[str, dict[str, tuple[int, float]]]:
        """{layer: {lexeme: (docs, peak)}} for the query's words ("" counting the layer's
        documents). Read `fresh` by `idf()`, then kept for the searches of the same
        retrieval (a round trip to the server costs more than the read)."""
        if not fresh and self._last_terms[0] == (project_id, query):
            return self._last_terms[1]
        out: dict[str, dict[str, tuple[int, float]]] = defaultdict(dict)
        with connection.cursor() as cursor:
            cursor.execute(
                # Every layer named, so the term dictionary's index finds the words.
                "SELECT layer, lexeme, docs, peak FROM llmwiki_searchterm "
                "WHERE project_id = %s AND layer = ANY(%s) AND lexeme = ANY("
                "array_append(tsvector_to_array(to_tsvector('english', %s)), ''))",
                [project_id, list(LAYERS), query],
            )
            for layer, lexeme, docs, peak in cursor.fetchall():
                out[layer][lexeme] = (docs, peak)
        self._last_terms = ((project_id, query), out)
        return out

    def score_texts(self, query, texts, idf):
        """Each text ranked as `search` ranks a document's own words (label A)."""
        if not texts or not idf:
            return [0.0] * len(texts)
        score, params = _text_score(idf)
        # Each text is parsed once (OFFSET 0 keeps the planner from parsing it once a word).
        sql = (
            f"SELECT {score} FROM (SELECT n, setweight(to_tsvector('english', body), 'A') AS vec "  # noqa: S608
            "FROM unnest(%s::text[]) WITH ORDINALITY u(body, n) OFFSET 0) t ORDER BY n"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, list(texts)])
            return [float(row[0]) for row in cursor.fetchall()]

    def rank_rows(self, query, rows, idf):
        """(id, score) of the rows `rows` selects (SQL and its parameters: an id and the
        tsvector of a text as `to_tsvector('english', ...)` parses it), scored as
        `score_texts` scores that text, best first (then by id), those holding no query
        word left out. Nothing is parsed or sent here: the vectors are kept (OFFSET 0
        weighs each once, not once a word)."""
        if not idf:
            return []
        score, params = _text_score(idf)
        inner, inner_params = rows
        sql = (
            f"SELECT k, {score} AS rank FROM (SELECT k, setweight(words, 'A') AS vec "  # noqa: S608
            f"FROM ({inner}) r(k, words) OFFSET 0) t ORDER BY rank DESC, k"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *inner_params])
            return [(k, float(rank)) for k, rank in cursor.fetchall() if rank > 0]

    def digests(self, project_id):
        return dict(SearchDocument.objects.filter(project=project_id).values_list("key", "digest"))

    def miscounted(self, project_id):
        """Also a word whose kept peak is below what a row holding it ranks: a query would
        then leave that row out of lists it belongs in."""
        kept = SearchTerm.objects.filter(project=project_id).exclude(docs=0)
        kept = {(t.layer, t.lexeme): (t.docs, t.peak) for t in kept}
        with connection.cursor() as cursor:
            cursor.execute(RECOUNT_TERMS_SQL, [project_id, project_id])
            actual = {(layer, lexeme): (n, peak) for layer, lexeme, n, peak in cursor.fetchall()}
        wrong = set()
        for word in kept.keys() | actual:
            (docs, peak), (n, top) = kept.get(word, (0, 0.0)), actual.get(word, (0, 0.0))
            if docs != n or peak < top:
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


def _text_score(idf: dict[str, float]) -> tuple[str, list]:
    """A text's score (its vector `t.vec`) as the sum of each query word's idf-weighted rank:
    fixed fragments, one per word; every value travels as a parameter."""
    terms = sorted(idf)
    score = " + ".join(f"%s * {_rank('t.vec', '%s::tsquery')}" for _ in terms)
    return score, [x for term in terms for x in (idf[term], _tsquery_term(term))]


def _count_terms(cursor, project_id: int, keys: list[str], pages: list[int], sign: int) -> None:
    """Add (sign +1) or take away (-1) the words of the rows under `keys` and `pages` from
    the term counts, and the rows themselves from their layer's count."""
    if keys or pages:
        patterns = [f"page:{page}:%" for page in pages]
        cursor.execute(COUNT_TERMS_SQL, [project_id, sign, sign] + [project_id, keys, patterns] * 2)


@dataclass(frozen=True)
class _Word:
    lexeme: str
    share: float  # of the layer's documents that hold it
    idf: float
    bound: float  # the most it adds to a document's score: idf times its peak

    @property
    def query(self) -> str:
        return _tsquery_term(self.lexeme)


def _ranked(cursor, project_id, layer, sensitive, limit, words, total):
    """The `limit` best rows for `words`, exactly, without ranking every row that holds
    one of them.

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
    words = sorted(words, key=lambda w: -w.bound)
    named, assumed = words[:MATCH_WORDS], math.fsum(w.bound for w in words[MATCH_WORDS:])
    score = " + ".join(f"%s * {_rank('vec', '%s::tsquery', 'own')}" for _ in words)
    # The SQL is assembled from fixed fragments, one per query word; every value (the
    # words included) travels as a parameter.
    sql = (
        f"SELECT key, {score} AS rank, id FROM llmwiki_searchdocument "  # noqa: S608
        "WHERE project_id = %s AND layer = %s AND (%s OR NOT sensitive) "
        "AND vec @@ %s::tsquery ORDER BY rank DESC, id LIMIT %s"
    )
    scored = [x for w in words for x in (w.idf, w.query)]
    anything = " | ".join(w.query for w in words)

    def best(match: str) -> list[tuple[str, float, int]]:
        cursor.execute(sql, [*scored, project_id, layer, sensitive, match, limit])
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
