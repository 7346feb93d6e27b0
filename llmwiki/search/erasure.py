"""The search index's part of an erasure (registered in LlmwikiConfig.ready).

Erased episodes and claims leave the index when the erasure commits, and the Whoosh
segments that held them are rewritten, so their words are gone from the index files too
(Whoosh only marks a deleted document until its segment is merged).
"""

from __future__ import annotations

from django.db import transaction

from llmwiki.erasure import Erasure, ErasureStep, register_step
from llmwiki.search.backends import backend
from llmwiki.search.index import index_purge
from llmwiki.search.postgres import PostgresBackend


class SearchErasure(ErasureStep):
    def erase(self, erasure: Erasure) -> None:
        project_id = erasure.source.project_id
        scope = {
            "episodes": list(erasure.episode_ids),
            "claims": sorted(erasure.claim_ids),
            "pages": sorted(erasure.page_ids),
        }
        if isinstance(backend(), PostgresBackend):
            index_purge(project_id, **scope)  # rows: inside the erasure's transaction
        else:
            transaction.on_commit(lambda: index_purge(project_id, **scope))


def register() -> None:
    register_step(SearchErasure())
