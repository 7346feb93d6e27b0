"""Two search backends behind one small interface: Whoosh (embedded) and PostgreSQL.

A backend stores docs and a watermark per project, drops docs by key, and answers
`search(project, layer, query, sensitive, limit)` with (key, score) pairs, best first.
Which one runs follows the database: PostgreSQL full-text search on PostgreSQL, Whoosh
(BM25F) under the data directory otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from django.conf import settings
from django.db import connection, transaction

from llmwiki.models import SearchDocument, SearchWatermark
from llmwiki.search import bm25f
from llmwiki.search.documents import LAYERS, PAGE, Doc, Watermark

# Named after what the index was written with, its analyzer and its docs: an index from
# another analyzer would not match the terms a query is read into, and one from another
# doc format would rank by other words, so a change of either starts a new directory,
# which the worker's fold (or the first query, or `search_index --rebuild`) fills.
# "whoosh" held the Porter stemmer and Whoosh's 34 stop words; "whoosh-snowball-en" held
# episodes with both neighbouring turns as context.
WHOOSH_DIR = "whoosh-snowball-en-2"
# Directories of earlier formats, removed when the current one is first written to: they
# are never read again, and an erasure would not reach them.
SUPERSEDED_DIRS = ("whoosh", "whoosh-snowball-en")
# The context field (the turn before, a section's title) weighs this much against the
# item's own words; tuned on the LoCoMo dev split (0.3 and 0.8 both ranked evidence lower).
CONTEXT_BOOST = 0.5
WORDS = re.compile(r"[^\W_]+", re.UNICODE)


def _make_analyzer():
    """Snowball's English stemmer and its 127 stop words: what PostgreSQL's `english`
    text search configuration uses, so both backends read a query into the same terms.

    Whoosh's default analyzer drops only 34 words and keeps question words ("what",
    "does", "has") that every question carries; on the LoCoMo dev split the full list
    lifts evidence hit@5 from 0.706 to 0.727 and multi-hop all@5 from 0.108 to 0.126.
    """
    from whoosh.analysis import LanguageAnalyzer

    return LanguageAnalyzer("en")


# The analyzer the Whoosh fields use, for turning a query into the same terms.
_ANALYZER = _make_analyzer()


class Backend:
    name = ""

    def watermark(self, project_id: int) -> Watermark:
        raise NotImplementedError

    def apply(
        self,
        project_id: int,
        upserts: list[Doc],
        deletes: Iterable[str],
        pages: Iterable[int],
        mark: Watermark | None,
        *,
        scrub: bool = False,
        optimize: bool = False,
    ) -> None:
        """Write `upserts`, drop `deletes` and every section of `pages`, then move the mark.

        `scrub` (erasure) also removes the dropped documents' words from storage;
        `optimize` (the end of a rebuild) leaves one segment per index, for faster queries.
        """
        raise NotImplementedError

    def search(
        self, project_id: int, layer: str, query: str, *, sensitive: bool, limit: int
    ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def digests(self, project_id: int) -> dict[str, str]:
        """Every key the project has in the index, with the digest it was written with."""
        raise NotImplementedError

    def clear(self, project_id: int) -> None:
        raise NotImplementedError


# --- Whoosh ------------------------------------------------------------------------------


class WhooshBackend(Backend):
    """One Whoosh index per project and layer, so a query scores only its own documents
    (a shared index would filter each query down to them, at a cost per document)."""

    name = "whoosh"
    _lock = threading.Lock()
    _searchers: ClassVar[dict[str, Any]] = {}

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    @staticmethod
    def _schema():
        from whoosh.fields import ID, STORED, TEXT, Schema

        analyzer = _make_analyzer()
        return Schema(
            key=ID(stored=True, unique=True),
            clearance=ID,  # "open" or "sensitive"
            digest=STORED,
            body=TEXT(analyzer=analyzer),
            context=TEXT(analyzer=analyzer),
        )

    def _project_dir(self, project_id: int) -> Path:
        return self.directory / f"p{project_id}"

    def _index(self, project_id: int, layer: str, create: bool = True):
        from whoosh import index

        path = self._project_dir(project_id) / layer
        if index.exists_in(str(path)):
            return index.open_dir(str(path))
        if not create:
            return None
        self._drop_superseded()
        path.mkdir(parents=True, exist_ok=True)
        return index.create_in(str(path), self._schema())

    def _drop_superseded(self) -> None:
        if self.directory.name != WHOOSH_DIR:
            return  # not under the data directory's index folder (a test's own)
        for name in SUPERSEDED_DIRS:
            shutil.rmtree(self.directory.parent / name, ignore_errors=True)

    def _searcher(self, project_id: int, layer: str):
        """A searcher kept open between queries, reopened when the index moved on.

        Not `Searcher.refresh()`: Whoosh-Reloaded's refresh keeps the old reader's
        segments beside the new ones, so documents a merge rewrote or an erasure scrubbed
        would be found again, twice over.
        """
        path = str(self._project_dir(project_id) / layer)
        searcher = self._searchers.get(path)
        if searcher is not None and searcher.up_to_date():
            return searcher
        ix = self._index(project_id, layer, create=False)
        if ix is None:
            return None
        # The previous searcher is left to the garbage collector: another thread may be
        # reading through it right now.
        self._searchers[path] = searcher = ix.searcher()
        return searcher

    def _forget(self, project_id: int) -> None:
        for layer in LAYERS:
            path = str(self._project_dir(project_id) / layer)
            searcher = self._searchers.pop(path, None)
            if searcher is not None:
                searcher.close()
            bm25f.forget(path)

    def _marks_path(self, project_id: int) -> Path:
        return self._project_dir(project_id) / "watermark.json"

    def watermark(self, project_id: int) -> Watermark:
        try:
            return Watermark(*json.loads(self._marks_path(project_id).read_text()))
        except FileNotFoundError:
            return Watermark()

    def apply(
        self, project_id, upserts, deletes, pages, mark, *, scrub=False, optimize=False
    ) -> None:
        from whoosh.query import Prefix

        by_layer: dict[str, list] = {}
        for key in deletes:
            by_layer.setdefault(key.split(":", 1)[0], []).append(("delete", key))
        for page in pages:
            by_layer.setdefault(PAGE, []).append(("page", page))
        for doc in upserts:
            by_layer.setdefault(doc.layer, []).append(("doc", doc))
        if optimize:
            for layer in LAYERS:
                by_layer.setdefault(layer, [])
        with self._lock:
            for layer, ops in by_layer.items():
                writer = self._index(project_id, layer).writer(timeout=60, limitmb=128)
                try:
                    for op, item in ops:
                        if op == "delete":
                            writer.delete_by_term("key", item)
                        elif op == "page":
                            writer.delete_by_query(Prefix("key", f"page:{item}:"))
                        else:
                            writer.update_document(
                                key=item.key,
                                clearance="sensitive" if item.sensitive else "open",
                                digest=item.digest,
                                body=item.text,
                                context=item.context,
                            )
                except BaseException:
                    writer.cancel()
                    raise
                writer.commit(mergetype=_rewrite_deleted if scrub else None, optimize=optimize)
            if mark is not None:
                path = self._marks_path(project_id)
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps([mark.episode_id, mark.audit_id, mark.revision_id]))
                tmp.replace(path)

    def search(self, project_id, layer, query, *, sensitive, limit):
        terms = sorted({t.text for t in _ANALYZER(query)})
        if not terms:
            return []
        searcher = self._searcher(project_id, layer)
        if searcher is None:
            return []
        found = bm25f.top_k(
            str(self._project_dir(project_id) / layer),
            searcher,
            (("body", 1.0), ("context", CONTEXT_BOOST)),
            terms,
            limit,
            exclude=None if sensitive else ("clearance", "sensitive"),
        )
        return [(searcher.stored_fields(doc)["key"], score) for doc, score in found]

    def digests(self, project_id):
        out = {}
        for layer in LAYERS:
            ix = self._index(project_id, layer, create=False)
            if ix is None:
                continue
            with ix.searcher() as searcher:
                out.update((f["key"], f["digest"]) for f in searcher.all_stored_fields())
        return out

    def clear(self, project_id):
        with self._lock:
            self._forget(project_id)
            shutil.rmtree(self._project_dir(project_id), ignore_errors=True)


def _rewrite_deleted(writer, segments):
    """A Whoosh merge policy: rewrite every segment holding deleted documents.

    Whoosh only marks a deleted document; its terms stay in the segment's files until the
    segment is merged. Copying the segment's live documents leaves the erased words behind.
    """
    from whoosh.reading import SegmentReader

    keep = []
    for segment in segments:
        if segment.has_deletions():
            reader = SegmentReader(writer.storage, writer.schema, segment)
            writer.add_reader(reader)
            reader.close()
        else:
            keep.append(segment)
    return keep


# --- PostgreSQL ----------------------------------------------------------------------------


class PostgresBackend(Backend):
    """Full-text search over `SearchDocument` rows: their stored, labelled vectors and GIN
    index (migration 0010), on PostgreSQL only."""

    name = "postgresql"

    def watermark(self, project_id):
        row = SearchWatermark.objects.filter(project=project_id).first()
        return Watermark(row.episode_id, row.audit_id, row.revision_id) if row else Watermark()

    def apply(
        self, project_id, upserts, deletes, pages, mark, *, scrub=False, optimize=False
    ) -> None:
        # A deleted row's text is gone from every query at once; VACUUM reclaims its space.
        with transaction.atomic():
            deletes = list(deletes)
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
            if mark is not None:
                SearchWatermark.objects.update_or_create(
                    project_id=project_id,
                    defaults={
                        "episode_id": mark.episode_id,
                        "audit_id": mark.audit_id,
                        "revision_id": mark.revision_id,
                    },
                )

    def search(self, project_id, layer, query, *, sensitive, limit):
        """Documents holding any of the query's words, ranked by idf-weighted term ranks.

        PostgreSQL's ts_rank knows how often a word occurs in a document but not how rare
        it is in the project, so a word nearly every episode has would weigh as much as
        the one that finds the answer. Each query word is therefore ranked apart and
        weighted by its Okapi idf among the layer's documents, as BM25 weighs it. The
        item's own words count in full and its context (label B) at CONTEXT_BOOST, as the
        Whoosh backend weighs its fields.
        """
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') "
                "FROM unnest(to_tsvector('english', %s))",
                [query],
            )
            lexemes = cursor.fetchone()[0]
            if not lexemes:
                return []
            terms = [_tsquery_term(lexeme) for lexeme in lexemes]
            # The SQL is assembled from fixed fragments, one per query word; every value
            # (the words included) travels as a parameter.
            where = "project_id = %s AND layer = %s AND (%s OR NOT sensitive)"
            # One pass over the layer's rows counts them all and each word's holders: a
            # common word's GIN bitmap is as large as the layer, so a count per word would
            # read the rows once per word.
            counts = ", ".join("count(*) FILTER (WHERE vec @@ %s::tsquery)" for _ in terms)
            cursor.execute(
                f"SELECT count(*), {counts} FROM llmwiki_searchdocument "  # noqa: S608
                "WHERE project_id = %s AND layer = %s",
                [*terms, project_id, layer],
            )
            total, *dfs = cursor.fetchone()
            kept = [(t, bm25f.okapi_idf(total, df)) for t, df in zip(terms, dfs, strict=True) if df]
            if not kept:
                return []
            weights = f"'{{0, 0, {CONTEXT_BOOST}, 1}}'::float4[]"  # labels D, C, B, A
            score = " + ".join(f"%s * ts_rank({weights}, vec, %s::tsquery)" for _ in kept)
            sql = (
                f"SELECT key, {score} AS rank FROM llmwiki_searchdocument "  # noqa: S608
                f"WHERE {where} AND vec @@ %s::tsquery ORDER BY rank DESC, id LIMIT %s"
            )
            cursor.execute(
                sql,
                [x for t, idf in kept for x in (idf, t)]
                + [project_id, layer, sensitive, " | ".join(t for t, _ in kept), limit],
            )
            return [(key, float(rank)) for key, rank in cursor.fetchall()]

    def digests(self, project_id):
        return dict(SearchDocument.objects.filter(project=project_id).values_list("key", "digest"))

    def clear(self, project_id):
        with transaction.atomic():
            SearchDocument.objects.filter(project=project_id).delete()
            SearchWatermark.objects.filter(project=project_id).delete()


def _tsquery_term(lexeme: str) -> str:
    """A lexeme as a tsquery of its own, quoted so it is taken as written (not re-parsed)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def backend() -> Backend:
    """The backend the database calls for."""
    if connection.vendor == "postgresql":
        return PostgresBackend()
    return WhooshBackend(Path(settings.INDEX_DIR) / WHOOSH_DIR)
