"""Read-side shapes shared by the command line, the JSON API and the pages."""

from __future__ import annotations

from dreaming.models import Candidate, Conflict
from dreaming.services import project_policy
from llmwiki.models import Episode


def evidence_document(episode: Episode, role: str = "support") -> dict:
    return {
        "episode_id": episode.pk,
        "locator": episode.locator,
        "source_sha256": episode.source.sha256 if episode.source else None,
        "role": role,
    }


def candidate_document(candidate: Candidate) -> dict:
    """Needs `evidence__episode__source` prefetched to stay at a constant query count."""
    return {
        "id": candidate.pk,
        "text": candidate.text,
        "page_target": candidate.page_target,
        "score": round(candidate.score, 4),
        "signals": candidate.signals,
        "status": candidate.status,
        "lifecycle": candidate.lifecycle,
        "flags": candidate.flags,
        "evidence": [evidence_document(e.episode, e.role) for e in candidate.evidence.all()],
    }


def conflict_document(conflict: Conflict) -> dict:
    """Needs `sides__evidence__source` and `sides__claim__evidence__source` prefetched."""
    return {
        "id": conflict.pk,
        "status": conflict.status,
        "kind": conflict.kind,
        "subject": conflict.subject,
        "sides": [
            {
                "text": side.text,
                "claim_id": side.claim_id,
                "evidence": [evidence_document(e) for e in side.cited_evidence],
            }
            for side in conflict.sides.all()
        ],
    }


def why_panel(candidate: Candidate) -> dict:
    """The context of the "Why is this here?" panel (templates/dreaming/why_panel.html)."""
    policy = project_policy(candidate.project)
    return {
        "policy": policy,
        "signals": candidate.signal_rows(policy),
        "admission": candidate.admission(policy),
        "queued_by": candidate.queued_by,
        "moved_by": moved_by(candidate),
        "evidence": candidate.evidence.select_related("episode__source").order_by(
            "episode__occurred_at", "episode_id"
        ),
    }


def moved_by(candidate: Candidate) -> list[tuple[Candidate, str]]:
    """The decided candidates its panel names as having moved it (engine ``learn``), each
    with the reason its reviewer gave when rejecting it ("" for an approval)."""
    got = candidate.signals
    ids = [*got.get("reviewers.rejected", []), *got.get("reviewers.approved", [])]
    if not ids:
        return []
    rows = (
        Candidate.objects.filter(project=candidate.project_id, pk__in=ids)
        .prefetch_related("reviews")
        .order_by("pk")
    )
    return [
        (c, next((r.note for r in c.reviews.all() if r.action == "reject"), ""))
        if c.status == Candidate.Status.REJECTED
        else (c, "")
        for c in rows
    ]
