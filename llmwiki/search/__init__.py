"""Search and retrieval over claims, page sections, open conflicts and episodes (DESIGN §10).

The public surface is `retrieve(project, query, caller=Caller(...), limit=10, budget=None,
as_of=None)` returning a `ContextPack` of `Hit`s; `llmwiki.search.index` keeps the index
current.
"""

from llmwiki.search.pack import Caller, ContextPack, Hit, RetrievalError, parse_as_of
from llmwiki.search.retrieval import retrieve

__all__ = ["Caller", "ContextPack", "Hit", "RetrievalError", "parse_as_of", "retrieve"]
