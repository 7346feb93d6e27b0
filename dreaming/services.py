"""Dream sweeps: request, execute (with a lease and an attempt cap), persist, preview.

The engine (`dreaming.engine`) is pure; this module loads its input from the database and
writes its output. A sweep writes candidates, conflicts and evidence links only — never
claims or pages: approved memory changes only through a human review.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.db.models.functions import Length
from django.utils import timezone

from dreaming.engine import pipeline, select
from dreaming.engine.learn import Decided
from dreaming.engine.policy import Policy, PolicyError
from dreaming.engine.restate import restating
from dreaming.engine.types import ApprovedClaim, CandidateDraft, Ep, RecallStats, SweepResult
from dreaming.engine.types import ConflictSide as DraftSide
from dreaming.models import (
    Candidate,
    CandidateEvidence,
    Conflict,
    ConflictSide,
    DreamRun,
    WorkerHeartbeat,
)
from llmwiki.importers import registry
from llmwiki.models import (
    SECURITY_RANK,
    AuditEvent,
    Claim,
    Episode,
    EpisodeRelabel,
    Project,
    RecallTrace,
    SecurityClass,
)
from reviews.models import Review

log = logging.getLogger(__name__)

# A run's lease outlives the task timeout, so a worker killed mid-sweep frees the project
# once the lease lapses; django-q2 redelivers after `retry`, which is longer still.
LEASE = timedelta(seconds=settings.Q_CLUSTER["timeout"] + 60)
# django-q2 would redeliver a task that kills its worker forever (django-q2#327).
MAX_ATTEMPTS = 3
RECALL_WINDOW = timedelta(days=90)
HEARTBEAT_STALE = timedelta(minutes=3)
SOURCE_TRUST = registry.SOURCE_TRUST
TRUST_LABEL = {Episode.Trust.APPROVED: 1.0, Episode.Trust.REVIEWED: 0.9}
PHASES = ("light", "rem", "deep", "settle")


class DreamBusy(Exception):
    """A sweep is already queued or running for the project."""

    def __init__(self, run: DreamRun) -> None:
        self.run = run
        super().__init__(
            f"dream run #{run.pk} is already {run.status} for {run.project.slug}; "
            "wait for it to finish"
        )


def project_policy(project: Project) -> Policy:
    """The project's validated policy (raises PolicyError naming the bad field)."""
    return Policy.from_dict(project.dream_policy or None)


@transaction.atomic
def policy_update(*, project: Project, policy: dict, actor: Any) -> Policy:
    """Validate and store a dreaming policy; the audit row keeps before and after."""
    validated = Policy.from_dict(policy)
    before = project.dream_policy
    project.dream_policy = validated.to_dict()
    project.save(update_fields=["dream_policy"])
    AuditEvent.record(
        actor=actor, action="project.policy", obj=project, before=before, after=project.dream_policy
    )
    return validated


def dream_request(
    *,
    project: Project,
    trigger: str,
    actor: Any = None,
    backfill: tuple[date, date] | None = None,
    enqueue: bool = True,
    wizard_run_id: int | None = None,
) -> DreamRun:
    """Create a queued run (one open run per project) and hand it to a worker on commit.

    `wizard_run_id`: read all of that wizard run's episodes, leave the watermark alone.
    """
    if backfill is not None and backfill[0] > backfill[1]:
        raise ValueError(f"backfill range starts after it ends: {backfill[0]} > {backfill[1]}")
    if trigger == DreamRun.Trigger.SCHEDULE and not project.dreaming_enabled:
        raise ValueError(f"dreaming is disabled for {project.slug}")
    now = timezone.now()
    with transaction.atomic():
        _abandon_expired(project, now)
        try:
            with transaction.atomic():
                run = DreamRun.objects.create(
                    project=project,
                    trigger=trigger,
                    requested_by=actor if getattr(actor, "pk", None) else None,
                    backfill_from=backfill[0] if backfill else None,
                    backfill_to=backfill[1] if backfill else None,
                    lease_expires_at=now + LEASE,
                    wizard_run_id=wizard_run_id,
                    phases={p: {"status": "pending"} for p in PHASES},
                )
        except IntegrityError:
            raise DreamBusy(open_run(project)) from None
        AuditEvent.record(actor=actor, action=f"dream.{trigger}", obj=run, after={"run": run.pk})
    if enqueue:
        from django_q.tasks import async_task

        transaction.on_commit(lambda: async_task("dreaming.tasks.dream_run", run.pk))
    return run


def _abandon_expired(project: Project, now) -> None:
    for run in DreamRun.objects.filter(
        project=project, status__in=DreamRun.OPEN_STATUSES, lease_expires_at__lt=now
    ):
        run.status = DreamRun.Status.ABANDONED
        run.error = f"lease expired at {run.lease_expires_at:%Y-%m-%d %H:%M:%S} (worker gone?)"
        run.finished_at = now
        run.save(update_fields=["status", "error", "finished_at"])
        AuditEvent.record(actor="system", action="dream.abandon", obj=run, note=run.error)


def dream_execute(*, run_id: int) -> DreamRun:
    """Run one sweep; safe to call twice for the same run (at-least-once delivery)."""
    run = _claim(run_id)
    if run is None:
        return DreamRun.objects.get(pk=run_id)
    started = time.perf_counter()
    try:
        _settle(run, _compute(run), started)
    except Exception as exc:
        log.exception("dream run %s failed", run.pk)
        _fail(run, f"{type(exc).__name__}: {exc}", started)
    run.refresh_from_db()
    return run


def _claim(run_id: int) -> DreamRun | None:
    """Take the lease, or return None when the run is finished or someone else holds it."""
    now = timezone.now()
    with transaction.atomic():
        run = DreamRun.objects.select_for_update().select_related("project").get(pk=run_id)
        if not run.is_open:
            return None
        if run.status == DreamRun.Status.RUNNING and run.lease_expires_at > now:
            return None
        run.attempts += 1
        if run.attempts > MAX_ATTEMPTS:
            run.status = DreamRun.Status.FAILED
            run.error = f"gave up after {MAX_ATTEMPTS} attempts (the worker kept dying)"
            run.finished_at = now
            run.save(update_fields=["attempts", "status", "error", "finished_at"])
            AuditEvent.record(actor="system", action="dream.gave_up", obj=run, note=run.error)
            return None
        run.status = DreamRun.Status.RUNNING
        run.started_at = run.started_at or now
        run.lease_expires_at = now + LEASE
        run.watermark_before = run.project.dream_watermark
        run.phases = {p: {"status": "pending"} for p in PHASES}
        run.phases["light"] = {"status": "running"}
        run.save(
            update_fields=[
                "attempts",
                "status",
                "started_at",
                "lease_expires_at",
                "watermark_before",
                "phases",
            ]
        )
    return run


@dataclass
class _Computed:
    result: SweepResult
    batch: select.Batch
    bytes_read: int
    security: dict[int, str]  # episode id -> class, for the classes stricter than internal


def _compute(run: DreamRun) -> _Computed:
    project = run.project
    policy = project_policy(project)
    backfill = (run.backfill_from, run.backfill_to) if run.backfill_from else None
    # Our own bookkeeping (approvals, retrievals) is not project material to consolidate.
    dreamable = (
        Episode.objects.dreamable()
        .filter(project=project)
        .exclude(kind__in=Episode.BOOKKEEPING_KINDS)
    )
    if backfill:
        candidates = dreamable.filter(
            occurred_at__date__gte=backfill[0], occurred_at__date__lte=backfill[1]
        )
    elif run.wizard_run_id is not None:
        candidates = dreamable.filter(wizard_run_id=run.wizard_run_id)
    else:
        candidates = dreamable.filter(id__gt=project.dream_watermark)
    rows = (
        (pk, occurred.date(), n)
        for pk, occurred, n in candidates.values_list("id", "occurred_at", Length("content"))
        .order_by("id")
        .iterator(chunk_size=5000)
    )
    first_run = (project.dream_watermark == 0 or run.wizard_run_id is not None) and not backfill
    batch = select.plan_batch(rows, policy, first_run=first_run, backfill=backfill)
    episodes, security = _load_episodes(project, batch.ids)
    _phase(run, "light", status="running", selected=len(episodes), note=batch.note)
    claims = [
        ApprovedClaim(pk, text, page, subject or None)
        for pk, text, page, subject in Claim.objects.filter(project=project)
        .approved()
        .values_list("id", "text", "page__key", "subject_key")
    ]
    result = pipeline.run_sweep(
        episodes.values(),
        approved_claims=claims,
        recall=_recall_stats(project, set(episodes)),
        policy=policy,
        now=timezone.now(),
        live_episode_ids=set(episodes),
        decided=_decided(project),
    )
    return _Computed(
        result=result,
        batch=batch,
        bytes_read=sum(len(e.content.encode()) for e in episodes.values()),
        security=security,
    )


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
    fields += ("locator",)
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
            source_trust=TRUST_LABEL.get(e.trust, SOURCE_TRUST.get(e.source__importer or "", 0.5)),
            risk_flags=tuple(e.flags),
            tags=tuple(e.tags),
            # The gate stamps material with no time of its own with its recording time.
            dated=e.occurred_at != e.recorded_at,
            heading=_nearest_heading(e.locator),
        )
    return out, security


def _nearest_heading(locator: object) -> str:
    """The innermost heading of an episode's section path ("A > B" gives "B")."""
    section = locator.get("section") if isinstance(locator, dict) else None
    if not isinstance(section, str):
        return ""
    return section.rsplit(" > ", 1)[-1].strip()


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


def _phase(run: DreamRun, name: str, **state: Any) -> None:
    run.phases[name] = {**run.phases.get(name, {}), **state}
    DreamRun.objects.filter(pk=run.pk).update(phases=run.phases)


def _settle(run: DreamRun, computed: _Computed, started: float) -> None:
    result, batch = computed.result, computed.batch
    timings = result.timings
    for phase in ("light", "rem", "deep"):
        run.phases[phase] = {
            **run.phases.get(phase, {}),
            "status": "done",
            "seconds": round(sum(v for k, v in timings.items() if k.startswith(phase)), 3),
        }
    counts = {
        "selected": len(batch.ids),
        "proposed": sum(1 for c in result.candidates if c.status == "proposed"),
        "deferred": sum(1 for c in result.candidates if c.status == "deferred"),
        "blocked": sum(1 for c in result.candidates if c.status == "blocked"),
        "duplicates": result.duplicates_folded,
        "conflicts": len(result.conflicts),
        "reinforced": len(result.reinforced),
        "older_left": batch.older_left,
        "remaining": batch.remaining,
        **{f"engine_{k}": v for k, v in result.counts.items()},
    }
    with transaction.atomic():
        if not run.is_preview:
            counts.update(_persist(run, computed))
        run.status = DreamRun.Status.SUCCEEDED if batch.ids else DreamRun.Status.NOOP
        run.counts = counts
        run.bytes_read = computed.bytes_read
        run.diary = result.diary
        run.preview = _preview(run.project, result, computed.security) if run.is_preview else None
        run.phases["settle"] = {"status": "done"}
        run.finished_at = timezone.now()
        run.duration_ms = int((time.perf_counter() - started) * 1000)
        run.lease_expires_at = None
        scoped = run.backfill_from is not None or run.wizard_run_id is not None
        advance = not run.is_preview and batch.watermark_after is not None and not scoped
        run.watermark_after = batch.watermark_after if advance else run.watermark_before
        run.save()
        if advance:
            Project.objects.filter(pk=run.project_id).update(dream_watermark=batch.watermark_after)
        AuditEvent.record(
            actor="system",
            action="dream.settle",
            obj=run,
            after={k: counts[k] for k in ("selected", "proposed", "conflicts", "blocked")},
        )


def _restating_open(project: Project, drafts: list) -> dict[str, int]:
    """Drafts that restate a candidate still awaiting review, by dedupe key → its id.

    Their evidence goes to that candidate instead of a second proposal of the same fact.
    A contested or blocked draft stays its own: a reviewer must see it as it is.
    """
    plain = [c for c in drafts if not c.conflict_keys and c.status != "blocked"]
    if not plain:
        return {}
    waiting = list(
        Candidate.objects.filter(
            project=project,
            status__in=(Candidate.Status.PROPOSED, Candidate.Status.DEFERRED),
        )
        .order_by("id")
        .values_list("id", "text")
    )
    found = restating([c.text for c in plain], [text for _, text in waiting])
    return {plain[d].dedupe_key: waiting[o][0] for d, o in found.items()}


_DECIDED_LIMIT = 500  # the newest decisions are the project's taste; older ones add little


def _decided(project: Project) -> list[Decided]:
    """The project's reviewed candidates as labels for the queue (engine ``learn``): each
    candidate's latest approval or rejection, with the wording the reviewer saw and the
    claim-worthiness the shipped model gave it."""
    decisions = (Review.Action.APPROVE, Review.Action.APPROVE_EDIT, Review.Action.REJECT)
    rows = (
        Review.objects.filter(candidate__project=project, action__in=decisions)
        .order_by("-at", "-id")
        .values_list("candidate_id", "action", "before_text", "candidate__signals")
    )
    out: dict[int, Decided] = {}
    for cid, action, text, signals in rows.iterator():
        if cid not in out:
            worth = (signals or {}).get("worth.model", (signals or {}).get("worth", 0.5))
            out[cid] = Decided(cid, text, action != Review.Action.REJECT, float(worth))
            if len(out) == _DECIDED_LIMIT:
                break
    return list(out.values())


def _folds(project: Project, drafts: list) -> tuple[dict[str, int], dict[str, int]]:
    """Drafts that only add evidence to a candidate already there, by dedupe key → its id:
    one with the same key, and (second) one awaiting review that the draft restates.

    Persisting and the preview both ask this, so a preview shows what a sweep will do.
    """
    existing = dict(
        Candidate.objects.filter(
            project=project, dedupe_key__in=[c.dedupe_key for c in drafts]
        ).values_list("dedupe_key", "id")
    )
    return existing, _restating_open(project, [c for c in drafts if c.dedupe_key not in existing])


def _with_reviewers(c: CandidateDraft) -> dict[str, Any]:
    """The draft's signals, with the decided candidates that moved it, for its panel."""
    if not (c.similar_approved or c.similar_rejected):
        return c.signals
    return {
        **c.signals,
        "reviewers.approved": list(c.similar_approved),
        "reviewers.rejected": list(c.similar_rejected),
    }


def _persist(run: DreamRun, computed: _Computed) -> dict[str, int]:
    """Write candidates, evidence, conflicts and reinforcements; idempotent by dedupe key."""
    project, result, security = run.project, computed.result, computed.security
    # Rehydrate inside the write transaction: evidence erased or quarantined since the
    # engine read it must not reach a reviewer.
    referenced = {e.episode_id for c in result.candidates for e in c.evidence}
    referenced.update(i for d in result.conflicts for side in d.sides for i in side.episode_ids)
    live = referenced & set(_in_range(project, referenced).dreamable().values_list("id", flat=True))
    drafts = [c for c in result.candidates if all(e.episode_id in live for e in c.evidence)]
    existing, restated = _folds(project, drafts)
    existing.update(restated)
    now = timezone.now()
    new = [
        Candidate(
            project=project,
            run=run,
            text=c.text,
            page_target=c.page_target,
            section=c.section,
            route_reason=c.route_reason,
            memory_type=c.memory_type,
            score=c.score,
            signals=_with_reviewers(c),
            lifecycle=c.lifecycle,
            flags=list(c.flags),
            security_class=_max_security(security.get(e.episode_id) for e in c.evidence),
            dedupe_key=c.dedupe_key,
            subject_key=c.subject_key,
            status=c.status,
            blocked_reason=c.blocked_reason or "",
            created_at=now,
            updated_at=now,
        )
        for c in drafts
        if c.dedupe_key not in existing
    ]
    Candidate.objects.bulk_create(new, batch_size=500)
    ids = dict(
        Candidate.objects.filter(
            project=project, dedupe_key__in=[c.dedupe_key for c in drafts]
        ).values_list("dedupe_key", "id")
    )
    ids.update(restated)
    CandidateEvidence.objects.bulk_create(
        [
            CandidateEvidence(candidate_id=ids[c.dedupe_key], episode_id=e.episode_id, role=e.role)
            for c in drafts
            for e in c.evidence
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    new_conflicts = _persist_conflicts(run, result, live, ids)
    for claim_id, episode_ids in result.reinforced.items():
        claim = Claim.objects.get(pk=claim_id, project=project)
        claim.evidence.add(*episode_ids)
        AuditEvent.record(
            actor="system", action="claim.reinforce", obj=claim, after={"episodes": episode_ids}
        )
    return {
        "new_candidates": len(new),
        "new_conflicts": new_conflicts,
        "restated_open": len(restated),
        "rehydrate_dropped_late": len(result.candidates) - len(drafts),
    }


def _persist_conflicts(
    run: DreamRun, result: SweepResult, live: set[int], candidate_ids: dict[str, int]
) -> int:
    """Write the conflicts the sweep found that no conflict on record already holds.

    A dispute still open is not written twice; a resolved one is raised again only by
    evidence its resolution did not weigh, as a new conflict that links the old one.
    Each side is linked to the candidate the sweep proposed from it, so resolving the
    conflict can settle that candidate too. Returns how many conflicts were written.
    """
    project = run.project
    # The candidate drafts each conflict contests, with their ids and supporting episodes.
    contested: dict[str, list[tuple[int, set[int]]]] = defaultdict(list)
    for c in result.candidates:
        if c.dedupe_key in candidate_ids:
            support = {e.episode_id for e in c.evidence if e.role == "support"}
            for key in c.conflict_keys:
                contested[key].append((candidate_ids[c.dedupe_key], support))
    history = _ConflictHistory(project)
    written = 0
    for draft in result.conflicts:
        episodes = {i for side in draft.sides for i in side.episode_ids if i in live}
        sides = [
            (position, side, _side_candidate(side, contested[draft.dedupe_key]))
            for position, side in enumerate(draft.sides)
        ]
        claims = {side.claim_id for side in draft.sides if side.claim_id}
        candidates = {pk for _, _, pk in sides if pk}
        prior = history.prior(draft.dedupe_key, draft.subject[:300], claims, candidates)
        if prior is not None and (
            prior.status != Conflict.Status.RESOLVED or episodes <= history.weighed(prior)
        ):
            continue
        key = draft.dedupe_key
        if history.taken(key):
            key = f"{key}:r{prior.pk}"  # the key of the resolved conflict this one re-opens
        conflict = Conflict.objects.create(
            project=project,
            run=run,
            subject=draft.subject[:300],
            kind=draft.kind,
            dedupe_key=key,
            reopens=prior,
        )
        for position, side, candidate_id in sides:
            row = ConflictSide.objects.create(
                conflict=conflict,
                position=position,
                text=side.text,
                claim_id=side.claim_id,
                candidate_id=candidate_id,
            )
            row.evidence.add(*[i for i in side.episode_ids if i in live])
        history.add(conflict)
        written += 1
    return written


def _side_candidate(side: DraftSide, contested: list[tuple[int, set[int]]]) -> int | None:
    """The contested candidate that rests most on this side's episodes, if any."""
    best, overlap = None, 0
    for pk, support in contested:
        n = len(support.intersection(side.episode_ids))
        if n > overlap:
            best, overlap = pk, n
    return best


class _ConflictHistory:
    """The project's conflicts on record, for telling a dispute seen before from a new one."""

    def __init__(self, project: Project) -> None:
        self.rows = {
            c.pk: c
            for c in Conflict.objects.filter(project=project).only(
                "id",
                "dedupe_key",
                "subject",
                "status",
                "reopens_id",
                "accepted_claim_id",
                "accepted_candidate_id",
            )
        }
        self.by_key = {c.dedupe_key: c for c in self.rows.values()}
        self.reopened_by = {c.reopens_id: c for c in self.rows.values() if c.reopens_id}
        self.by_subject: dict[str, list[Conflict]] = defaultdict(list)
        self.by_claim: dict[int, list[Conflict]] = defaultdict(list)
        self.by_candidate: dict[int, list[Conflict]] = defaultdict(list)
        resolved = {pk for pk, c in self.rows.items() if c.status == Conflict.Status.RESOLVED}
        for pk in resolved:
            c = self.rows[pk]
            self.by_subject[c.subject.casefold()].append(c)
            if c.accepted_claim_id:
                self.by_claim[c.accepted_claim_id].append(c)
            if c.accepted_candidate_id:
                self.by_candidate[c.accepted_candidate_id].append(c)
        sides = ConflictSide.objects.filter(conflict__in=resolved).values_list(
            "conflict_id", "claim_id", "candidate_id"
        )
        for conflict_id, claim_id, candidate_id in sides:
            if claim_id:
                self.by_claim[claim_id].append(self.rows[conflict_id])
            if candidate_id:
                self.by_candidate[candidate_id].append(self.rows[conflict_id])

    def taken(self, key: str) -> bool:
        return key in self.by_key

    def add(self, conflict: Conflict) -> None:
        """Record a conflict this sweep wrote: a later draft of the sweep may name it."""
        self.rows[conflict.pk] = conflict
        self.by_key[conflict.dedupe_key] = conflict
        if conflict.reopens_id:
            self.reopened_by[conflict.reopens_id] = conflict

    def prior(
        self, key: str, subject: str, claims: set[int], candidates: set[int]
    ) -> Conflict | None:
        """Where the same dispute stands on record, if it is there: still open, or the
        latest resolution of it.

        The same dispute is a conflict with the same key, or a resolved one on the same
        subject, claims or candidates, followed to the conflict that last re-opened it.
        """
        related = [self.by_key[key]] if key in self.by_key else []
        related += self.by_subject.get(subject.casefold(), [])
        related += [c for pk in claims for c in self.by_claim.get(pk, [])]
        related += [c for pk in candidates for c in self.by_candidate.get(pk, [])]
        ends = {self._latest(c).pk: self._latest(c) for c in related}.values()
        still_open = [c for c in ends if c.status != Conflict.Status.RESOLVED]
        return max(still_open or ends, key=lambda c: c.pk, default=None)

    def _latest(self, conflict: Conflict) -> Conflict:
        while conflict.pk in self.reopened_by:
            conflict = self.reopened_by[conflict.pk]
        return conflict

    def weighed(self, conflict: Conflict) -> set[int]:
        """Every episode a resolution of this dispute weighed: its sides' evidence, the
        evidence of the claims it disputed, and the same of each conflict it re-opened."""
        chain = []
        c: Conflict | None = conflict
        while c is not None:
            chain.append(c.pk)
            c = self.rows.get(c.reopens_id) if c.reopens_id else None
        found: dict[int, set[int]] = defaultdict(set)
        own = ConflictSide.evidence.through.objects.filter(conflictside__conflict__in=chain)
        for pk, episode in own.values_list("conflictside__conflict_id", "episode_id"):
            found[pk].add(episode)
        disputed = dict(
            ConflictSide.objects.filter(conflict__in=chain, claim__isnull=False).values_list(
                "claim_id", "conflict_id"
            )
        )
        claimed = Claim.evidence.through.objects.filter(claim__in=list(disputed))
        for claim_id, episode in claimed.values_list("claim_id", "episode_id"):
            found[disputed[claim_id]].add(episode)
        return set().union(*found.values())


def _max_security(classes) -> str:
    best = SecurityClass.INTERNAL
    for c in classes:
        if c and SECURITY_RANK[c] > SECURITY_RANK[best]:
            best = c
    return best


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


def _fail(run: DreamRun, error: str, started: float) -> None:
    with transaction.atomic():
        DreamRun.objects.filter(pk=run.pk).update(
            status=DreamRun.Status.FAILED,
            error=error[:2000],
            finished_at=timezone.now(),
            duration_ms=int((time.perf_counter() - started) * 1000),
            lease_expires_at=None,
        )
        AuditEvent.record(actor="system", action="dream.fail", obj=run, note=error[:2000])


def heartbeat_beat(name: str = "default") -> None:
    WorkerHeartbeat.objects.update_or_create(name=name, defaults={"seen_at": timezone.now()})


def worker_alive() -> bool:
    """True when a worker ran the heartbeat task recently (sync mode always counts)."""
    if settings.Q_CLUSTER.get("sync"):
        return True
    return WorkerHeartbeat.objects.filter(seen_at__gte=timezone.now() - HEARTBEAT_STALE).exists()


def open_run(project: Project) -> DreamRun | None:
    return DreamRun.objects.filter(project=project, status__in=DreamRun.OPEN_STATUSES).first()


def promoted_today(project: Project) -> int:
    today = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return Claim.objects.filter(project=project, approved_at__gte=today).count()


__all__ = ["DreamBusy", "PolicyError", "dream_execute", "dream_request", "policy_update"]
