"""The dream-sweep engine: pure, Django-free consolidation of episodes into candidates.

The service loads rows into ``Ep`` / ``ApprovedClaim`` / ``RecallStats``, plans the batch
with ``plan_batch``, calls ``run_sweep`` and persists the ``SweepResult``.
"""

from __future__ import annotations

from . import cluster, reflect, similar, text
from .consolidate import snippet_limits
from .learn import Decided
from .pipeline import run_sweep
from .policy import Policy, PolicyError, Weights
from .select import Batch, Row, plan_batch
from .types import (
    ApprovedClaim,
    CandidateDraft,
    ConflictDraft,
    ConflictSide,
    Ep,
    Evidence,
    RecallStats,
    SetAside,
    SweepResult,
    Theme,
)


def forget() -> None:
    """Empty every per-process memo of the engine; call it when a run is done.

    The memos (a word's classification, a chunk's tokens, a stem, ...) live as long as the
    process and fill with each batch's new words, so a worker that swept a long backlog
    held hundreds of MiB of words it would never see again (bench/scale.py: 155 MiB after
    its first run, 580 MiB after 201). Emptied after every run, a worker holds at most
    one batch's worth. They are caches only: a run with cold memos gives the same result.
    """
    text.clear_token_memo()
    cluster.forget()
    similar.forget()
    reflect.heading_state.cache_clear()


__all__ = [
    "ApprovedClaim",
    "Batch",
    "CandidateDraft",
    "ConflictDraft",
    "ConflictSide",
    "Decided",
    "Ep",
    "Evidence",
    "Policy",
    "PolicyError",
    "RecallStats",
    "Row",
    "SetAside",
    "SweepResult",
    "Theme",
    "Weights",
    "forget",
    "plan_batch",
    "run_sweep",
    "snippet_limits",
]
