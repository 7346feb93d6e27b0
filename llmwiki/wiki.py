"""The reviewed wiki's write path: claims, compiled pages, revisions, rollback, MANIFEST.

Revisions are immutable and deterministic: the same claims give the same markdown bytes,
so a recompile that changes nothing publishes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.urls import reverse

from llmwiki.access import Do, Labels, can, inherited, withheld_by_id
from llmwiki.errors import Refused
from llmwiki.models import (
    AuditEvent,
    ChangelogEntry,
    Claim,
    Episode,
    ManifestVersion,
    Page,
    PageRevision,
    Project,
    SecurityClass,
    actor_label,
    sha256_hex,
)
from llmwiki.render import Linker
from llmwiki.search.documents import claim_ids_in

GENERAL_SECTION = "General"


@transaction.atomic
def claim_create(
    *,
    page: Page,
    text: str,
    evidence: Iterable[int],
    reviewer: Any,
    supersedes: Claim | None = None,
    section: str | None = None,
    subject_key: str | None = None,
    security_class: str | None = None,
    flags: Iterable[str] = (),
    note: str = "",
) -> Claim:
    """Create an approved claim citing `evidence` (episode ids); the one way a claim is born.

    With `supersedes`, the old claim moves to superseded, and the new one takes its place:
    its section, subject and class unless given, and the next version number. The page is
    not recompiled here: the caller publishes once after all of its changes.

    The claim is restricted when its evidence is, and keeps its evidence's PII and secret
    flags (`access.inherited`): clearance then withholds it wherever it is shown.
    """
    episodes = list(
        Episode.objects.filter(pk__in=set(evidence)).select_related("source").order_by("id")
    )
    old = supersedes
    given = Labels(
        security_class or (old.security_class if old else SecurityClass.INTERNAL),
        tuple(flags) or (tuple(old.flags) if old else ()),
    )
    labels = inherited(given, episodes)
    claim = Claim.objects.create(
        project_id=page.project_id,
        page=page,
        section=section if section is not None else (old.section if old else ""),
        text=text,
        version=old.version + 1 if old else 1,
        supersedes=old,
        source_refs=[
            {
                "episode_id": e.pk,
                "source_id": e.source_id,
                "sha256": e.source.sha256,
                "path": e.source.path,
                "retrieved_at": e.source.retrieved_at.isoformat(),
                "locator": e.locator,
            }
            for e in episodes
            if e.source is not None
        ],
        reviewer=reviewer,
        review_by=date.today() + timedelta(days=page.review_cadence_days),
        subject_key=(subject_key if subject_key is not None else (old.subject_key if old else ""))[
            :200
        ],
        security_class=labels.security_class,
        flags=list(labels.flags),
        held_from=min((e.occurred_at for e in episodes), default=None),
    )
    claim.evidence.set(episodes)
    AuditEvent.record(
        actor=reviewer,
        action="claim.approve",
        obj=claim,
        after={
            "text_sha256": sha256_hex(text),
            "page": page.key,
            "supersedes": old.pk if old else None,
        },
        note=note,
    )
    if old is not None:
        old.transition(
            Claim.Status.SUPERSEDED,
            actor=reviewer,
            note=note,
            after={"superseded_by": claim.pk},
            held_until=claim.held_from,
        )
    return claim


def claim_line(claim: Claim | PendingClaim, evidence_ids: Iterable[int] = ()) -> str:
    """One bullet: the claim and what it rests on, so a revision cites its evidence."""
    text = " ".join(claim.text.split())
    cited = ", ".join(f"#{i}" for i in sorted(evidence_ids))
    label = f"claim {claim.pk}" if isinstance(claim, Claim) else "new claim"
    return f"- {text} _({label}" + (f"; evidence {cited})_" if cited else ")_")


@dataclass(frozen=True)
class PendingClaim:
    """A claim not yet approved, shown where approving would put it (a preview)."""

    text: str
    section: str
    evidence: tuple[int, ...] = ()


def citation_urls(project_slug: str) -> Linker:
    """Where the claim and evidence ids of a page's citations link on screen."""
    names = {"claim": "reviews:claim", "episode": "episode"}
    return lambda kind, pk: reverse(names[kind], args=[project_slug, pk])


@dataclass(frozen=True)
class PagePart:
    """What an app above llmwiki compiles into one of its pages, ahead of the claims.

    OPEN_QUESTIONS lists the conflicts that stay open (reviews registers them): every
    compile of the page, whatever triggered it, puts them beside its approved claims.
    """

    lines: list[str]
    claim_ids: list[int]
    empty: str  # what the page says when it has neither these lines nor claims


_page_parts: dict[str, Callable[[Page], PagePart]] = {}


def register_page_part(key: str, compile_part: Callable[[Page], PagePart]) -> None:
    _page_parts[key] = compile_part


def page_part(page: Page) -> PagePart | None:
    compile_part = _page_parts.get(page.key)
    return compile_part(page) if compile_part else None


def compile_claims_page(
    page: Page,
    claims: Iterable[Claim],
    evidence: dict[int, list[int]] | None = None,
    *,
    extra: PendingClaim | None = None,
    part: PagePart | None = None,
) -> str:
    """Markdown for a page: its title, its registered part, then one section per claim
    section, claims by id.

    `extra` is previewed as the newest claim: last in its section, as approving puts it.
    `part` is the page's registered part when the caller compiled it already.
    """
    part = part or page_part(page)
    evidence = evidence or {}
    entries = [(c, evidence.get(c.pk, ())) for c in claims]
    if extra is not None:
        entries.append((extra, extra.evidence))
    newest = float("inf")
    by_section: dict[str, list[str]] = {}
    for claim, cited in sorted(
        entries,
        key=lambda e: (
            (e[0].section or GENERAL_SECTION).lower(),
            e[0].pk if isinstance(e[0], Claim) else newest,
        ),
    ):
        by_section.setdefault(claim.section or GENERAL_SECTION, []).append(claim_line(claim, cited))
    lines = [f"# {page.title}", "", *(part.lines if part else [])]
    if not by_section and not (part and part.lines):
        lines += [part.empty if part else "_No reviewed claims yet._", ""]
    for section, items in by_section.items():
        lines += [f"## {section}", ""]
        lines += items
        lines.append("")
    return "\n".join(lines)


def section_block(markdown: str, section: str) -> list[str]:
    """The lines of one `## section` of a compiled page, heading included; [] if absent."""
    heading = f"## {section or GENERAL_SECTION}"
    lines = markdown.splitlines()
    if heading not in lines:
        return []
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


# The citation that ends a claim's line on a compiled page: `_(claim 12; evidence #3)_`.
_CITATION = re.compile(r"_\(claim (\d+)(?:;[^)]*)?\)_\s*$")


def withhold_claims(markdown: str, reasons: dict[int, str]) -> str:
    """`markdown` with the line of each claim in `reasons` replaced by why it is withheld."""
    if not reasons:
        return markdown
    lines = markdown.split("\n")
    for n, line in enumerate(lines):
        cited = _CITATION.search(line)
        if cited and (why := reasons.get(int(cited.group(1)))):
            lines[n] = f"- _{why}_ _(claim {cited.group(1)})_"
    return "\n".join(lines)


def readable_markdown(project: Project, *markdowns: str, role: str | None = None) -> list[str]:
    """Compiled pages as the caller may read them: each claim above their clearance is
    replaced by why (the page itself is shown to every member). One query for all of them."""
    ids = set().union(*(claim_ids_in(markdown) for markdown in markdowns))
    claims = Claim.objects.filter(project=project, pk__in=ids).only(
        "id", "security_class", "flags", "status"
    )
    reasons = withheld_by_id(project, claims, role)
    return [withhold_claims(markdown, reasons) for markdown in markdowns]


def claim_lines(markdown: str, claim_id: int) -> list[str]:
    """The line(s) of a compiled page that show claim `claim_id`."""
    marks = (f"_(claim {claim_id};", f"_(claim {claim_id})_")
    return [line for line in markdown.splitlines() if any(m in line for m in marks)]


def page_sections(page: Page) -> list[str]:
    """The section names the page's approved claims use, for a reviewer to choose from."""
    return sorted(
        set(page.claims.approved().exclude(section="").values_list("section", flat=True)),
        key=str.lower,
    )


def approved_claims(page: Page) -> tuple[list[Claim], dict[int, list[int]]]:
    """The page's approved claims and their evidence episode ids (two queries)."""
    claims = list(page.claims.approved().order_by("id"))
    evidence: dict[int, list[int]] = {c.pk: [] for c in claims}
    links = Claim.evidence.through.objects.filter(claim__in=claims).values_list(
        "claim_id", "episode_id"
    )
    for claim_id, episode_id in links:
        evidence[claim_id].append(episode_id)
    return claims, evidence


@transaction.atomic
def page_publish(
    *,
    page: Page,
    markdown: str,
    claim_ids: list[int],
    actor: Any,
    reason: str,
    locked: bool = False,
) -> PageRevision | None:
    """Add a revision unless the markdown is unchanged; returns the new revision or None.

    `locked` says `page` is the row the caller holds with select_for_update (and its
    current revision loaded), so it is not read again; it is kept up to date here.
    """
    if not locked:
        page = (
            Page.objects.select_for_update(of=("self",))
            .select_related("current_revision")
            .get(pk=page.pk)
        )
    current = page.current_revision
    if current is not None and current.markdown == markdown:
        return None
    number = (current.number if current else 0) + 1
    revision = PageRevision.objects.create(
        page=page,
        number=number,
        markdown=markdown,
        parent=current,
        author=actor if getattr(actor, "pk", None) else None,
        reason=reason[:500],
        claim_ids=sorted(claim_ids),
    )
    changes: dict[str, Any] = {"current_revision": revision}
    if getattr(actor, "pk", None):
        # A person published this revision, so the page was reviewed now.
        changes["last_reviewed_at"] = revision.created_at
    Page.objects.filter(pk=page.pk).update(**changes)
    for field, value in changes.items():
        setattr(page, field, value)
    AuditEvent.record(
        actor=actor,
        action="page.revision",
        obj=page,
        project=page.project,
        before={"revision": current.number if current else None},
        after={"revision": number, "sha256": revision.content_hash},
        note=reason[:500],
    )
    return revision


def compile_page(page: Page) -> tuple[str, list[int]]:
    """The page's markdown as it stands now, and the ids of the claims it cites."""
    claims, evidence = approved_claims(page)
    part = page_part(page)
    markdown = compile_claims_page(page, claims, evidence, part=part)
    return markdown, sorted({c.pk for c in claims} | set(part.claim_ids if part else ()))


def page_recompile(
    *, page: Page, actor: Any, reason: str, locked: bool = False
) -> PageRevision | None:
    markdown, claim_ids = compile_page(page)
    return page_publish(
        page=page,
        markdown=markdown,
        claim_ids=claim_ids,
        actor=actor,
        reason=reason,
        locked=locked,
    )


@transaction.atomic
def record_change(
    *,
    project: Project,
    actor: Any,
    summary: str,
    claim: Claim | None = None,
    revision: PageRevision | None = None,
) -> ManifestVersion:
    """Append a CHANGELOG line and a new MANIFEST version describing the reviewed layer."""
    ChangelogEntry.objects.create(
        project=project,
        actor=actor_label(actor),
        summary=summary[:500],
        claim=claim,
        revision=revision,
    )
    pages = Page.objects.filter(project=project).select_related("current_revision").order_by("key")
    content = {
        "project": project.slug,
        "pages": [
            {
                "key": p.key,
                "revision": p.current_revision.number if p.current_revision else None,
                "sha256": p.current_revision.content_hash if p.current_revision else None,
            }
            for p in pages
        ],
        "claims": sorted(
            Claim.objects.filter(project=project).approved().values_list("id", flat=True)
        ),
    }
    last = ManifestVersion.objects.filter(project=project).order_by("-number").first()
    return ManifestVersion.objects.create(
        project=project,
        number=(last.number if last else 0) + 1,
        content=content,
        sha256=sha256_hex(json.dumps(content, sort_keys=True)),
    )


# --- Wiki operations on claims and pages --------------------------------------------------


def claim_retract(*, claim: Claim, actor: AbstractBaseUser, reason: str) -> PageRevision | None:
    """Take an approved claim off its page (reviewers and above); the page republishes."""
    if not can(actor, claim.project, Do.REVIEW):
        raise Refused("retracting needs the reviewer role", 403)
    if not reason.strip():
        raise Refused("say why the claim is retracted", 400)
    with transaction.atomic():
        locked = Claim.objects.select_for_update().get(pk=claim.pk)
        if not locked.is_approved:
            raise Refused(f"claim {claim.pk} is {locked.status}, not approved", 409)
        locked.transition(Claim.Status.RETRACTED, actor=actor, note=reason)
        revision = page_recompile(
            page=locked.page, actor=actor, reason=f"retracted claim {claim.pk}: {reason}"
        )
        record_change(
            project=locked.project,
            actor=actor,
            summary=f"{locked.page.key}: retracted claim {claim.pk}",
            claim=locked,
            revision=revision,
        )
        return revision


def page_rollback(
    *, page: Page, revision: PageRevision, actor: AbstractBaseUser, reason: str
) -> PageRevision:
    """Publish `revision`'s text again as a new revision; claim states follow it.

    A rollback changes published memory, so it says why: the reason goes on the new
    revision, on each claim it moves and on the audit event.
    """
    if not can(actor, page.project, Do.ROLLBACK):
        raise Refused("rolling back a page needs the maintainer role", 403)
    reason = reason.strip()
    if not reason:
        raise Refused("say why the page is rolled back", 400)
    if revision.page_id != page.pk:
        raise Refused("that revision belongs to another page", 400)
    with transaction.atomic():
        page = Page.objects.select_for_update().get(pk=page.pk)
        current = page.current_revision
        if current is not None and current.pk == revision.pk:
            raise Refused(f"r{revision.number} is already the current revision", 409)
        target_ids = set(revision.claim_ids)
        current_ids = set(current.claim_ids) if current else set()
        why = f"rollback of {page.key} to r{revision.number}: {reason}"
        # A page may cite claims of other pages (OPEN_QUESTIONS quotes the claims a
        # conflict disputes); only the page's own claims follow its rollback.
        own = Claim.objects.filter(page=page)
        # A claim the target revision does not list leaves the page: rolled back, not
        # superseded, since nothing replaces it. An erased claim stays erased.
        for claim in own.filter(pk__in=current_ids - target_ids).approved():
            claim.transition(Claim.Status.ROLLED_BACK, actor=actor, note=why)
        restored = (
            own.filter(pk__in=target_ids)
            .exclude(status__in=[Claim.Status.APPROVED, Claim.Status.ERASED])
            .order_by("id")
        )
        for claim in restored:
            claim.transition(Claim.Status.APPROVED, actor=actor, note=why)
        markdown, claim_ids = revision.markdown, sorted(target_ids)
        if page.key in _page_parts:
            # The part compiled from elsewhere (open conflicts) is as it is now, not as
            # it was: the rollback moves the page's own claims only.
            markdown, claim_ids = compile_page(page)
        new = page_publish(
            page=page,
            markdown=markdown,
            claim_ids=claim_ids,
            actor=actor,
            reason=f"rollback to r{revision.number}: {reason}",
        )
        if new is None:  # same text as now, but the claim states still moved
            new = page.current_revision
        AuditEvent.record(
            actor=actor,
            action="page.rollback",
            obj=page,
            project=page.project,
            before={"revision": current.number if current else None},
            after={"revision": new.number, "restored_from": revision.number},
            note=reason,
        )
        record_change(
            project=page.project,
            actor=actor,
            summary=f"{page.key}: rolled back to r{revision.number}",
            revision=new,
        )
        return new
