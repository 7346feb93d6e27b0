"""The dreaming policy: signal weights, gates, caps and thresholds, validated.

A project stores its policy as JSON; ``Policy.from_dict`` turns that JSON into a frozen
value or raises ``PolicyError`` naming the offending field, so a bad policy is refused at
save time rather than discovered in the middle of a nightly sweep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

SIGNALS = (
    "relevance",
    "frequency",
    "query_diversity",
    "recency",
    "recurrence",
    "source_trust",
    "richness",
)
# How far a source is trusted to be the reference, by the importer that read it.
SOURCE_TRUST = {"bundle": 1.0, "vault": 0.8, "note": 0.8, "daily_log": 0.6, "transcript": 0.5}


class PolicyError(ValueError):
    """A policy value was refused: ``field`` names it (dotted for nested keys)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"dreaming policy field '{field}': {reason}")


@dataclass(frozen=True, slots=True)
class Weights:
    """Signal weights; they sum to 1 (``Policy.from_dict`` renormalises otherwise)."""

    relevance: float = 0.30
    frequency: float = 0.20
    query_diversity: float = 0.15
    recency: float = 0.10
    recurrence: float = 0.10
    source_trust: float = 0.10
    richness: float = 0.05

    def as_dict(self) -> dict[str, float]:
        """Return the weights keyed by signal name, in signal order."""
        return {name: getattr(self, name) for name in SIGNALS}


@dataclass(frozen=True, slots=True)
class Policy:
    """Everything a sweep may be configured with; the defaults are calibrated, not guessed.

    Calibration (tests/unit/test_engine_pipeline.py), with no retrieval traces: a fact in
    five wordings over four recent days scores 0.57 (0.49 a month later), the same fact
    on two days 0.40, the same text twice on one day 0.30 (one occurrence), a one-off
    fact 0.30 and one-off chatter 0.32. ``min_score`` 0.35 sits between "said again on
    another day" and "said once"; recall traces (relevance, 30 %) lift facts people ask
    about well clear of it.
    """

    weights: Weights = field(default_factory=Weights)
    # Recency halves every two weeks, as OpenClaw's deep ranking does.
    recency_half_life_days: float = 14.0
    min_score: float = 0.35
    # Independent restatements a fact needs when it comes only from chat or logs.
    min_evidence: int = 2
    # A source at or above this trust was written to be the reference (curated notes 0.8,
    # reviewed bundles 0.9, approved pages 1.0; daily logs are 0.6 and chat 0.5): one
    # statement in it is evidence enough, and min_evidence does not apply.
    authority_trust: float = 0.8
    min_distinct_days: int = 1
    # A context is a distinct source (a file, a transcript, an API client).
    min_distinct_contexts: int = 1
    # Batch caps for selection; both are soft against the day boundary.
    max_episodes: int = 5000
    max_bytes: int = 4 * 1024 * 1024
    max_proposals: int = 50
    # Deferred candidates returned beyond the proposals; the rest are only counted, so a
    # huge backlog cannot flood the review queue (unbounded growth hurt OpenClaw users).
    max_deferred: int = 200
    # Whole-episode near-duplicates: Jaccard of content tokens plus bigrams, and equal
    # entities. 0.7 folds re-pastes and small edits, keeps paraphrases apart.
    near_dup_jaccard: float = 0.7
    # Sentences about the same subject: Jaccard of subject terms (values removed). 0.5 joins
    # "ledger DB is Engine 16 (host ledger-db-2)" with "ledger runs on engine 16 —
    # ledger-db-2" while the identity guard keeps other hosts and versions apart.
    cluster_jaccard: float = 0.5
    # Blocks stating the same fact in other words (similar.py) share at least two terms
    # whose summed idf exceeds this multiple of 2 ln n nats (n blocks in the sweep): at
    # 1.0 such an overlap is expected less than once among all pairs by chance, which
    # holds for any corpus size; raise it for stricter grouping.
    paraphrase_factor: float = 1.0
    theme_min_days: int = 3
    max_themes: int = 20
    # Evidence flags (exact, or a prefix ending in ':') that block a candidate outright.
    block_flags: tuple[str, ...] = ()
    snippet_max_chars: int = 640
    # How many example episode ids a set-aside summary carries.
    sample_ids: int = 20
    # Set by from_dict when the weights had to be renormalised; not part of to_dict().
    normalised_note: str | None = field(default=None, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Policy:
        """Validate a JSON-like dict; unknown keys, wrong types and bad ranges raise."""
        if data is None:
            return cls()
        if not isinstance(data, dict):
            raise PolicyError("(policy)", f"must be an object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)} - {"normalised_note"}
        for key in sorted(data):
            if key not in known:
                raise PolicyError(str(key), f"unknown key (known: {', '.join(sorted(known))})")
        kwargs: dict[str, Any] = {}
        note = None
        if "weights" in data:
            kwargs["weights"], note = _weights_from(data["weights"])
        for name, (kind, lo, hi) in _RANGES.items():
            if name in data:
                kwargs[name] = _check_number(name, data[name], kind, lo, hi)
        if "block_flags" in data:
            value = data["block_flags"]
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise PolicyError("block_flags", "must be a list of strings")
            kwargs["block_flags"] = tuple(sorted(set(value)))
        policy = cls(**kwargs)
        return replace(policy, normalised_note=note) if note else policy

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict that ``from_dict`` accepts unchanged."""
        out: dict[str, Any] = {"weights": self.weights.as_dict()}
        for f in fields(self):
            if f.name in ("weights", "normalised_note"):
                continue
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


# name -> (type, minimum, maximum); None means unbounded on that side.
_RANGES: dict[str, tuple[type, float | None, float | None]] = {
    "recency_half_life_days": (float, 0.01, 3650.0),
    "min_score": (float, 0.0, 1.0),
    "min_evidence": (int, 1, None),
    "authority_trust": (float, 0.0, 1.0),
    "min_distinct_days": (int, 1, None),
    "min_distinct_contexts": (int, 1, None),
    "max_episodes": (int, 1, None),
    "max_bytes": (int, 1, None),
    "max_proposals": (int, 0, None),
    "max_deferred": (int, 0, None),
    "near_dup_jaccard": (float, 0.05, 1.0),
    "cluster_jaccard": (float, 0.05, 1.0),
    "paraphrase_factor": (float, 0.1, 10.0),
    "theme_min_days": (int, 1, None),
    "max_themes": (int, 0, None),
    "snippet_max_chars": (int, 80, None),
    "sample_ids": (int, 0, None),
}


def _check_number(name: str, value: Any, kind: type, lo: float | None, hi: float | None):
    # bool is an int subclass; "true" as a weight or a cap is always a mistake.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(name, f"must be a number, got {type(value).__name__}")
    if kind is int and (isinstance(value, float) and not value.is_integer()):
        raise PolicyError(name, f"must be a whole number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise PolicyError(name, f"must be finite, got {value!r}")
    if lo is not None and value < lo:
        raise PolicyError(name, f"must be >= {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise PolicyError(name, f"must be <= {hi}, got {value!r}")
    return int(value) if kind is int else float(value)


def _weights_from(value: Any) -> tuple[Weights, str | None]:
    if not isinstance(value, dict):
        raise PolicyError("weights", f"must be an object, got {type(value).__name__}")
    merged = Weights().as_dict()
    for key in sorted(value):
        if key not in merged:
            raise PolicyError(f"weights.{key}", f"unknown signal (known: {', '.join(SIGNALS)})")
        merged[key] = _check_number(f"weights.{key}", value[key], float, 0.0, None)
    total = sum(merged.values())
    if total <= 0:
        raise PolicyError("weights", "at least one weight must be positive")
    note = None
    if abs(total - 1.0) > 1e-6:
        # Renormalising keeps the operator's ratios; the note says so, so the UI can show
        # that the stored numbers are not the ones in effect.
        merged = {k: v / total for k, v in merged.items()}
        note = f"weights summed to {total:.4g}; renormalised to 1"
    return Weights(**merged), note
