"""Two search backends behind one small interface: Whoosh (embedded) and PostgreSQL.

A backend stores docs and a watermark per project, drops docs by key, and answers
`search(project, layer, query, sensitive, limit)` with (key, score) pairs, best first.
Which one runs follows the database: PostgreSQL full-text search on PostgreSQL, Whoosh
(BM25F) under the data directory otherwise.
"""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from django.conf import settings
from django.db import connection

from llmwiki.search import bm25f
from llmwiki.search.documents import EPISODE, LAYERS, PAGE, Doc, Watermark, head

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
    text search configuration uses, so both backends read a query into the same terms
    (a hyphenated word into its parts on both: see `postgres.CONFIG`).

    Whoosh's default analyzer drops only 34 words and keeps question words ("what",
    "does", "has") that every question carries; on the LoCoMo dev split the full list
    lifts evidence hit@5 from 0.706 to 0.727 and multi-hop all@5 from 0.108 to 0.126.
    """
    from whoosh.analysis import LanguageAnalyzer

    return LanguageAnalyzer("en")


# The analyzer the Whoosh fields use, for turning a query into the same terms.
_ANALYZER = _make_analyzer()
# An item's own words count in full, its context at CONTEXT_BOOST.
FIELDS = (("body", 1.0), ("context", CONTEXT_BOOST))


def terms(text: str) -> list[str]:
    """The index terms `text` is read into: stemmed, stop words dropped, sorted.

    The analyzer reads each token on its own (lowercased, stopped, stemmed), so a text's
    terms are its tokens' terms, each worked out once and kept: retrieval reads every hit
    this way, and the analyzer's chain costs more per token than the lookup."""
    found: set[str] = set()
    for token in {m.group() for m in _TOKEN.finditer(text)}:
        found.update(_token_terms(token))
    return sorted(found)


# The analyzer's tokenizer pattern: a token matched in a text is matched whole on its own.
_TOKEN = _ANALYZER.items[0].expression


@functools.lru_cache(maxsize=100_000)
def _token_terms(token: str) -> tuple[str, ...]:
    return tuple(t.text for t in _ANALYZER(token))


def rarity(counts: dict[str, tuple[int, dict[str, int]]]) -> dict[str, float]:
    """Each word's Okapi idf from {layer: (documents, {word: documents holding it})}.

    Counted among the episodes, the raw material: claims and page sections restate what
    episodes say, so counting them too would make a word commoner each time a fact about
    it is approved, and reorder the episodes an agent gets. A word no episode holds (a
    reviewer's own wording) is counted among every layer."""
    total, held = counts.get(EPISODE, (0, {}))
    every = sum(n for n, _ in counts.values())
    out = {}
    for word in {w for _, words in counts.values() for w in words}:
        if held.get(word):
            out[word] = bm25f.okapi_idf(total, held[word])
        elif n := sum(words.get(word, 0) for _, words in counts.values()):
            out[word] = bm25f.okapi_idf(every, n)
    return out


class Backend:
    name = ""

    def watermark(self, project_id: int) -> Watermark:
        raise NotImplementedError

    def marks(self, project_id: int) -> tuple[Watermark, Watermark]:
        """The watermark and where the project's committed material stands now (`head`):
        what every query compares before it searches."""
        return self.watermark(project_id), head(project_id)

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
        self,
        project_id: int,
        layer: str,
        query: str,
        *,
        sensitive: bool,
        limit: int,
        idf: dict[str, float] | None = None,
    ) -> list[tuple[str, float]]:
        """(key, score) pairs, best first. With `idf` (from `idf()`), the scores of every
        layer are on one scale; without it each word weighs by its rarity in the layer."""
        raise NotImplementedError

    def idf(self, project_id: int, query: str) -> dict[str, float]:
        """The query's words weighted by their rarity in the project (see `rarity`), one
        weight for every layer: then a claim's score and an episode's compare."""
        raise NotImplementedError

    def score_texts(self, query: str, texts: list[str], idf: dict[str, float]) -> list[float]:
        """Scores of texts that are not in the index (open conflicts, claims as they stood
        on a date), on the scale `search(..., idf=idf)` ranks documents on."""
        raise NotImplementedError

    def digests(self, project_id: int) -> dict[str, str]:
        """Every key the project has in the index, with the digest it was written with."""
        raise NotImplementedError

    def miscounted(self, project_id: int) -> list[str]:
        """Words ("layer:lexeme") whose kept document count differs from a recount; only
        PostgreSQL keeps counts of its own (Whoosh's come with its segments)."""
        return []

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

    def search(self, project_id, layer, query, *, sensitive, limit, idf=None):
        words = terms(query)
        if idf is not None:
            words = [t for t in words if t in idf]
        if not words:
            return []
        searcher = self._searcher(project_id, layer)
        if searcher is None:
            return []
        found = bm25f.top_k(
            str(self._project_dir(project_id) / layer),
            searcher,
            FIELDS,
            words,
            limit,
            exclude=None if sensitive else ("clearance", "sensitive"),
            idf=idf,
            averages=None if idf is None else self._averages(project_id),
        )
        return [(searcher.stored_fields(doc)["key"], score) for doc, score in found]

    def _averages(self, project_id: int) -> dict[str, float] | None:
        """Each field's average length among the episodes, which `rarity` counts words
        among: a claim is then scored as an episode of the same words would be, not
        favoured for being shorter than claims run on average."""
        searcher = self._searcher(project_id, EPISODE)
        if searcher is None:
            return None
        return {field: searcher.avg_field_length(field) or 1.0 for field, _ in FIELDS}

    def idf(self, project_id, query):
        words = terms(query)
        counts = {}
        for layer in LAYERS:
            searcher = self._searcher(project_id, layer) if words else None
            if searcher is not None:
                counts[layer] = bm25f.doc_freqs(
                    str(self._project_dir(project_id) / layer), searcher, FIELDS, words
                )
        return rarity(counts)

    def score_texts(self, query, texts, idf):
        """BM25 over the texts' own words, their lengths against their own average."""
        wanted = [t for t in terms(query) if t in idf]
        if not texts or not wanted:
            return [0.0] * len(texts)
        analysed = [[t.text for t in _ANALYZER(text)] for text in texts]
        average = sum(len(words) for words in analysed) / len(analysed) or 1.0
        scores = []
        for words in analysed:
            norm = (1 - bm25f.B) + bm25f.B * len(words) / average
            scores.append(
                math.fsum(
                    bm25f.saturated(idf[t], tf / norm) for t in wanted if (tf := words.count(t))
                )
            )
        return scores

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


def backend() -> Backend:
    """The backend the database calls for."""
    if connection.vendor == "postgresql":
        from llmwiki.search.postgres import PostgresBackend

        return PostgresBackend()
    return WhooshBackend(Path(settings.INDEX_DIR) / WHOOSH_DIR)
