"""The retrieval service: one ranked list across layers, packed within a token budget.

`retrieve(project, query, caller=...)` is the one entry point for the CLI, the JSON API
and the MCP server. Reviewed claims, page sections, open conflicts and episodes are scored
on one scale (the query's words weighted by their rarity among the project's episodes)
and ranked together; the layer and trust of an item lift its score by a fixed
factor (`BOOST`), so reviewed memory wins a near tie and never a much better match. Every
hit names its layer and carries its citations. Every retrieval writes a `RecallTrace`,
whose episode ids (a claim's hit counts for the episodes it was built from) feed the
relevance and query-diversity signals of the next dream sweep.

With `as_of`, it answers from the claims that were approved memory at that moment, the
conflicts open then and the episodes recorded by then.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from django.db.models import OuterRef, Subquery

from llmwiki.access import Labels
from llmwiki.models import Claim, Episode, Page, Project, RecallTrace
from llmwiki.search import disputes as dispute_source
from llmwiki.search import rerank
from llmwiki.search.backends import Backend, backend, terms
from llmwiki.search.documents import (
    CLAIM,
    EPISODE,
    PAGE,
    _live_episodes,
    claim_ids_in,
    claim_labels,
    labels_of_section,
    split_sections,
)
from llmwiki.search.index import index_fold
from llmwiki.search.pack import (
    CONFLICT,
    Caller,
    ContextPack,
    Hit,
    RetrievalError,
)
from llmwiki.security.raw import redact_secrets

MAX_LIMIT = 100
MAX_QUERY = 1000
# What an item's layer and trust multiply its score by, in full for an item holding every
# word of the question (in part for one holding some; see `_one_list`). Reviewed material
# (a claim, a page section compiled from claims) and an open conflict (which an agent must
# not miss) gain a fifth over a draft episode matching as well: they win a near tie
# (within a sixth), and a match that lacks one of two equally rare query words (about half
# the score) stays ahead of them. An episode marked reviewed or approved at import sits in between.
BOOST = {
    CLAIM: 1.2,
    PAGE: 1.2,
    CONFLICT: 1.2,
    Episode.Trust.DRAFT: 1.0,
    Episode.Trust.REVIEWED: 1.1,
    Episode.Trust.APPROVED: 1.2,
}
# How well a claim must match, against an episode it rests on, to stand in for it: within
# the near tie its boost settles on either side (the two backends' scores differ by about
# that much for the same pair). A claim matching much worse (half as well) may state
# another part of a long episode; the episode then keeps its own place.
STAND_IN = 1 / BOOST[CLAIM] ** 2
# What a claim's or an episode's hit reads of its row (and clearance of its labels).
CLAIM_FIELDS = (
    "id",
    "text",
    "section",
    "page__key",
    "approved_at",
    "retired_at",
    "held_from",
    "held_until",
    "security_class",
    "flags",
    "status",
)
EPISODE_FIELDS = (
    "id",
    "content",
    "trust",
    "occurred_at",
    "actor",
    "locator",
    "security_class",
    "flags",
    "status",
)
# Candidates read from each layer before the one list is cut to `limit`: enough that
# evidence dropped under its claim, and sections folded into their claims, leave a full list.
POOL = 3
# How much an episode gains when the query names its speaker (see `_rerank`).
SPEAKER_BOOST = 0.5
# How much an episode gains when the query names a date it falls on (see `_rerank`): as
# much as a named speaker.
DATE_BOOST = SPEAKER_BOOST
# An episode whose source fell silent this long before it resumes a session; resuming one
# lifts it as much as reviewed material is lifted: it wins a near tie (see `_rerank`).
# A source's first episode is not lifted: a note's first line is no news beside its rest.
SESSION_GAP = timedelta(hours=1)
OPENER_BOOST = BOOST[CLAIM]
# What an episode that only asks keeps of its score: behind a statement matching as well,
# ahead of one matching a fifth less (see `_rerank`).
QUESTION_WEIGHT = 0.8


def retrieve(
    project: Project,
    query: str,
    *,
    caller: Caller,
    limit: int = 10,
    budget: int | None = None,
    record: bool = True,
    as_of: datetime | None = None,
) -> ContextPack:
    """Search the project's memory for `query` as `caller` sees it.

    Returns up to `limit` hits, best first, whose lines fit `budget` tokens (None: no
    budget); with `as_of`, what the reviewed memory said at that moment. Raises
    `RetrievalError` on an empty query, a limit outside 1..100 or a budget below 1.
    Writes one `RecallTrace` unless `record` is False.
    """
    query = " ".join((query or "").split())
    if not query:
        raise RetrievalError("query", "the query is empty")
    if len(query) > MAX_QUERY:
        raise RetrievalError("query", f"the query is longer than {MAX_QUERY} characters")
    if not 1 <= limit <= MAX_LIMIT:
        raise RetrievalError("limit", f"limit must be between 1 and {MAX_LIMIT}")
    if budget is not None and budget < 1:
        raise RetrievalError("budget", "budget must be a positive number of tokens")
    started = time.perf_counter()
    using = backend()
    index_fold(project, using)
    idf = using.idf(project.pk, query)
    pool = POOL * limit
    if as_of is None:
        found = using.search(
            project.pk, CLAIM, query, sensitive=caller.sensitive, limit=pool, idf=idf
        )
        claims = _claims(project, found, caller)
        sections = _sections(project, using, query, caller, pool, idf)
    else:
        claims = _claims_on(project, using, query, idf, caller, as_of, pool)
        sections = []  # pages are compiled now; a past date reads its claims instead
    found = using.search(
        project.pk,
        EPISODE,
        query,
        sensitive=caller.sensitive,
        # Episodes recorded after the date are dropped below, so read further down.
        limit=pool if as_of is None else 3 * pool,
        idf=idf,
    )
    episodes = _episodes(project, found, caller, query, as_of)
    open_conflicts, scores = _disputes(project, using, query, idf, caller, claims, as_of, pool)
    conflicts = _conflicts(using, query, idf, caller, open_conflicts, pool, scores)
    _mark_disputed(claims, open_conflicts)
    hits = _one_list(claims, sections, conflicts, episodes, limit, query, idf)
    pack = _pack(query, hits, budget, as_of)
    if record:
        _trace(project, pack, caller, round((time.perf_counter() - started) * 1000))
    return pack


def _lift(hit: Hit) -> float:
    return BOOST.get(hit.kind, BOOST.get(hit.trust_label, 1.0))


def _one_list(
    claims, sections, conflicts, episodes, limit: int, query: str, idf: dict[str, float]
) -> list[Hit]:
    """Every layer in one order by score.

    A section whose claims are listed gives way to them: it becomes their context, and the
    best of them takes its score when higher. A claim matching at least STAND_IN as well
    as an episode it rests on is the reviewed statement of it and takes its place; an
    episode a claim or conflict above it cites is dropped, as it would repeat its evidence.
    Except where the episode says more: a claim is one wording of what its evidence says,
    and an episode holding every query word the claim holds and more answers more fully,
    so it keeps its place, just above the claim. Scores are then divided by the best one,
    so the list's top is 1.0 and the rest compare."""
    by_id = {h.id: h for h in claims}
    by_episode = {h.id: h for h in episodes}
    asked = set(terms(query))
    said: dict[tuple[str, int | str], set[str]] = {}

    def says(hit: Hit) -> set[str]:
        key = (hit.kind, hit.id)
        if key not in said:
            said[key] = asked.intersection(terms(hit.text))
        return said[key]

    def fuller(episode_id: int, hit: Hit) -> bool:
        return episode_id in by_episode and says(hit) < says(by_episode[episode_id])

    # A layer's or trust's lift counts for the share of the question the hit holds (its
    # words weighted by rarity): a claim answering the question wins a near tie; one that
    # only shares a word with it does not overtake the episode holding the rest.
    weight = {t: idf.get(t, 0.0) for t in asked}
    whole = sum(weight.values())
    for hit in [*claims, *sections, *conflicts, *episodes]:
        lift = _lift(hit)
        if lift != 1.0:
            share = sum(weight[t] for t in says(hit)) / whole if whole else 1.0
            hit.score *= 1 + (lift - 1) * share

    for claim in claims:
        near = [
            by_episode[e].score
            for e in claim.evidence_ids
            if e in by_episode
            and by_episode[e].score * STAND_IN <= claim.score
            and not fuller(e, claim)
        ]
        claim.score = max([claim.score, *near])
    kept_sections = []
    for section in sections:
        inside = [by_id[pk] for pk in section.claim_ids if pk in by_id]
        if not inside:
            kept_sections.append(section)
            continue
        for claim in inside:
            claim.context = claim.context or section.text
        best = max(inside, key=lambda h: h.score)
        best.score = max(best.score, section.score)
    ahead: set[int] = set()
    for claim in claims:
        for e in claim.evidence_ids:
            if fuller(e, claim):
                by_episode[e].score = max(by_episode[e].score, claim.score)
                ahead.add(e)
    ranked = sorted(
        [*claims, *kept_sections, *conflicts, *episodes],
        key=lambda h: (-h.score, not (h.kind == EPISODE and h.id in ahead)),
    )
    out: list[Hit] = []
    cited: set[int] = set()
    for hit in ranked:
        if hit.kind == EPISODE and hit.id in cited:
            continue
        out.append(hit)
        if hit.kind in (CLAIM, CONFLICT):
            cited.update(e for e in hit.evidence_ids if not fuller(e, hit))
        if len(out) == limit:
            break
    best = max((h.score for h in out), default=1.0) or 1.0
    for h in out:
        h.score /= best
    return out


def _claim_hit(claim: dict[str, Any], score: float, locators: list[dict[str, Any]]) -> Hit:
    return Hit(
        kind=CLAIM,
        id=claim["id"],
        text=claim["text"],
        score=score,
        trust_label=Episode.Trust.APPROVED,
        security_class=claim["security_class"],
        page_target=claim["page__key"],
        claim_ids=[claim["id"]],
        evidence_ids=[loc["episode_id"] for loc in locators],
        locators=locators,
        section=claim["section"],
        valid={
            "recorded_from": claim["approved_at"].isoformat(),
            "recorded_until": _iso(claim["retired_at"]),
            "held_from": _iso(claim["held_from"]),
            "held_until": _iso(claim["held_until"]),
        },
    )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _claims(project, found: list[tuple[str, float]], caller) -> list[Hit]:
    found = [(int(key.split(":", 1)[1]), score) for key, score in found]
    if not found:
        return []
    # The index may lag a transition by one fold; the database has the last word. The
    # claims and their evidence come in one query: a row per claim and episode it cites.
    rows = (
        Claim.objects.filter(
            project=project, pk__in=[pk for pk, _ in found], status=Claim.Status.APPROVED
        )
        .values(*CLAIM_FIELDS, "evidence__id", "evidence__locator")
        .order_by("id", "evidence__id")
    )
    claims: dict[int, dict[str, Any]] = {}
    evidence: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        episode_id, locator = row.pop("evidence__id"), row.pop("evidence__locator")
        claims.setdefault(row["id"], row)
        if episode_id is not None:
            evidence[row["id"]].append(_locator(episode_id, locator))
    out = []
    for pk, score in found:
        claim = claims.get(pk)
        if claim is None or not caller.may_read(Labels.of(claim)):
            continue
        out.append(_claim_hit(claim, score, evidence[pk]))
    return out


def _claims_on(project, using: Backend, query, idf, caller, as_of, pool) -> list[Hit]:
    """The claims approved at `as_of`, scored like indexed ones: the index holds only the
    current claims, so these are read from the database and scored on the spot."""
    claims = [
        c
        for c in Claim.objects.approved_on(project, as_of).values(*CLAIM_FIELDS).order_by("id")
        if caller.may_read(Labels.of(c))
    ]
    scores = using.score_texts(query, [c["text"] for c in claims], idf)
    best = sorted(
        ((s, c) for s, c in zip(scores, claims, strict=True) if s > 0), key=lambda x: -x[0]
    )[:pool]
    links = Claim.evidence.through.objects.filter(claim__in=[c["id"] for _, c in best])
    evidence: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for claim_id, episode_id, locator in links.order_by("episode_id").values_list(
        "claim_id", "episode_id", "episode__locator"
    ):
        evidence[claim_id].append(_locator(episode_id, locator))
    out = []
    for score, claim in best:
        hit = _claim_hit(claim, score, evidence[claim["id"]])
        hit.status = claim["status"]
        out.append(hit)
    return out


def _locator(episode_id: int, locator: dict[str, Any] | None) -> dict[str, Any]:
    return {"episode_id": episode_id, **(locator or {})}


def _sections(project, using: Backend, query, caller, limit, idf) -> list[Hit]:
    found = using.search(project.pk, PAGE, query, sensitive=caller.sensitive, limit=limit, idf=idf)
    if not found:
        return []
    pages = {
        pk: (key, markdown, revision)
        for pk, key, markdown, revision in Page.objects.filter(
            project=project,
            pk__in={int(k.split(":")[1]) for k, _ in found},
            current_revision__isnull=False,
        ).values_list("id", "key", "current_revision__markdown", "current_revision__number")
    }
    wanted: dict[str, str] = {}
    for key, _ in found:
        page_id, n = (int(x) for x in key.split(":")[1:])
        if page_id in pages:
            sections = split_sections(pages[page_id][1])
            if n <= len(sections):
                wanted[key] = sections[n - 1]
    labels = claim_labels(
        Claim.objects.filter(
            project=project, pk__in={pk for text in wanted.values() for pk in claim_ids_in(text)}
        )
    )
    out = []
    for key, score in found:
        if key not in wanted:
            continue
        page_key, _, revision = pages[int(key.split(":")[1])]
        text = wanted[key]
        section_labels = labels_of_section(text, labels)
        if not caller.may_read(section_labels):
            continue  # the index lagged a new claim's labels by one fold
        out.append(
            Hit(
                kind=PAGE,
                id=key.split(":", 1)[1],
                text=text,
                score=score,
                trust_label=Episode.Trust.APPROVED,
                security_class=section_labels.security_class,
                page_target=page_key,
                claim_ids=sorted(claim_ids_in(text)),
                locators=[{"page": page_key, "revision": revision}],
            )
        )
    return out


def _disputes(project, using: Backend, query, idf, caller, claims, as_of, pool):
    """The open conflicts a retrieval reads, with their scores when the database ranked
    them (None: `_conflicts` scores them).

    A dreamed project has hundreds open, and most share a word with any question. Whoosh
    weighs a text's length against the average of every conflict the caller may read, so
    it reads them all. PostgreSQL scores each text on its own: it ranks the conflicts
    holding a query word where they are, and only the best are read (then the next best,
    while some of those are withheld from the caller), with those the claims found are a
    side of, for their mark.
    """
    if using.name != "postgresql":
        return dispute_source.unresolved(project.pk, as_of), None
    rows = dispute_source.vectors(project.pk, as_of, sorted(idf)) if idf else None
    ranked = using.rank_rows(query, rows, idf) if rows else []
    scores, order = dict(ranked), [pk for pk, _ in ranked]
    if not (order or claims):
        return [], scores
    found = dispute_source.unresolved(
        project.pk, as_of, ids=order[:pool], claims=[h.id for h in claims]
    )
    start = pool
    while (
        start < len(order)
        and sum(d.conflict_id in scores and _readable(caller, d) for d in found) < pool
    ):
        seen = {d.conflict_id for d in found}
        more = [pk for pk in order[start : start + pool] if pk not in seen]
        found += dispute_source.unresolved(project.pk, as_of, ids=more) if more else []
        start += pool
    return found, scores


def _readable(caller: Caller, dispute) -> bool:
    return all(caller.may_read(s.labels) for s in dispute.sides)


def _conflicts(using: Backend, query, idf, caller, disputes, limit: int, scores=None) -> list[Hit]:
    """The `limit` best open conflicts whose every side the caller may read, scored on
    their sides' words (or by `scores`, {conflict id: score}, when the database ranked
    them). Only those are loaded with their evidence."""
    readable = [d for d in disputes if _readable(caller, d)]
    if scores is None:
        found = using.score_texts(query, [d.words for d in readable], idf)
    else:
        found = [scores.get(d.conflict_id, 0.0) for d in readable]
    matched = [(d, score) for d, score in zip(readable, found, strict=True) if score > 0]
    matched = sorted(matched, key=lambda m: (-m[1], m[0].conflict_id))[:limit]
    episodes = dict(
        Episode.objects.filter(pk__in=[i for d, _ in matched for i in d.evidence_ids]).values_list(
            "id", "locator"
        )
    )
    return [
        Hit(
            kind=CONFLICT,
            id=d.conflict_id,
            text=d.text,
            score=score,
            trust_label="disputed",
            security_class=Labels.strictest(s.labels for s in d.sides).security_class,
            claim_ids=d.claim_ids,
            evidence_ids=d.evidence_ids,
            locators=[_locator(i, episodes[i]) for i in d.evidence_ids if i in episodes],
            status=d.status,
        )
        for d, score in matched
    ]


def _mark_disputed(claims: list[Hit], disputes) -> None:
    """A claim that is a side of an open conflict says so wherever it is returned."""
    sides: dict[int, list[int]] = defaultdict(list)
    for d in disputes:
        for pk in d.claim_ids:
            sides[pk].append(d.conflict_id)
    for hit in claims:
        hit.disputed = sorted(sides.get(hit.id, []))


def _episodes(project, found, caller, query: str, as_of: datetime | None) -> list[Hit]:
    found = [(int(key.split(":", 1)[1]), score) for key, score in found]
    if not found:
        return []
    rows = Episode.objects.filter(
        project=project, pk__in=[pk for pk, _ in found], status=Episode.Status.ACTIVE
    )
    if as_of is not None:
        rows = rows.filter(recorded_at__lte=as_of)
    # When the episode before each in its source was said: a long silence before one
    # makes it a session's opener (see `_rerank`).
    before = (
        _live_episodes(project.pk)
        .filter(source=OuterRef("source"), id__lt=OuterRef("pk"))
        .order_by("-id")
        .values("occurred_at")[:1]
    )
    rows = rows.annotate(before_at=Subquery(before)).order_by()
    episodes = {e["id"]: e for e in rows.values(*EPISODE_FIELDS, "before_at")}
    out, openers = [], set()
    for pk, score in found:
        e = episodes.get(pk)
        if e is None or not caller.may_read(Labels.of(e)):
            continue
        out.append(
            Hit(
                kind=EPISODE,
                id=pk,
                text=e["content"],
                score=score,
                trust_label=e["trust"],
                security_class=e["security_class"],
                occurred_at=e["occurred_at"],
                actor=e["actor"],
                evidence_ids=[pk],
                locators=[_locator(pk, e["locator"])],
            )
        )
        if e["before_at"] and e["occurred_at"] - e["before_at"] >= SESSION_GAP:
            openers.add(pk)
    return _rerank(out, query, openers)


def _rerank(hits: list[Hit], query: str, openers: Collection[int] = ()) -> list[Hit]:
    """Lift what the person a query names said or did, what was said on a date it names
    and an episode resuming a session (among `openers`); set back an episode that only asks.

    "What did Caroline research?" asks about Caroline's turns; BM25 alone weighs her name
    like any common word. Tuned on the LoCoMo dev split (evidence hit@5 0.629 → 0.665).
    Of several people named, the lift goes to whom the question is about (see
    `rerank.asked_about`).
    A date counts as a name does: "What did Nate do for Joanna on 25 May, 2022?" asks
    about that day's turns (see `rerank.DateSpan`; on LoCoMo dev: hit@5 0.751 -> 0.766).
    The first turn after a silence tells what happened since ("Hey Maria, last weekend I
    started a yoga class"); it wins a near tie (on LoCoMo dev, where such turns hold
    evidence three times as often as others: hit@5 0.754 -> 0.766).
    An episode ending in a question repeats a question's words without holding its answer
    ("What did you research?"); it stays in the list, behind a statement that matches
    about as well (on LoCoMo dev: hit@5 0.732 → 0.747, multi-hop all@5 0.126 → 0.135).
    """
    asked = rerank.asked_about(query, {h.actor for h in hits})
    span = rerank.DateSpan(query)
    for h in hits:
        if h.actor in asked:
            h.score *= 1 + SPEAKER_BOOST
        if span and span.holds(h.occurred_at):
            h.score *= 1 + DATE_BOOST
        if h.id in openers:
            h.score *= OPENER_BOOST
        if h.text.rstrip().endswith("?"):
            h.score *= QUESTION_WEIGHT
    hits.sort(key=lambda h: -h.score)
    return hits


def _pack(query: str, hits: list[Hit], budget: int | None, as_of=None) -> ContextPack:
    if budget is None:
        return ContextPack(query, hits, None, sum(h.tokens for h in hits), as_of=as_of)
    kept, used = [], 0
    for h in hits:
        if used + h.tokens > budget:
            continue  # a smaller hit further down may still fit
        kept.append(h)
        used += h.tokens
    return ContextPack(query, kept, budget, used, dropped=len(hits) - len(kept), as_of=as_of)


def _trace(project: Project, pack: ContextPack, caller: Caller, duration_ms: int) -> RecallTrace:
    """One trace per retrieval; a claim's score also goes to each of its evidence episodes.

    The query is kept with its secrets redacted: a key pasted into a search box must not
    sit in the database and its backups.
    """
    scores: dict[int, float] = {}
    for h in pack.hits:
        for pk in h.evidence_ids:
            scores[pk] = max(scores.get(pk, 0.0), h.score)
    return RecallTrace.objects.create(
        project=project,
        query=redact_secrets(pack.query)[0][:MAX_QUERY],
        actor=caller.actor[:200],
        claim_ids=sorted({c for h in pack.hits for c in h.claim_ids}),
        episode_ids=list(scores),
        scores=[round(s, 4) for s in scores.values()],
        duration_ms=duration_ms,
    )
