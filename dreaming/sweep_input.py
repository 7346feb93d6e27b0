"""What a sweep reads: the batch of episodes as the engine sees them, recall statistics,
and what the engine computed from them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import date, timedelta

from django.db.models import QuerySet
from django.db.models.functions import Length
from django.utils import timezone

from dreaming.engine import select
from dreaming.engine.learn import Decided, Where
from dreaming.engine.policy import Policy
from dreaming.engine.types import DATED_KINDS, Ep, RecallStats, SweepResult
from dreaming.models import Candidate
from llmwiki.importers import registry
from llmwiki.models import Episode, EpisodeRelabel, Project, RecallTrace, SecurityClass

RECALL_WINDOW = timedelta(days=90)
SOURCE_TRUST = registry.SOURCE_TRUST
TRUST_LABEL = {Episode.Trust.APPROVED: 1.0, Episode.Trust.REVIEWED: 0.9}


def source_trust(label: str, importer: str | None) -> float:
    """How far the engine believes an episode: what its importer declares in the registry
    (every importer that writes sources does, the API's events too), raised to what a
    review made of it, so a bundle's declared 1.0 is not lowered to "reviewed"."""
    declared = SOURCE_TRUST.get(importer or registry.EVENT_IMPORTER, registry.EVENT_TRUST)
    return max(declared, TRUST_LABEL.get(label, 0.0))


@dataclass
class _Computed:
    result: SweepResult
    batch: select.Batch
    bytes_read: int
    security: dict[int, str]  # episode id -> class, for the classes stricter than internal


# Material a sweep reads as written down to be kept (``worth.noted``): not a log, a chat or
# the app's own bookkeeping.
NOTE_KINDS = tuple(
    k for k in Episode.Kind.values if k not in DATED_KINDS and k not in Episode.BOOKKEEPING_KINDS
)


def keeps_notes(project: Project) -> bool:
    """Whether the project holds any note a sweep may read (one indexed lookup)."""
    return Episode.objects.dreamable().filter(project=project, kind__in=NOTE_KINDS).exists()


def plan_bounded(pending: QuerySet[Episode], policy: Policy, *, first_run: bool) -> select.Batch:
    """The next batch of `pending` (episodes past the watermark, or a wizard run's), never
    over the policy's cap, however large the backlog or any one day of it.

    A backlog that fits in one batch is planned by the engine as before (a first run
    newest day first). A larger one is read oldest first by id, a batch at a time, each
    moving the watermark past what it took: a crash resumes where the last run settled,
    nothing is left behind the watermark, and only the first cap's rows are ever loaded.
    The batch ends at a day boundary when it holds one; a day larger than the cap is
    split, the rest of it read by the next run.
    """
    head = pending.values_list("id", "occurred_at", Length("content")).order_by("id")
    rows: list[select.Row] = []
    nbytes = 0
    for pk, occurred, size in head[: policy.max_episodes + 1]:
        row = select.Row(pk, occurred.date(), size)
        if rows and (len(rows) >= policy.max_episodes or nbytes + size > policy.max_bytes):
            break
        rows.append(row)
        nbytes += size
    else:
        return select.plan_batch(rows, policy, first_run=first_run)
    split = row.day  # the day the cap fell in
    cut = len(rows)
    while cut and rows[cut - 1].day == split:
        cut -= 1
    rows = rows[:cut] or rows
    batch = select.plan_batch(rows, policy)  # every row fits: the engine takes them all
    remaining = pending.filter(id__gt=batch.watermark_after).count()
    note = (
        f"backlog larger than the batch cap ({policy.max_episodes} episodes, "
        f"{policy.max_bytes} bytes): took the oldest {len(batch.ids)} episodes over "
        f"{len(batch.days)} day(s), {batch.nbytes} bytes; {remaining} remain for the next "
        "runs"
    )
    if not cut:
        note += f"; day {split} alone exceeds the cap and was split"
    return replace(batch, note=note, remaining=remaining)


def _load_episodes(project: Project, ids: tuple[int, ...]) -> tuple[dict[int, Ep], dict[int, str]]:
    """Load the batch by id range (an `IN` of 100k ids would exceed SQLite's limits).

    Also returns the security class of each episode stricter than internal, read in the
    same pass, for the candidates built on them.
    """
    out: dict[int, Ep] = {}
    security: dict[int, str] = {}
    if not ids:
        return out, security
    wanted = set(ids)
    # A person's correction of the memory type outranks the label ingest gave it.
    relabelled = EpisodeRelabel.in_force(
        episode__project=project, episode_id__gte=min(ids), episode_id__lte=max(ids)
    )
    fields = ("id", "occurred_at", "recorded_at", "content", "kind", "memory_type", "actor")
    fields += ("source_id", "source__importer", "trust", "flags", "tags", "security_class")
    fields += ("locator__section",)
    rows = _in_range(project, ids).dreamable().values_list(*fields, named=True).order_by("id")
    for e in rows.iterator(chunk_size=5000):
        if e.id not in wanted:
            continue
        if e.security_class != SecurityClass.INTERNAL:
            security[e.id] = e.security_class
        out[e.id] = Ep(
            id=e.id,
            occurred_at=e.occurred_at,
            content=e.content,
            kind=e.kind,
            memory_type=relabelled.get(e.id, e.memory_type),
            actor=e.actor,
            source_id=e.source_id or 0,
            source_trust=source_trust(e.trust, e.source__importer),
            risk_flags=tuple(e.flags),
            tags=tuple(e.tags),
            # The gate stamps material with no time of its own with its recording time.
            dated=e.occurred_at != e.recorded_at,
            section=e.locator__section if isinstance(e.locator__section, str) else "",
        )
    return out, security


def _in_range(project: Project, ids) -> QuerySet[Episode]:
    """Episodes of the project between the smallest and largest of `ids`.

    Batches are id ranges with few gaps; filtering by range and intersecting in Python
    avoids an `IN` list of 100k parameters, over SQLite's limit.
    """
    if not ids:
        return Episode.objects.none()
    return Episode.objects.filter(project=project, id__gte=min(ids), id__lte=max(ids))


def _recall_stats(project: Project, episode_ids: set[int]) -> dict[int, RecallStats]:
    """Aggregate recent retrieval traces per episode: hits, distinct queries and days."""
    since = timezone.now() - RECALL_WINDOW
    hits: dict[int, list[tuple[str, date, float]]] = defaultdict(list)
    traces = RecallTrace.objects.filter(project=project, at__gte=since).values_list(
        "query", "at", "episode_ids", "scores"
    )
    for query, at, ids, scores in traces.iterator(chunk_size=2000):
        for i, pk in enumerate(ids):
            if pk in episode_ids:
                score = scores[i] if i < len(scores) else 0.0
                hits[pk].append((query.strip().lower(), at.date(), float(score)))
    return {
        pk: RecallStats(
            hits=len(h),
            distinct_queries=len({q for q, _, _ in h}),
            distinct_days=len({d for _, d, _ in h}),
            mean_score=sum(s for _, _, s in h) / len(h),
        )
        for pk, h in hits.items()
    }


_DECIDED_LIMIT = 500  # the newest decisions are the project's taste; older ones add little


def _decided(project: Project) -> list[Decided]:
    """The project's decided candidates as labels for the queue (engine ``learn``): the
    newest approvals and rejections, with the wording the reviewer saw, the
    claim-worthiness the shipped model gave it and where that wording was written."""
    rows = (
        Candidate.objects.filter(
            project=project, status__in=(Candidate.Status.APPROVED, Candidate.Status.REJECTED)
        )
        .order_by("-updated_at", "-id")
        .values_list("id", "status", "text", "signals")[:_DECIDED_LIMIT]
    )
    return [
        Decided(
            pk,
            text,
            status == Candidate.Status.APPROVED,
            float((signals or {}).get("worth.model", (signals or {}).get("worth", 0.5))),
            Where.from_signals(signals or {}),
        )
        for pk, status, text, signals in rows
    ]
