"""What an export may say: the reviewed layer as one audience may read it.

Everything the documents are built from is read here, once, into plain frozen values, and
every withholding decision is made here: approved claims on the pages' current revisions,
the open questions of unresolved conflicts, and the episodes a caller scoped in. Raw
sources and chat turns are never read. What an audience may not see is left out and only
counted (by reason), so the manifest can say what was withheld without saying what it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.urls import reverse

from dreaming.models import Conflict
from llmwiki.access import HELD_STATUSES, Labels
from llmwiki.errors import InputError
from llmwiki.models import (
    SECURITY_RANK,
    ChangelogEntry,
    Claim,
    Episode,
    Page,
    PageKey,
    Project,
    SecurityClass,
)
from llmwiki.wiki import GENERAL_SECTION as GENERAL

# Before any reviewed change existed: the earliest time a zip entry can carry.
EPOCH = datetime(1980, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Evidence:
    episode_id: int
    source_id: int | None
    source_sha256: str
    path: str
    locator: Any
    retrieved_at: str


@dataclass(frozen=True)
class Item:
    """One approved claim as exported, with what it rests on."""

    claim_id: int
    page: str
    section: str
    text: str
    revision_id: int
    evidence: tuple[Evidence, ...]
    provenance: str  # the claim's "why is this here?" page


@dataclass(frozen=True)
class PageState:
    key: str
    title: str
    revision_id: int
    revision: int
    content_hash: str
    items: tuple[Item, ...]


@dataclass(frozen=True)
class Question:
    conflict_id: int
    subject: str
    status: str
    sides: tuple[str, ...]
    claim_ids: tuple[int, ...]
    evidence_ids: tuple[int, ...]
    withheld_sides: int
    provenance: str  # the conflict's card, with both sides and their evidence


@dataclass(frozen=True)
class ContextEpisode:
    episode_id: int
    kind: str
    occurred_at: str
    text: str
    evidence: Evidence
    provenance: str  # the episode's page


@dataclass
class State:
    project_slug: str
    project_name: str
    description: str
    audience: str
    as_of: datetime
    pages: dict[str, PageState]
    questions: list[Question]
    changelog: list[tuple[str, str, str]]  # (at, actor, summary)
    episodes: list[ContextEpisode]
    withheld: Counter = field(default_factory=Counter)

    def items(self, *keys: str) -> list[Item]:
        return [item for key in keys if key in self.pages for item in self.pages[key].items]

    @property
    def claim_ids(self) -> list[int]:
        return sorted(i.claim_id for p in self.pages.values() for i in p.items)

    @property
    def revision_ids(self) -> list[int]:
        return sorted(p.revision_id for p in self.pages.values())


def _link(view: str, *args: Any) -> str:
    """A "why?" link: absolute under LLMWIKI_PUBLIC_URL when set, else the app's path."""
    return settings.PUBLIC_URL + reverse(view, args=args)


def withheld_reason(labels: Labels, audience: str) -> str:
    """Why material with `labels` may not go to `audience`, or "" when it may."""
    if labels.status in HELD_STATUSES or labels.status == Episode.Status.ERASED:
        return f"{labels.status}"
    if SECURITY_RANK[audience] < SECURITY_RANK[SecurityClass.RESTRICTED]:
        if any(f.startswith("secret:") for f in labels.flags):
            return "secret-flagged"
        if any(f.startswith("pii:") for f in labels.flags):
            return "pii-flagged"
    if SECURITY_RANK.get(labels.security_class, 2) > SECURITY_RANK[audience]:
        return f"{labels.security_class}-class"
    return ""


def _evidence(episode: Episode, audience: str) -> Evidence:
    source = episode.source
    # Paths and locators name files and places in them; below internal only hashes go out.
    shown = SECURITY_RANK[audience] >= SECURITY_RANK[SecurityClass.INTERNAL]
    return Evidence(
        episode_id=episode.pk,
        source_id=source.pk if source else None,
        source_sha256=source.sha256 if source else "",
        path=source.path if source and shown else "",
        locator=episode.locator if shown else {},
        retrieved_at=_iso(source.retrieved_at) if source else "",
    )


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def select_state(project: Project, audience: str, episode_ids: Iterable[int] = ()) -> State:
    """Read what `audience` may be told about `project`'s reviewed layer (a few queries)."""
    if audience not in SECURITY_RANK:
        raise InputError("audience", f"unknown audience {audience!r} (public|internal|restricted)")
    withheld: Counter = Counter()
    pages = list(
        Page.objects.filter(project=project, current_revision__isnull=False)
        .select_related("current_revision")
        .order_by("key")
    )
    wanted = {
        pk for p in pages if p.key != PageKey.OPEN_QUESTIONS for pk in p.current_revision.claim_ids
    }
    claims = (
        Claim.objects.filter(pk__in=wanted, status=Claim.Status.APPROVED)
        .prefetch_related("evidence__source")
        .order_by("id")
    )
    by_page: dict[int, list[Claim]] = {}
    # As the wiki compiles a page: by section, then by id.
    for claim in sorted(claims, key=lambda c: ((c.section or GENERAL).lower(), c.pk)):
        by_page.setdefault(claim.page_id, []).append(claim)
    moments = [p.current_revision.created_at for p in pages]
    states: dict[str, PageState] = {}
    for page in pages:
        revision = page.current_revision
        items = []
        for claim in by_page.get(page.pk, []):
            episodes = sorted(claim.evidence.all(), key=lambda e: e.pk)
            reason = withheld_reason(Labels.of(claim), audience)
            if reason:
                withheld[f"claim:{reason}"] += 1
                continue
            items.append(
                Item(
                    claim_id=claim.pk,
                    page=page.key,
                    section=claim.section,
                    text=claim.text,
                    revision_id=revision.pk,
                    evidence=tuple(_evidence(e, audience) for e in episodes),
                    provenance=_link("reviews:claim", project.slug, claim.pk),
                )
            )
        states[page.key] = PageState(
            key=page.key,
            title=page.title,
            revision_id=revision.pk,
            revision=revision.number,
            content_hash=revision.content_hash,
            items=tuple(items),
        )
    changelog = list(ChangelogEntry.objects.filter(project=project).order_by("at", "id"))
    moments += [entry.at for entry in changelog[-1:]]
    context = _context(project, audience, episode_ids, withheld)
    return State(
        project_slug=project.slug,
        project_name=project.name,
        description=project.description,
        audience=audience,
        as_of=max(moments, default=EPOCH),
        pages=states,
        questions=_questions(project, audience, withheld),
        changelog=[(_iso(e.at), e.actor, e.summary) for e in changelog],
        episodes=context,
        withheld=withheld,
    )


def _questions(project: Project, audience: str, withheld: Counter) -> list[Question]:
    questions = []
    for conflict in unresolved_conflicts([project.pk]):
        question = as_question(conflict, project, audience, withheld)
        if question is not None:
            questions.append(question)
    return questions


def unresolved_conflicts(project_ids: Iterable[int]):
    """The conflicts behind the open questions, with what `as_question` reads of them."""
    return (
        Conflict.objects.filter(project__in=project_ids)
        .unresolved()
        .prefetch_related("sides__evidence", "sides__candidate", "sides__claim")
        .order_by("detected_at", "id")
    )


def as_question(
    conflict: Conflict, project: Project, audience: str, withheld: Counter
) -> Question | None:
    """The open question `audience` may be told of `conflict`; None when every side is
    withheld from it (counted in `withheld`, as each withheld side is)."""
    sides, hidden, claim_ids, evidence_ids = [], 0, [], []
    for side in conflict.sides.all():
        episodes = list(side.evidence.all())
        labels = Labels.strictest([side.candidate, side.claim, *episodes])
        reason = withheld_reason(labels, audience)
        if reason:
            withheld[f"open-question-side:{reason}"] += 1
            hidden += 1
            continue
        sides.append(" ".join(side.text.split()))
        if side.claim_id:
            claim_ids.append(side.claim_id)
        evidence_ids += [e.pk for e in episodes]
    if not sides:
        withheld["open-question:all-sides-withheld"] += 1
        return None
    return Question(
        conflict_id=conflict.pk,
        subject=conflict.subject if not hidden else f"Conflict {conflict.pk}",
        status=conflict.status,
        sides=tuple(sides),
        claim_ids=tuple(sorted(claim_ids)),
        evidence_ids=tuple(sorted(evidence_ids)),
        withheld_sides=hidden,
        provenance=_link("reviews:conflicts", project.slug) + f"?conflict={conflict.pk}",
    )


def _context(
    project: Project, audience: str, episode_ids: Iterable[int], withheld: Counter
) -> list[ContextEpisode]:
    """The episodes the caller scoped in, minus raw chat and what the audience may not read."""
    wanted = sorted(set(episode_ids))
    if not wanted:
        return []
    episodes = list(
        Episode.objects.filter(project=project, pk__in=wanted)
        .select_related("source")
        .order_by("id")
    )
    missing = sorted(set(wanted) - {e.pk for e in episodes})
    if missing:
        shown = ", ".join(f"#{pk}" for pk in missing[:5])
        raise InputError("episodes", f"not episodes of project {project.slug}: {shown}")
    out = []
    for episode in episodes:
        if episode.kind == Episode.Kind.CHAT_TURN:
            withheld["episode:raw-chat"] += 1  # exports never carry raw chat
            continue
        reason = withheld_reason(Labels.of(episode), audience)
        if reason:
            withheld[f"episode:{reason}"] += 1
            continue
        out.append(
            ContextEpisode(
                episode_id=episode.pk,
                kind=episode.kind,
                occurred_at=_iso(episode.occurred_at),
                text=" ".join(episode.content.split()),
                evidence=_evidence(episode, audience),
                provenance=_link("episode", project.slug, episode.pk),
            )
        )
    return out
