"""Read operations shared by the JSON API and the MCP server: pages, provenance, conflicts.

Each list is a fixed number of queries whatever its length (prefetches, no per-row loads).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch

from api.operations import candidate_out, masked
from api.services import Caller, NotFound, paged
from dreaming.models import Candidate, CandidateEvidence, Conflict
from llmwiki.errors import InputError, refuse_unstorable
from llmwiki.models import Claim, Episode, Page, PageRevision
from llmwiki.wiki import readable_markdown


def episode_out(caller: Caller, episode: Episode, role: str | None = None) -> dict[str, Any]:
    """An episode with its provenance; needs `source` selected."""
    source = episode.source
    document = {
        "episode_id": episode.pk,
        "kind": episode.kind,
        "actor": episode.actor,
        "occurred_at": episode.occurred_at,
        "locator": episode.locator,
        "status": episode.status,
        "trust": episode.trust,
        "memory_type": episode.memory_type,
        "security_class": episode.security_class,
        "flags": episode.flags,
        "source": {
            "sha256": source.sha256,
            "path": source.path,
            "importer": source.importer,
            "retrieved_at": source.retrieved_at,
        }
        if source
        else None,
        **masked(caller, episode, episode.content),
    }
    if role is not None:
        document["role"] = role
    return document


# --- Pages --------------------------------------------------------------------------------


def page_list(caller: Caller) -> dict[str, Any]:
    pages = Page.objects.filter(project=caller.project).select_related("current_revision")
    return {
        "items": [
            {
                "key": p.key,
                "title": p.title,
                "revision": p.current_revision.number if p.current_revision else None,
                "updated_at": p.current_revision.created_at if p.current_revision else None,
            }
            for p in pages.order_by("key")
        ]
    }


def page_read(caller: Caller, key: str, revision: int | None = None) -> dict[str, Any]:
    """A page's markdown and its claims, each claim above the caller's clearance withheld
    with the reason, as on the wiki page."""
    refuse_unstorable("key", key)
    page = Page.objects.filter(project=caller.project, key=key).first()
    if page is None:
        raise NotFound(f"no page {key!r} in {caller.project.slug}")
    if revision is None:
        rev = page.current_revision
    else:
        rev = PageRevision.objects.filter(page=page, number=revision).first()
        if rev is None:
            raise NotFound(f"page {key} has no revision {revision}")
    claims = page.claims.approved().prefetch_related("evidence").order_by("section", "id")
    return {
        "key": page.key,
        "title": page.title,
        "revision": rev.number if rev else None,
        "markdown": readable_markdown(caller.project, rev.markdown, role=caller.role)[0]
        if rev
        else "",
        "created_at": rev.created_at if rev else None,
        "claims": [
            {
                "claim_id": c.pk,
                "section": c.section,
                **masked(caller, c, c.text),
                "evidence_ids": sorted(e.pk for e in c.evidence.all()),
            }
            for c in claims
        ]
        if rev is not None and rev.pk == page.current_revision_id
        else None,
    }


# --- Provenance ---------------------------------------------------------------------------

PROVENANCE_KINDS = ("claim", "candidate", "episode")


def provenance(caller: Caller, kind: str, object_id: int) -> dict[str, Any]:
    """Where a claim, candidate or episode came from and what was built from it."""
    if kind == "claim":
        return _claim_provenance(caller, object_id)
    if kind == "candidate":
        return _candidate_provenance(caller, object_id)
    if kind == "episode":
        return _episode_provenance(caller, object_id)
    raise InputError("kind", f"unknown kind {kind!r}; one of {', '.join(PROVENANCE_KINDS)}")


def _claim_provenance(caller: Caller, claim_id: int) -> dict[str, Any]:
    claim = (
        Claim.objects.filter(project=caller.project, pk=claim_id)
        .select_related("page", "reviewer")
        .prefetch_related(
            Prefetch(
                "evidence",
                queryset=Episode.objects.select_related("source").order_by("occurred_at", "id"),
            ),
            "candidates",
        )
        .first()
    )
    if claim is None:
        raise NotFound(f"no claim {claim_id} in {caller.project.slug}")
    superseded_by = Claim.objects.filter(supersedes=claim).values_list("pk", flat=True).first()
    return {
        "object": "claim",
        "claim_id": claim.pk,
        **masked(caller, claim, claim.text),
        "status": claim.status,
        "version": claim.version,
        "page": claim.page.key,
        "section": claim.section,
        "security_class": claim.security_class,
        "flags": claim.flags,
        "approved_at": claim.approved_at,
        "reviewer": claim.reviewer.get_username(),
        "supersedes": claim.supersedes_id,
        "superseded_by": superseded_by,
        "source_refs": claim.source_refs,
        "candidates": sorted(c.pk for c in claim.candidates.all()),
        "evidence": [episode_out(caller, e) for e in claim.evidence.all()],
    }


def _candidate_provenance(caller: Caller, candidate_id: int) -> dict[str, Any]:
    candidate = (
        Candidate.objects.filter(project=caller.project, pk=candidate_id)
        .prefetch_related(
            Prefetch(
                "evidence",
                queryset=CandidateEvidence.objects.select_related("episode__source").order_by(
                    "episode__occurred_at", "episode_id"
                ),
            )
        )
        .first()
    )
    if candidate is None:
        raise NotFound(f"no candidate #{candidate_id} in {caller.project.slug}")
    document = candidate_out(caller, candidate)
    document.update(
        object="candidate",
        run_id=candidate.run_id,
        claim_id=candidate.claim_id,
        route_reason=candidate.route_reason,
        evidence=[episode_out(caller, e.episode, e.role) for e in candidate.evidence.all()],
    )
    return document


def _episode_provenance(caller: Caller, episode_id: int) -> dict[str, Any]:
    episode = (
        Episode.objects.filter(project=caller.project, pk=episode_id)
        .select_related("source")
        .first()
    )
    if episode is None:
        raise NotFound(f"no episode #{episode_id} in {caller.project.slug}")
    document = {"object": "episode", **episode_out(caller, episode)}
    document["cited_by"] = {
        "claims": sorted(episode.claims.values_list("pk", flat=True)),
        "candidates": sorted(
            CandidateEvidence.objects.filter(episode=episode).values_list("candidate_id", flat=True)
        ),
        "conflicts": sorted(
            set(Conflict.objects.filter(sides__evidence=episode).values_list("pk", flat=True))
        ),
    }
    return document


# --- Conflicts and open questions ---------------------------------------------------------

CONFLICT_SHOW = ("open", "resolved", "all")


def _conflict_out(caller: Caller, conflict: Conflict) -> dict[str, Any]:
    sides = []
    for side in conflict.sides.all():
        evidence = side.cited_evidence
        labels = side.labels
        sides.append(
            {
                "position": side.position,
                "claim_id": side.claim_id,
                "candidate_id": side.candidate_id,
                "scope_note": side.scope_note,
                **masked(caller, labels, side.text),
                "evidence": [
                    {
                        "episode_id": e.pk,
                        "locator": e.locator,
                        "source_sha256": e.source.sha256 if e.source else None,
                    }
                    for e in evidence
                ],
            }
        )
    return {
        "id": conflict.pk,
        "status": conflict.status,
        "kind": conflict.kind,
        # The subject is words taken from the sides, so it is withheld with any of them.
        "subject": None if any(s["withheld"] for s in sides) else conflict.subject,
        "detected_at": conflict.detected_at,
        "owner": conflict.owner.get_username() if conflict.owner else None,
        "due": conflict.due,
        "resolution": conflict.resolution or None,
        "accepted_claim_id": conflict.accepted_claim_id,
        "accepted_candidate_id": conflict.accepted_candidate_id,
        "reopens": conflict.reopens_id,
        "sides": sides,
    }


def _conflicts(caller: Caller):
    return (
        Conflict.objects.filter(project=caller.project)
        .select_related("owner")
        .prefetch_related(
            Prefetch("sides__evidence", queryset=Episode.objects.select_related("source")),
            Prefetch("sides__claim__evidence", queryset=Episode.objects.select_related("source")),
            "sides__candidate",
            "sides__claim",
        )
    )


def conflict_list(caller: Caller, *, show: str, limit: int, offset: int) -> dict[str, Any]:
    qs = _conflicts(caller)
    if show == "open":
        qs = qs.unresolved()
    elif show == "resolved":
        qs = qs.filter(status=Conflict.Status.RESOLVED)
    elif show != "all":
        raise InputError("show", f"unknown value {show!r}; one of {', '.join(CONFLICT_SHOW)}")
    return paged(
        qs,
        ("detected_at", "id"),
        limit=limit,
        offset=offset,
        out=lambda c: _conflict_out(caller, c),
    )


def open_questions(caller: Caller, *, limit: int, offset: int) -> dict[str, Any]:
    """What stays open: unresolved conflicts, escalated ones first (they have an owner)."""
    qs = _conflicts(caller).unresolved()
    order = ("status", "due", "detected_at", "id")
    return paged(qs, order, limit=limit, offset=offset, out=lambda c: _conflict_out(caller, c))
