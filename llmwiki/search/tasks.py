"""django-q2 task: fold committed material into the search index, off the ingest path."""

from __future__ import annotations

from llmwiki.models import Project
from llmwiki.search.index import index_fold


def search_fold_all() -> str:
    """Fold every project's remainder (a one-minute schedule runs this)."""
    written = sum(index_fold(pk) for pk in Project.objects.values_list("pk", flat=True))
    return f"{written} document(s) indexed"
