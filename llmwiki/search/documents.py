"""What the search index holds: one `Doc` per approved claim, page section and live episode.

Docs are built from the database only; both backends index the same docs, and
`--check` compares these against what a backend holds by each doc's digest.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import OuterRef, Subquery

from llmwiki.access import Labels, highest, is_sensitive
from llmwiki.models import AuditEvent, Claim, Episode, Page, PageRevision, Project

CLAIM, PAGE, EPISODE = "claim", "page", "episode"
LAYERS = (CLAIM, PAGE, EPISODE)
# Text of the turn before kept with an episode, so a question whose words are split
# over a question and its answer still finds the answer; cut so a long note does not flood.
CONTEXT_CHARS = 400


@dataclass(frozen=True)
class Doc:
    key: str  # "claim:12", "episode:5", "page:3:2" (page 3, its second section)
    project_id: int
    layer: str
    text: str  # what is matched: the item's words, with who said it and when for episodes
    context: str  # an episode's turn before, a section's title: matched at a lower weight
    sensitive: bool
    trust: str
    security_class: str
    page_target: str
    occurred_at: datetime | None

    @property
    def digest(self) -> str:
        labels = f"{self.sensitive}|{self.trust}|{self.security_class}|{self.page_target}"
        body = f"{labels}\x00{self.text}\x00{self.context}"
        return hashlib.sha256(body.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Watermark:
    """The last episode id, audit event id and page revision id folded into the index."""

    episode_id: int = 0
    audit_id: int = 0
    revision_id: int = 0


def head(project_id: int) -> Watermark:
    """Where the project's committed material stands now: three indexed lookups of the
    latest id in one query (every retrieval asks, and a round trip costs more than one)."""
    with connection.cursor() as cursor:
        cursor.execute(project_row_sql(connection.vendor, head_columns), [project_id])
        row = cursor.fetchone()
    return Watermark(*(n or 0 for n in row)) if row else Watermark()


@functools.cache
def project_row_sql(vendor: str, columns: Callable[[], Iterable[Any]]) -> str:
    """The SQL reading `columns()` of one project (its one parameter: the project id), built
    once per database: building a query of subqueries through the ORM takes several times
    what the database takes to answer it, and every retrieval asks."""
    rows = Project.objects.filter(pk=0).order_by().values_list(*columns())
    sql, params = rows.query.sql_with_params()
    assert list(params) == [0], params  # the project id is the one value
    return sql


def head_columns() -> tuple[Subquery, Subquery, Subquery]:
    """The latest episode, audit event and page revision ids, as columns of a query of
    projects (a backend keeping its watermark in the database reads both at once)."""

    def last(rows):
        return Subquery(rows.order_by("-id").values("id")[:1])

    return (
        last(Episode.objects.filter(project=OuterRef("pk"))),
        last(AuditEvent.objects.filter(project=OuterRef("pk"))),
        last(PageRevision.objects.filter(page__project=OuterRef("pk"))),
    )


def episode_line(actor: str, occurred_at: datetime, content: str) -> str:
    """Who said it and when, as a reader sees it ("user:Maya" reads as "Maya")."""
    name = actor.split(":", 1)[-1]
    return f"{name} ({occurred_at:%Y-%m-%d}): {content}"


def _live_episodes(project_id: int):
    return Episode.objects.filter(project=project_id, status=Episode.Status.ACTIVE).exclude(
        kind__in=Episode.BOOKKEEPING_KINDS
    )


def episode_docs(project_id: int, ids: Iterable[int] | None = None) -> Iterator[Doc]:
    """Docs for the project's live episodes (all of them, or those among `ids`).

    Each carries the turn before it in its source as context: a reply's words leave out
    what the turn it answers said ("Yes, the blue one" to "Which one did you pick?").
    The turn after is left out on purpose. It is a document of its own, found by its own
    words; as context it would also lift this turn for every word of the reply, so one
    strong match would fill the top of a list with its neighbours, and a question that
    follows a turn would lift it for words it does not answer (on the LoCoMo dev split,
    multi-hop all-evidence@5 0.135 -> 0.162, evidence hit@5 0.747 -> 0.739). It also
    keeps a doc fixed once written: a turn appended later never changes an older doc.
    """
    rows = _live_episodes(project_id)
    if ids is not None:
        ids = sorted(set(ids))
        if not ids:
            return
        rows = rows.filter(id__gte=ids[0], id__lte=ids[-1])
        wanted = set(ids)
    fields = ("id", "source_id", "actor", "occurred_at", "content", "trust", "security_class")
    rows = rows.order_by("id").values_list(*fields, "flags")
    partial = ids is not None
    last: dict[int, str] = {}  # each source's latest content seen so far
    for row in rows.iterator(chunk_size=5000):
        pk, source, actor, at, content, trust, security, flags = row
        if source is None:
            before = ""
        elif source in last:
            before = last[source]
        else:
            before = preceding(project_id, source, pk) if partial else ""
        if source is not None:
            last[source] = content
        if partial and pk not in wanted:
            continue
        yield Doc(
            key=f"{EPISODE}:{pk}",
            project_id=project_id,
            layer=EPISODE,
            text=episode_line(actor, at, content),
            context=before[:CONTEXT_CHARS],
            sensitive=is_sensitive(security, flags or ()),
            trust=trust,
            security_class=security,
            page_target="",
            occurred_at=at,
        )


def preceding(project_id: int, source_id: int, pk: int) -> str:
    """The content of the live episode just before `pk` in its source ("" for none)."""
    rows = _live_episodes(project_id).filter(source=source_id, id__lt=pk).order_by("-id")
    return rows.values_list("content", flat=True).first() or ""


def successors(project_id: int, episode_ids: Iterable[int]) -> set[int]:
    """The live episode just after each of `episode_ids` in its source: its context is
    the turn before it, which changes when one of these is released or discarded."""
    rows = Episode.objects.filter(project=project_id, pk__in=list(episode_ids)[:5000])
    out = set()
    for pk, source in rows.exclude(source=None).values_list("id", "source_id"):
        after = (
            _live_episodes(project_id)
            .filter(source=source, id__gt=pk)
            .order_by("id")
            .values_list("id", flat=True)
            .first()
        )
        if after is not None:
            out.add(after)
    return out


def claim_docs(project_id: int, ids: Iterable[int] | None = None) -> Iterator[Doc]:
    rows = Claim.objects.filter(project=project_id, status=Claim.Status.APPROVED)
    if ids is not None:
        rows = rows.filter(pk__in=list(ids))
    for pk, text, section, page_key, page_title, security, flags in rows.values_list(
        "id", "text", "section", "page__key", "page__title", "security_class", "flags"
    ).iterator(chunk_size=2000):
        yield Doc(
            key=f"{CLAIM}:{pk}",
            project_id=project_id,
            layer=CLAIM,
            text=text,
            context=f"{page_title} {section}".strip(),
            sensitive=is_sensitive(security, flags or ()),
            trust=Episode.Trust.APPROVED,
            security_class=security,
            page_target=page_key,
            occurred_at=None,
        )


def split_sections(markdown: str) -> list[str]:
    """A compiled page cut at its `## ` headings; the title block is not a section."""
    sections: list[list[str]] = []
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return ["\n".join(lines).strip() for lines in sections]


def page_docs(project_id: int, page_ids: Iterable[int] | None = None) -> Iterator[Doc]:
    """One doc per section of each page's current revision, as restricted as its claims."""
    pages = Page.objects.filter(project=project_id, current_revision__isnull=False)
    if page_ids is not None:
        pages = pages.filter(pk__in=list(page_ids))
    pages = list(pages.values_list("id", "key", "title", "current_revision__markdown"))
    labels = claim_labels(Claim.objects.filter(project=project_id, page__in=[p[0] for p in pages]))
    for page_id, key, title, markdown in pages:
        for n, section in enumerate(split_sections(markdown), start=1):
            section_labels = labels_of_section(section, labels)
            yield Doc(
                key=f"{PAGE}:{page_id}:{n}",
                project_id=project_id,
                layer=PAGE,
                text=section,
                context=title,
                sensitive=is_sensitive(section_labels.security_class, section_labels.flags),
                trust=Episode.Trust.APPROVED,
                security_class=section_labels.security_class,
                page_target=key,
                occurred_at=None,
            )


def claim_ids_in(section: str) -> set[int]:
    """The claim ids a compiled section cites (`_(claim 12; evidence #3)_`)."""
    out = set()
    for part in section.split("_(claim ")[1:]:
        digits = part.split(")", 1)[0].split(";", 1)[0]
        if digits.isdigit():
            out.add(int(digits))
    return out


def claim_labels(claims) -> dict[int, Labels]:
    """{claim id: its labels} for a queryset of claims (one query)."""
    return {
        pk: Labels(security, tuple(flags or ()))
        for pk, security, flags in claims.values_list("id", "security_class", "flags")
    }


def labels_of_section(section: str, labels: dict[int, Labels]) -> Labels:
    """A page section carries the highest class of the claims it cites (internal if none)."""
    cited = [labels[pk] for pk in claim_ids_in(section) if pk in labels]
    return highest(cited) if cited else Labels()


def all_docs(project_id: int) -> Iterator[Doc]:
    yield from claim_docs(project_id)
    yield from page_docs(project_id)
    yield from episode_docs(project_id)


@dataclass
class Delta:
    """What changed since a watermark: docs to (re)write and keys to drop."""

    upserts: list[Doc]
    deletes: set[str]
    pages: set[int]  # pages whose sections are replaced wholesale
    to: Watermark


def changes_since(project_id: int, mark: Watermark, now: Watermark) -> Delta:
    """The docs that events between `mark` and `now` add, change or remove, among the
    episodes up to `mark` and every claim and page. Episodes committed since `mark` are
    not here: the fold writes them a chunk at a time (`episode_docs`)."""
    older = Episode.objects.filter(project=project_id, id__lte=mark.episode_id)
    episode_ids: set[int] = set()
    claim_ids: set[int] = set()
    source_ids: set[int] = set()
    changed: set[int] = set()  # episodes released or discarded from quarantine
    events = AuditEvent.objects.filter(
        project=project_id, id__gt=mark.audit_id, id__lte=now.audit_id
    ).values_list("object_type", "object_id")
    for object_type, object_id in events:
        if not object_id.isdigit():
            continue
        if object_type == "Claim":
            claim_ids.add(int(object_id))
        elif object_type == "Episode":
            changed.add(int(object_id))
        elif object_type == "Source":
            source_ids.add(int(object_id))
    if source_ids:
        # Erasure and supersession change episodes of a source under the source's event.
        episode_ids |= set(older.filter(source__in=source_ids).values_list("id", flat=True))
        episode_ids |= set(
            older.filter(superseded_by_source__in=source_ids).values_list("id", flat=True)
        )
    pages = set(
        PageRevision.objects.filter(
            page__project=project_id, id__gt=mark.revision_id, id__lte=now.revision_id
        ).values_list("page_id", flat=True)
    )
    # New episodes change no older doc; a released one changes its successor's context.
    changed = {i for i in changed if i <= mark.episode_id}
    episode_ids |= changed | successors(project_id, changed)
    upserts = list(episode_docs(project_id, episode_ids))
    upserts += claim_docs(project_id, claim_ids)
    upserts += page_docs(project_id, pages)
    live = {d.key for d in upserts}
    gone = {f"{EPISODE}:{i}" for i in episode_ids} | {f"{CLAIM}:{i}" for i in claim_ids}
    return Delta(upserts=upserts, deletes=gone - live, pages=pages, to=now)
