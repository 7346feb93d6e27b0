"""The preview of a sweep: what a real run would do, written nowhere but the run."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from dreaming.engine.types import SweepResult
from dreaming.sweep_persist import _folds, _max_security
from llmwiki.models import Project


def _preview(project: Project, result: SweepResult, security: dict[int, str]) -> dict[str, Any]:
    """What a real run would do, in a JSON shape the run page renders.

    Each text carries the security class of its evidence, so the page can withhold it, and
    the candidate it would only add evidence to (`adds_evidence_to`), as persisting does.
    """
    existing, restated = _folds(project, result.candidates)
    folds = {**existing, **restated}
    return {
        "candidates": [
            {
                "text": c.text,
                "page_target": c.page_target,
                "route_reason": c.route_reason,
                "score": round(c.score, 3),
                "status": c.status,
                "blocked_reason": c.blocked_reason,
                "evidence": len(c.evidence),
                "flags": list(c.flags),
                "security_class": _max_security(security.get(e.episode_id) for e in c.evidence),
                "adds_evidence_to": folds.get(c.dedupe_key),
            }
            for c in result.candidates
        ],
        "conflicts": [
            {
                "subject": d.subject,
                "kind": d.kind,
                "sides": [s.text for s in d.sides],
                "security_class": _max_security(
                    security.get(i) for s in d.sides for i in s.episode_ids
                ),
            }
            for d in result.conflicts
        ],
        "stays_episodic": [asdict(s) for s in result.stays_episodic],
        "duplicates_folded": result.duplicates_folded,
        "reinforced": {str(k): v for k, v in result.reinforced.items()},
    }
