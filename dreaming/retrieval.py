"""Unresolved conflicts for retrieval (`llmwiki.search.disputes`): a fixed number of queries."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Q

from dreaming.models import Candidate, Conflict, ConflictSide, side_labels
from llmwiki.access import Labels
from llmwiki.models import Claim
from llmwiki.search.disputes import Dispute, Side, register

LABELS = ("security_class", "flags", "status")


@register
def unresolved_conflicts(project_id: int, as_of: datetime | None) -> list[Dispute]:
    """Every retrieval reads every open conflict, and a project holds hundreds, each side
    quoting episodes: so the rows are read as plain values, the episodes, claims and
    candidates behind the sides for their ids and labels only (model instances and
    prefetched managers cost a tenth of a second per retrieval at 600 conflicts)."""
    conflicts = Conflict.objects.filter(project=project_id)
    if as_of is None:
        conflicts = conflicts.unresolved()
    else:
        conflicts = conflicts.filter(detected_at__lte=as_of).filter(
            Q(resolved_at__isnull=True, status__in=("open", "escalated")) | Q(resolved_at__gt=as_of)
        )
    found = list(conflicts.order_by("id").values_list("id", "status"))
    if not found:
        return []
    sides = ConflictSide.objects.filter(conflict__in=conflicts.values("id"))
    rows = list(
        sides.order_by("conflict_id", "position").values_list(
            "id", "conflict_id", "text", "claim_id", "candidate_id"
        )
    )
    evidence: dict[int, list[tuple[int, Labels]]] = defaultdict(list)
    links = ConflictSide.evidence.through.objects.filter(conflictside__in=sides.values("id"))
    for side_id, episode_id, *labels in links.order_by("episode_id").values_list(
        "conflictside_id", "episode_id", *(f"episode__{f}" for f in LABELS)
    ):
        evidence[side_id].append((episode_id, _labels(labels)))
    claims = _labels_of(Claim, {r[3] for r in rows if r[3] is not None})
    candidates = _labels_of(Candidate, {r[4] for r in rows if r[4] is not None})
    by_conflict: dict[int, list[Side]] = defaultdict(list)
    for side_id, conflict_id, text, claim_id, candidate_id in rows:
        quoted = evidence.get(side_id, [])
        labels = side_labels(
            claims[claim_id] if claim_id is not None else None,
            candidates.get(candidate_id),
            (x for _, x in quoted),
        )
        by_conflict[conflict_id].append(
            Side(
                text=text,
                claim_id=claim_id,
                evidence_ids=tuple(sorted(pk for pk, _ in quoted)),
                labels=labels,
            )
        )
    return [
        Dispute(
            conflict_id=pk,
            # On a past date, a conflict resolved since was open then.
            status=status if status != Conflict.Status.RESOLVED else Conflict.Status.OPEN,
            sides=tuple(by_conflict.get(pk, [])),
        )
        for pk, status in found
    ]


def _labels(values) -> Labels:
    return Labels.of(dict(zip(LABELS, values, strict=True)))


def _labels_of(model, ids: set[int]) -> dict[int, Labels]:
    rows = model.objects.filter(pk__in=ids).values_list("id", *LABELS) if ids else []
    return {pk: _labels(labels) for pk, *labels in rows}
