"""Unresolved conflicts for retrieval (`llmwiki.search.disputes`): a fixed number of queries."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Prefetch, Q

from dreaming.models import Candidate, Conflict
from llmwiki.models import Claim, Episode
from llmwiki.search.disputes import Dispute, Side, register


@register
def unresolved_conflicts(project_id: int, as_of: datetime | None) -> list[Dispute]:
    conflicts = Conflict.objects.filter(project=project_id)
    if as_of is None:
        conflicts = conflicts.unresolved()
    else:
        conflicts = conflicts.filter(detected_at__lte=as_of).filter(
            Q(resolved_at__isnull=True, status__in=("open", "escalated")) | Q(resolved_at__gt=as_of)
        )
    # Every retrieval reads every open conflict: of the rows behind a side, only the ids
    # and what clearance reads (a project has hundreds of conflicts, each quoting episodes).
    labels = ("id", "security_class", "flags", "status")
    conflicts = conflicts.prefetch_related(
        Prefetch("sides__evidence", queryset=Episode.objects.only(*labels)),
        Prefetch("sides__claim", queryset=Claim.objects.only(*labels)),
        Prefetch("sides__candidate", queryset=Candidate.objects.only(*labels)),
    )
    return [
        Dispute(
            conflict_id=c.pk,
            # On a past date, a conflict resolved since was open then.
            status=c.status if c.status != Conflict.Status.RESOLVED else Conflict.Status.OPEN,
            sides=tuple(
                Side(
                    text=side.text,
                    claim_id=side.claim_id,
                    evidence_ids=tuple(sorted(e.pk for e in side.evidence.all())),
                    labels=side.labels,
                )
                for side in c.sides.all()
            ),
        )
        for c in conflicts.order_by("id")
    ]
