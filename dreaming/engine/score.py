"""Deep: the weighted score of a candidate, signal by signal, each in [0, 1].

The formulas follow OpenClaw's deep ranking (frequency ``log1p(n)/log1p(10)``, diversity
``max(queries, days)/5``, recency ``exp(-ln2/half_life · age)``, richness ``terms/6``) with
the signal set and default weights of our design (§6). The breakdown is kept on the
candidate so a reviewer can see *why* something was proposed — OpenClaw users could not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .policy import SIGNALS, Policy
from .types import RecallStats

_LOG11 = math.log1p(10)


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """The facts about a candidate's evidence that scoring needs."""

    n_support: int  # distinct supporting occurrences (same text twice on one day counts once)
    days: int  # distinct days the support occurred on
    newest: datetime
    trust: Sequence[float]
    recall: Sequence[RecallStats]
    key_terms: int  # distinct key terms in the candidate text


def signals(ev: EvidenceView, now: datetime, policy: Policy) -> dict[str, float]:
    """Return each raw signal in [0, 1]."""
    hits = sum(r.hits for r in ev.recall)
    # hit-weighted mean: an episode recalled 20 times says more than one recalled once
    relevance = sum(r.mean_score * r.hits for r in ev.recall) / hits if hits else 0.0
    queries = sum(r.distinct_queries for r in ev.recall)
    recall_days = max((r.distinct_days for r in ev.recall), default=0)
    age_days = max((now - ev.newest).total_seconds() / 86400.0, 0.0)
    return {
        "relevance": _unit(relevance),
        "frequency": min(math.log1p(ev.n_support) / _LOG11, 1.0),
        "query_diversity": min(max(queries, recall_days, ev.days) / 5.0, 1.0),
        "recency": math.exp(-math.log(2) / policy.recency_half_life_days * age_days),
        "recurrence": min(ev.days / 3.0, 1.0),
        "source_trust": _unit(sum(ev.trust) / len(ev.trust)) if ev.trust else 0.0,
        "richness": min(ev.key_terms / 6.0, 1.0),
    }


def weighted(raw: dict[str, float], policy: Policy) -> tuple[float, dict[str, float]]:
    """Return the score and the breakdown: raw values plus ``<signal>.w`` contributions."""
    weights = policy.weights.as_dict()
    out: dict[str, float] = {}
    total = 0.0
    for name in SIGNALS:
        contribution = weights[name] * raw[name]
        out[name] = round(raw[name], 6)
        out[f"{name}.w"] = round(contribution, 6)
        total += contribution
    return round(total, 6), out


def _unit(x: float) -> float:
    return 0.0 if x != x else min(max(x, 0.0), 1.0)  # NaN-safe clamp


def recall_for(ids: Iterable[int], recall: dict[int, RecallStats]) -> list[RecallStats]:
    """Return the recall stats of the given episode ids that have any."""
    return [recall[i] for i in ids if i in recall]
