"""The dream-sweep engine: pure, Django-free consolidation of episodes into candidates.

The service loads rows into ``Ep`` / ``ApprovedClaim`` / ``RecallStats``, plans the batch
with ``plan_batch``, calls ``run_sweep`` and persists the ``SweepResult``.
"""

from __future__ import annotations

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
    "plan_batch",
    "run_sweep",
    "snippet_limits",
]
