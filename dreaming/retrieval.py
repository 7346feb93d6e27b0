"""Unresolved conflicts for retrieval (`llmwiki.search.disputes`): three queries at most."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from django.db.models import Q

from dreaming.models import Conflict, ConflictSide, side_labels
from llmwiki.access import Labels
from llmwiki.search.disputes import Dispute, Side, register, register_vectors
from llmwiki.search.postgres import tsquery_any

LABELS = ("security_class", "flags", "status")


def _unresolved(project_id: int, as_of: datetime | None):
    conflicts = Conflict.objects.filter(project=project_id)
    if as_of is None:
        return conflicts.unresolved()
    return conflicts.filter(detected_at__lte=as_of).filter(
        Q(resolved_at__isnull=True, status__in=("open", "escalated")) | Q(resolved_at__gt=as_of)
    )


@register_vectors
def unresolved_vectors(project_id: int, as_of: datetime | None, lexemes: Sequence[str]):
    """The SQL (and its parameters) of (conflict id, its sides' words) for the unresolved
    conflicts a side of which holds one of `lexemes`. A side's words are the tsvector
    PostgreSQL keeps of its text, with an index (migration 0008); a conflict's are its
    sides' in order, as `Dispute.words` joins their texts."""
    conflicts = _unresolved(project_id, as_of).order_by().values("id")
    conflicts, params = conflicts.query.sql_with_params()
    sql = (
        "SELECT s.conflict_id, dreaming_tsvector_agg(s.words ORDER BY s.position) "  # noqa: S608
        f"FROM dreaming_conflictside s WHERE s.conflict_id IN ({conflicts}) AND s.conflict_id "
        "IN (SELECT conflict_id FROM dreaming_conflictside WHERE words @@ %s::tsquery) "
        "GROUP BY s.conflict_id"
    )
    return sql, [*params, tsquery_any(lexemes)]


@register
def unresolved_conflicts(
    project_id: int,
    as_of: datetime | None,
    ids: Sequence[int] | None = None,
    claims: Sequence[int] = (),
) -> list[Dispute]:
    """Every retrieval reads open conflicts, and a project holds hundreds, each side quoting
    episodes: so the rows are read as plain values, and the episodes, claims and candidates
    behind the sides for their ids and labels only (model instances and prefetched
    managers cost a tenth of a second per retrieval at 600 conflicts). With `ids`, only
    those and the conflicts one of `claims` is a side of."""
    conflicts = _unresolved(project_id, as_of)
    if ids is not None:
        sides = ConflictSide.objects.filter(claim__in=claims).values("conflict")
        conflicts = conflicts.filter(Q(pk__in=ids) | Q(pk__in=sides))
    found = list(conflicts.order_by("id").values_list("id", "status"))
    if not found:
        return []
    ids = [pk for pk, _ in found]
    # Each side with the labels of the claim or candidate it is, in one query.
    rows = list(
        ConflictSide.objects.filter(conflict__in=ids)
        .order_by("conflict_id", "position")
        .values_list(
            "id",
            "conflict_id",
            "text",
            "claim_id",
            "candidate_id",
            *(f"claim__{f}" for f in LABELS),
            *(f"candidate__{f}" for f in LABELS),
        )
    )
    evidence: dict[int, list[tuple[int, Labels]]] = defaultdict(list)
    links = ConflictSide.evidence.through.objects.filter(conflictside__conflict__in=ids)
    for side_id, episode_id, *labels in links.order_by("episode_id").values_list(
        "conflictside_id", "episode_id", *(f"episode__{f}" for f in LABELS)
    ):
        evidence[side_id].append((episode_id, _labels(labels)))
    by_conflict: dict[int, list[Side]] = defaultdict(list)
    n = len(LABELS)
    for side_id, conflict_id, text, claim_id, candidate_id, *labels in rows:
        quoted = evidence.get(side_id, [])
        labels = side_labels(
            _labels(labels[:n]) if claim_id is not None else None,
            _labels(labels[n:]) if candidate_id is not None else None,
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
