"""The round trip: an imported handoff bundle becomes a project's reviewed baseline.

Ingesting a bundle (the `bundle` importer) only records its page sections as episodes; a
maintainer then accepts them. Each claim line of an exported page (`- text ([why?](…))`)
becomes an approved claim on the same page and section, citing the section's episode, so
its "why is this here?" panel points at the bundle file and its sha256. Accepting twice
adds nothing: a line whose text the page already holds as an approved claim is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from llmwiki.access import Do, can
from llmwiki.errors import Refused
from llmwiki.models import AuditEvent, Claim, Episode, Page, PageRevision, Project
from llmwiki.vocabulary import PAGE_TITLES
from llmwiki.wiki import GENERAL_SECTION, claim_create, page_recompile, record_change
from reviews.exports.documents import BUNDLE_PAGES

# The pages whose lines are claims; OPEN_QUESTIONS stays questions (its sides were never
# approved), and README/INDEX/CHANGELOG describe the bundle, not the project.
CLAIM_PAGES = tuple(key for key in BUNDLE_PAGES if key != "OPEN_QUESTIONS")
_CLAIM_LINE = re.compile(r"^- (?P<text>\S.*?) \(\[why\?\]\([^)\s]*\)\)$")


@dataclass
class BaselineResult:
    claims: list[Claim] = field(default_factory=list)
    revisions: list[PageRevision] = field(default_factory=list)
    skipped: int = 0  # lines the pages already hold


def pending_bundle_episodes(project: Project, source_ids: list[int] | None = None) -> list[Episode]:
    """The imported bundle page sections with claim lines not yet accepted, oldest first."""
    episodes = Episode.objects.filter(
        project=project,
        source__importer="bundle",
        status=Episode.Status.ACTIVE,
        claims__isnull=True,  # an accepted section is cited by the claims it became
    ).select_related("source")
    if source_ids is not None:
        episodes = episodes.filter(source__in=source_ids)
    keys = {f"page:{key}" for key in CLAIM_PAGES}
    return [
        e
        for e in episodes.order_by("id")
        if keys.intersection(e.tags) and any(_claim_lines(e.content))
    ]


def _claim_lines(content: str) -> list[str]:
    return [m.group("text") for line in content.splitlines() if (m := _CLAIM_LINE.match(line))]


def _page_key(episode: Episode) -> str:
    return next(t.removeprefix("page:") for t in episode.tags if t.startswith("page:"))


def _section(episode: Episode) -> str:
    label = (episode.locator or {}).get("section", "")
    section = label.split(" > ", 1)[1].strip() if " > " in label else ""
    return "" if section == GENERAL_SECTION else section  # the exporter's name for none


def bundle_accept(
    *, project: Project, actor: AbstractBaseUser, source_ids: list[int] | None = None
) -> BaselineResult:
    """Approve the claim lines of the project's imported bundle(s) as its reviewed baseline.

    Maintainers only: it approves many claims at once, restricted ones included. One
    transaction: pages, MANIFEST, CHANGELOG and audit change together or not at all.
    """
    if not can(actor, project, Do.ACCEPT_BASELINE):
        raise Refused("accepting a bundle as the reviewed baseline needs the maintainer role", 403)
    result = BaselineResult()
    with transaction.atomic():
        episodes = pending_bundle_episodes(project, source_ids)
        if not episodes:
            raise Refused("no imported bundle pages with claims are waiting to be accepted", 409)
        touched: dict[int, Page] = {}
        for episode in episodes:
            key = _page_key(episode)
            page, _ = Page.objects.get_or_create(
                project=project, key=key, defaults={"title": PAGE_TITLES[key]}
            )
            held = set(page.claims.approved().values_list("text", flat=True))
            for text in _claim_lines(episode.content):
                if text in held:
                    result.skipped += 1
                    continue
                held.add(text)
                result.claims.append(
                    claim_create(
                        page=page,
                        text=text,
                        evidence=[episode.pk],
                        reviewer=actor,
                        section=_section(episode),
                        security_class=episode.security_class,
                        note=f"bundle baseline from {episode.source.path}",
                    )
                )
                touched[page.pk] = page
        if not result.claims:
            raise Refused("every claim line of the imported bundle is already on its page", 409)
        for page in sorted(touched.values(), key=lambda p: p.key):
            revision = page_recompile(page=page, actor=actor, reason="accepted bundle baseline")
            if revision is not None:
                result.revisions.append(revision)
                record_change(
                    project=project,
                    actor=actor,
                    summary=f"{page.key}: accepted bundle baseline",
                    revision=revision,
                )
        _audit(project, actor, episodes, result)
    return result


def _audit(project: Project, actor: Any, episodes: list[Episode], result: BaselineResult) -> None:
    AuditEvent.record(
        actor=actor,
        action="bundle.accept",
        obj=project,
        project=project,
        after={
            "sources": sorted({e.source_id for e in episodes}),
            "claims": [c.pk for c in result.claims],
            "revisions": [r.pk for r in result.revisions],
            "skipped": result.skipped,
        },
    )
