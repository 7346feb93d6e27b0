"""Two search backends behind one small interface: Whoosh (embedded) and PostgreSQL.

A backend stores docs and a watermark per project, drops docs by key, and answers
`search(project, layer, query, sensitive, limit)` with (key, score) pairs, best first.
Which one runs follows the database: PostgreSQL full-text search on PostgreSQL, Whoosh
(BM25F) under the data directory otherwise.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction

from llmwiki.models import SearchDocument, SearchWatermark
from llmwiki.search.documents import EPISODE, Doc, Watermark

# The context field weighs this much against the item's own words.
CONTEXT_BOOST = 0.3
WORDS = re.compile(r"[^\W_]+", re.UNICODE)


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
    ) -> None:
        """Write `upserts`, drop `deletes` and every section of `pages`, then move the mark.

        `scrub` (erasure) also removes the dropped documents' words from storage.
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
    name = "whoosh"
    _lock = threading.Lock()

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _schema(self):
        from whoosh.analysis import StemmingAnalyzer
        from whoosh.fields import ID, STORED, TEXT, Schema

        analyzer = StemmingAnalyzer()
        return Schema(
            key=ID(stored=True, unique=True),
            project=ID,
            layer=ID,
            clearance=ID,  # "open" or "sensitive"
            page=ID(stored=True),
            digest=STORED,
            body=TEXT(analyzer=analyzer),
            context=TEXT(analyzer=analyzer),
        )

    def _index(self):
        from whoosh import index

        self.directory.mkdir(parents=True, exist_ok=True)
        if index.exists_in(str(self.directory)):
            return index.open_dir(str(self.directory))
        return index.create_in(str(self.directory), self._schema())

    @property
    def _marks_path(self) -> Path:
        return self.directory / "watermarks.json"

    def _marks(self) -> dict[str, list[int]]:
        try:
            return json.loads(self._marks_path.read_text())
        except FileNotFoundError:
            return {}

    def watermark(self, project_id: int) -> Watermark:
        mark = self._marks().get(str(project_id))
        return Watermark(*mark) if mark else Watermark()

    def apply(self, project_id, upserts, deletes, pages, mark, *, scrub=False) -> None:
        from whoosh.query import Prefix

        with self._lock:
            ix = self._index()
            writer = ix.writer(timeout=60)
            try:
                for key in deletes:
                    writer.delete_by_term("key", key)
                for page in pages:
                    writer.delete_by_query(Prefix("key", f"page:{page}:"))
                for doc in upserts:
                    writer.update_document(
                        key=doc.key,
                        project=str(project_id),
                        layer=doc.layer,
                        clearance="sensitive" if doc.sensitive else "open",
                        page=doc.page_target,
                        digest=doc.digest,
                        body=doc.text,
                        context=doc.context,
                    )
            except BaseException:
                writer.cancel()
                raise
            writer.commit(mergetype=_rewrite_deleted if scrub else None)
            if mark is not None:
                marks = self._marks()
                marks[str(project_id)] = [mark.episode_id, mark.audit_id, mark.revision_id]
                tmp = self._marks_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(marks))
                tmp.replace(self._marks_path)

    def _terms(self, query: str) -> list[str]:
        analyzer = self._schema()["body"].analyzer
        return sorted({t.text for t in analyzer(query)})

    def search(self, project_id, layer, query, *, sensitive, limit):
        from whoosh.query import And, AndNot, Or, Term

        terms = self._terms(query)
        if not terms:
            return []
        words = Or(
            [Term("body", t) for t in terms]
            + [Term("context", t, boost=CONTEXT_BOOST) for t in terms]
        )
        scope = And([Term("project", str(project_id)), Term("layer", layer)])
        ix = self._index()
        with ix.searcher() as searcher:
            q = And([words, scope])
            if not sensitive:
                q = AndNot(q, Term("clearance", "sensitive"))
            results = searcher.search(q, limit=limit)
            return [(hit["key"], float(hit.score)) for hit in results]

    def digests(self, project_id):
        from whoosh.query import Term

        ix = self._index()
        with ix.searcher() as searcher:
            ids = searcher.docs_for_query(Term("project", str(project_id)))
            stored = (searcher.stored_fields(i) for i in ids)
            return {f["key"]: f["digest"] for f in stored}

    def clear(self, project_id):
        from whoosh.query import Term

        with self._lock:
            ix = self._index()
            writer = ix.writer(timeout=60)
            writer.delete_by_query(Term("project", str(project_id)))
            writer.commit()
            marks = self._marks()
            marks.pop(str(project_id), None)
            self._marks_path.write_text(json.dumps(marks))


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
    """Full-text search over `SearchDocument` rows through the migration's GIN index."""

    name = "postgresql"

    def watermark(self, project_id):
        row = SearchWatermark.objects.filter(project=project_id).first()
        return Watermark(row.episode_id, row.audit_id, row.revision_id) if row else Watermark()

    def apply(self, project_id, upserts, deletes, pages, mark, *, scrub=False) -> None:
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
                    # PostgreSQL ranks one text: the context goes after the item's own words.
                    text=f"{d.text}\n{d.context}" if d.layer != EPISODE else d.text,
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
        words = sorted({w.lower() for w in WORDS.findall(query)})
        if not words:
            return []
        # Any word may match (OR), as BM25 does; ts_rank_cd ranks by how many and how close.
        tsquery = " | ".join(f"'{w}'" for w in words)
        sql = (
            "SELECT key, ts_rank_cd(to_tsvector('english', text), q, 1) AS rank "
            "FROM llmwiki_searchdocument, to_tsquery('english', %s) q "
            "WHERE project_id = %s AND layer = %s AND (%s OR NOT sensitive) "
            "AND to_tsvector('english', text) @@ q "
            "ORDER BY rank DESC, id LIMIT %s"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [tsquery, project_id, layer, sensitive, limit])
            return [(key, float(rank)) for key, rank in cursor.fetchall()]

    def digests(self, project_id):
        return dict(SearchDocument.objects.filter(project=project_id).values_list("key", "digest"))

    def clear(self, project_id):
        with transaction.atomic():
            SearchDocument.objects.filter(project=project_id).delete()
            SearchWatermark.objects.filter(project=project_id).delete()


def backend() -> Backend:
    """The backend the database calls for."""
    if connection.vendor == "postgresql":
        return PostgresBackend()
    return WhooshBackend(Path(settings.INDEX_DIR) / "whoosh")
