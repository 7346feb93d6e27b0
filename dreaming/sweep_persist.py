"""Persisting a sweep's result: candidates, evidence, conflicts and reinforced claims, in
the run's transaction; idempotent by dedupe key."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Count
from django.utils import timezone

from dreaming.engine.blocks import sentences
from dreaming.engine.deep import draft_rank
from dreaming.engine.restate import Identity
from dreaming.engine.similar import TermIndex, generating, neighbours, terms_of
from dreaming.engine.text import Features, analyse
from dreaming.engine.types import CandidateDraft, SweepResult
from dreaming.engine.types import ConflictSide as DraftSide
from dreaming.models import (
    Candidate,
    CandidateEvidence,
    CandidateTerm,
    Conflict,
    ConflictSide,
    DreamRun,
)
from dreaming.sweep_input import _Computed, _in_range
from llmwiki.models import SECURITY_RANK, AuditEvent, Claim, Project, SecurityClass

# Keys per IN list: well under every backend's limit on query parameters.
_CHUNK = 500


def _restating_open(project: Project, drafts: list) -> dict[str, int]:
    """Drafts that restate a candidate still awaiting review, by dedupe key → its id.

    Their evidence goes to that candidate instead of a second proposal of the same fact.
    A contested or blocked draft stays its own: a reviewer must see it as it is.

    The answer is ``restating`` over the drafts and the whole queue, but only the waiting
    candidates that hold one of the drafts' rare terms are read (``_near_drafts``): the
    queue counts in the terms' rarity, and the others can share no rare term with a
    draft, so they are never a draft's neighbour. Cost and memory follow the drafts.
    """
    plain = [c for c in drafts if not c.conflict_keys and c.status != "blocked"]
    if not plain:
        return {}
    drafted = [_parsed(c.text) for c in plain]
    waiting, index = _near_drafts(project, [terms for _, terms in drafted])
    if not waiting:
        return {}
    parsed = [_parsed(text) for _, text in waiting] + drafted
    near = neighbours([terms for _, terms in parsed], index)
    ids = [Identity.of(feats) for feats, _ in parsed]
    first_draft = len(waiting)
    found = {}
    for d in range(len(plain)):
        x = first_draft + d
        best = max(
            ((s, -y) for y, s in near[x] if y < first_draft and ids[x].agrees(ids[y])),
            default=None,
        )
        if best is not None:
            found[plain[d].dedupe_key] = waiting[-best[1]][0]
    return found


def _parsed(text: str) -> tuple[list[Features], frozenset[str]]:
    """A text's sentences' features and its grouping terms, as ``restating`` reads them."""
    feats = [analyse(s) for s in sentences(text)] or [analyse(text)]
    return feats, frozenset().union(*(terms_of(f) for f in feats))


def _term_key(term: str) -> int:
    """A term's 64-bit key in ``CandidateTerm`` (never 0, the key of "no term")."""
    digest = hashlib.blake2b(term.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True) or 1


def _near_drafts(
    project: Project, drafted: list[frozenset[str]]
) -> tuple[list[tuple[int, str]], TermIndex]:
    """The waiting candidates sharing a rare term with a draft, as (id, text) by id, and
    the term rarities over the whole queue and the drafts.

    ``neighbours`` pairs only texts sharing a term held by at most √n texts, so these
    are all the waiting candidates a draft can restate. Term counts are asked only for
    the drafts' own terms, in the database. Only reads: waiting candidates not in
    ``CandidateTerm`` yet are parsed here as the index would hold them, so a preview,
    which writes nothing, finds what the sweep after it will.
    """
    queue = Candidate.objects.filter(project=project, status__in=Candidate.OPEN_STATUSES)
    unindexed = dict(_unindexed(queue))
    drafted_df: dict[str, int] = defaultdict(int)
    for terms in drafted:
        for t in terms:
            drafted_df[t] += 1
    keys = {t: _term_key(t) for t in drafted_df}
    held = CandidateTerm.objects.filter(
        project=project, candidate__status__in=Candidate.OPEN_STATUSES
    )
    queued: dict[int, int] = defaultdict(int)
    unique = sorted(set(keys.values()))
    for lo in range(0, len(unique), _CHUNK):
        counts = (
            held.filter(key__in=unique[lo : lo + _CHUNK])
            .values("key")
            .annotate(n=Count("candidate_id"))
            .values_list("key", "n")
        )
        queued.update(counts)
    wanted = set(unique)
    for held_keys in unindexed.values():
        for k in held_keys & wanted:
            queued[k] += 1
    df = {t: queued.get(keys[t], 0) + n for t, n in drafted_df.items()}
    # Rarity as if every waiting text had been read: the unread ones hold none of the
    # drafts' terms, so they add to the number of texts and to no term's count.
    index = TermIndex(df, queue.count() + len(drafted))
    cap = generating(index.n)
    rare_keys = {keys[t] for t, n in df.items() if queued.get(keys[t]) and n <= cap}
    rare = sorted(rare_keys)
    found = {pk for pk, held_keys in unindexed.items() if not held_keys.isdisjoint(rare_keys)}
    for lo in range(0, len(rare), _CHUNK):
        found.update(
            held.filter(key__in=rare[lo : lo + _CHUNK]).values_list("candidate_id", flat=True)
        )
    waiting = list(Candidate.objects.filter(pk__in=found).order_by("id").values_list("id", "text"))
    return waiting, index


def _unindexed(queue) -> Iterator[tuple[int, set[int]]]:
    """The waiting candidates of ``queue`` not in ``CandidateTerm`` yet (the last run's, or
    any made elsewhere), with their term keys ({0} for a candidate with no term)."""
    missing = queue.filter(terms__isnull=True).values_list("id", "text")
    for pk, text in missing.iterator(chunk_size=_CHUNK):
        yield pk, {_term_key(t) for t in _parsed(text)[1]} or {0}


def _index_terms(project: Project, queue) -> None:
    """Keep ``CandidateTerm`` to the waiting candidates: drop the rows of decided ones and
    add those of candidates of ``queue`` not indexed yet."""
    CandidateTerm.objects.filter(project=project).exclude(
        candidate__status__in=Candidate.OPEN_STATUSES
    ).delete()
    rows = [
        CandidateTerm(project=project, candidate_id=pk, key=k)
        for pk, keys in _unindexed(queue)
        for k in keys
    ]
    CandidateTerm.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)


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
    _index_terms(
        project, Candidate.objects.filter(project=project, status__in=Candidate.OPEN_STATUSES)
    )
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
            rank=draft_rank(c),
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
