"""Keeping the index up to date off the ingest path (DESIGN §10).

The index keeps its own watermark. `index_fold` folds in what was committed since (the
django-q2 task runs it every minute; every query runs it first, so a search never misses
committed material even when no worker runs). `index_rebuild` and `index_check` back
`manage.py search_index`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llmwiki.models import Episode, Project
from llmwiki.search.backends import Backend, backend
from llmwiki.search.documents import (
    CLAIM,
    EPISODE,
    PAGE,
    all_docs,
    changes_since,
    episode_docs,
    head,
)

# Docs written per backend call during a rebuild or a fold (bounds memory on 1M episodes).
REBUILD_CHUNK = 20_000


def index_fold(project: Project | int, using: Backend | None = None) -> int:
    """Fold in what the project committed since the index's watermark; return docs written."""
    project_id = getattr(project, "pk", project)
    using = using or backend()
    mark, now = using.marks(project_id)
    if now == mark:
        return 0
    # New episodes are most of a fold after an import: written a chunk of ids at a time,
    # so memory does not grow with the import. The mark moves only with the last write,
    # so a fold that dies midway is done again from the start (writes are upserts).
    written, after = 0, mark.episode_id
    while after < now.episode_id:
        ids = list(
            Episode.objects.filter(project=project_id, id__gt=after, id__lte=now.episode_id)
            .order_by("id")
            .values_list("id", flat=True)[:REBUILD_CHUNK]
        )
        docs = list(episode_docs(project_id, ids))
        using.apply(project_id, docs, (), (), None)
        written += len(docs)
        after = ids[-1]
    # The rest (reviews, releases, erasures, page revisions) is what the events name.
    delta = changes_since(project_id, mark, now)
    using.apply(project_id, delta.upserts, delta.deletes, delta.pages, delta.to)
    return written + len(delta.upserts)


def index_rebuild(project: Project | int, using: Backend | None = None) -> int:
    """Drop the project's index and write every doc again; return how many."""
    project_id = getattr(project, "pk", project)
    using = using or backend()
    now = head(project_id)  # read first: what commits during the rebuild is folded later
    using.clear(project_id)
    chunk, written = [], 0
    for doc in all_docs(project_id):
        chunk.append(doc)
        if len(chunk) >= REBUILD_CHUNK:
            using.apply(project_id, chunk, (), (), None)
            written += len(chunk)
            chunk = []
    # The last write also merges the chunks' segments into one per layer.
    using.apply(project_id, chunk, (), (), now, optimize=True)
    return written + len(chunk)


@dataclass
class Check:
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    miscounted: list[str] = field(default_factory=list)  # words the term counts have wrong
    indexed: int = 0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.stale or self.extra or self.miscounted)

    def as_json(self) -> dict:
        return {
            "ok": self.ok,
            "indexed": self.indexed,
            "missing": self.missing,
            "stale": self.stale,
            "extra": self.extra,
            "miscounted": self.miscounted,
        }


def index_check(project: Project | int, using: Backend | None = None) -> Check:
    """Compare the index with what it should hold: missing, stale and extra documents.

    Reads the index as it is (no fold first), so a lagging worker shows up as missing docs.
    """
    project_id = getattr(project, "pk", project)
    using = using or backend()
    held = using.digests(project_id)
    check = Check(indexed=len(held))
    for doc in all_docs(project_id):
        digest = held.pop(doc.key, None)
        if digest is None:
            check.missing.append(doc.key)
        elif digest != doc.digest:
            check.stale.append(doc.key)
    check.extra = sorted(held)
    check.miscounted = using.miscounted(project_id)
    return check


def index_purge(project_id: int, *, episodes=(), claims=(), pages=()) -> None:
    """Drop erased material from the index now, without waiting for a fold."""
    keys = [f"{EPISODE}:{i}" for i in episodes] + [f"{CLAIM}:{i}" for i in claims]
    backend().apply(project_id, [], keys, list(pages), None, scrub=True)


__all__ = ["CLAIM", "EPISODE", "PAGE", "index_check", "index_fold", "index_purge", "index_rebuild"]
