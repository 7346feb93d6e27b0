"""One ranked list: claims, sections, open conflicts and episodes on one scale, reviewed
memory lifted by a fixed factor. Runs on whichever backend the database calls for (Whoosh
on SQLite, PostgreSQL's full-text search under `make test`'s scale-out half)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from dreaming.models import Candidate, Conflict, ConflictSide
from llmwiki.access import Labels
from llmwiki.ingest import RawFile, collect_paths, ingest_files
from llmwiki.management.commands.load_demo import CORPUS
from llmwiki.models import Episode, Page, PageKey
from llmwiki.search import Caller, retrieve
from llmwiki.search.backends import backend
from llmwiki.search.disputes import Dispute, Side
from llmwiki.search.pack import Hit
from llmwiki.search.retrieval import BOOST, CLAIM, CONFLICT, _conflicts, _one_list
from llmwiki.wiki import claim_create
from tests.test_search import OPERATOR, approve, dream

FILLER = [f"- Routine harbour log entry {n}: tide tables checked, nothing else." for n in range(12)]


def note(project, path: str, *lines: str) -> list[Episode]:
    text = "# Notes\n\n" + "\n".join([*lines, *FILLER]) + "\n"
    ingest_files(project=project, files=[RawFile(path, text.encode())], actor="system")
    return list(Episode.objects.filter(project=project, source__path=path).order_by("id"))


def overview(project) -> Page:
    return Page.objects.get(project=project, key=PageKey.SYSTEM_OVERVIEW)


def rank(pack, word: str) -> int:
    """The 1-based place of the first hit that holds `word` (len + 1 when none does)."""
    for n, h in enumerate(pack.hits, start=1):
        if word.lower() in h.text.lower():
            return n
    return len(pack.hits) + 1


@pytest.fixture
def ramp(project, alice):
    """An episode about the linkspan ramp, and a claim saying less, resting on another."""
    episodes = note(
        project,
        "ramp.md",
        "- The linkspan ramp at berth two was repaired by the Tuesday night crew.",
        "- Ramp fixed.",
    )
    claim = claim_create(
        page=overview(project),
        text="The linkspan ramp was repaired.",
        evidence=[episodes[1].pk],
        reviewer=alice,
    )
    return episodes[0], claim


def test_a_reviewed_claim_wins_a_near_tie(project, ramp):
    episode, claim = ramp
    pack = retrieve(project, "linkspan ramp repaired", caller=OPERATOR, record=False)
    order = [(h.kind, h.id) for h in pack.hits]
    assert order.index((CLAIM, claim.pk)) < order.index(("episode", episode.pk))


def test_a_reviewed_claim_never_beats_a_much_better_match(project, ramp):
    episode, _ = ramp
    query = "linkspan ramp berth two Tuesday night crew"
    pack = retrieve(project, query, caller=OPERATOR, record=False)
    assert (pack.hits[0].kind, pack.hits[0].id) == ("episode", episode.pk)
    claim_hit = next(h for h in pack.hits if h.kind == CLAIM)
    # One scale for every layer: only the list's top is 1.0, not each layer's.
    assert pack.hits[0].score == 1.0 and 0 < claim_hit.score < 1 / BOOST[CLAIM]


def test_an_open_conflict_is_a_hit_and_marks_its_claim_wherever_returned(project, alice):
    episodes = note(
        project,
        "broker.md",
        "- The shipment events go through RabbitMQ.",
        "- The shipment events now go through Redis Streams.",
    )
    claim = claim_create(
        page=overview(project),
        text="Shipment events go through RabbitMQ.",
        evidence=[episodes[0].pk],
        reviewer=alice,
    )
    conflict = Conflict.objects.create(
        project=project, subject="shipment events broker", kind="value", dedupe_key="broker"
    )
    ConflictSide.objects.create(conflict=conflict, position=0, text=claim.text, claim=claim)
    side = ConflictSide.objects.create(
        conflict=conflict, position=1, text="Shipment events go through Redis Streams."
    )
    side.evidence.set([episodes[1]])
    pack = retrieve(project, "which broker carries shipment events", caller=OPERATOR)
    disputed = next(h for h in pack.hits if h.kind == CONFLICT)
    assert disputed.id == conflict.pk and disputed.status == "open"
    assert disputed.text == (
        "disputed: Shipment events go through RabbitMQ. vs "
        f"Shipment events go through Redis Streams. (evidence #{episodes[1].pk})"
    )
    assert disputed.as_json()["citations"]["claim_ids"] == [claim.pk]
    claim_hit = next(h for h in pack.hits if h.kind == CLAIM)
    assert claim_hit.disputed == [conflict.pk]
    assert f"disputed: conflict {conflict.pk}" in pack.as_text()
    Conflict.objects.filter(pk=conflict.pk).update(
        status=Conflict.Status.RESOLVED, resolved_at=timezone.now()
    )
    pack = retrieve(project, "which broker carries shipment events", caller=OPERATOR)
    assert not [h for h in pack.hits if h.kind == CONFLICT]
    assert next(h for h in pack.hits if h.kind == CLAIM).disputed == []


def test_a_conflict_is_withheld_by_the_clearance_of_its_sides(db):
    restricted = Dispute(
        7,
        "escalated",
        (
            Side("The pilot boat keys are in locker nine.", None, (1,), Labels()),
            Side("The pilot boat keys are in locker four.", None, (2,), Labels("restricted")),
        ),
    )
    quarantined = Dispute(
        8, "open", (Side("pilot boat keys moved", None, (3,), Labels(status="quarantined")),)
    )
    idf = {"pilot": 1.0, "boat": 1.0, "key": 1.0}
    using, query = backend(), "pilot boat keys"

    def seen(caller):
        return [h.id for h in _conflicts(using, query, idf, caller, [restricted, quarantined], 10)]

    assert seen(Caller("agent:x")) == []
    assert seen(Caller("agent:x", sensitive=True)) == [7]
    assert sorted(seen(Caller.operator())) == [7, 8]
    assert restricted.text.startswith("open question: The pilot boat keys are in locker nine.")


# Questions about the demo corpus, each with a word its answer holds.
QUESTIONS = [
    ("Which host runs the staging database?", "db-staging-2"),
    ("How many units does a typical sailing carry?", "60–110"),
    ("What replaced RabbitMQ for the shipment event queue?", "redis streams"),
    ("Which database host runs production PostgreSQL?", "db-prod-1"),
]


def test_approving_the_candidates_that_answer_a_question_never_pushes_its_answer_down(project, bob):
    files = [f for f in collect_paths([CORPUS]) if f.path != "SEEDED.md"]
    ingest_files(project=project, files=files, actor="system")
    dream(project)
    approved = 0
    for question, answer in QUESTIONS:
        before = rank(retrieve(project, question, caller=OPERATOR, limit=5, record=False), answer)
        for candidate in Candidate.objects.filter(
            project=project, status=Candidate.Status.PROPOSED
        ):
            if answer in candidate.text.lower():
                approve(candidate, bob)
                approved += 1
        after = retrieve(project, question, caller=OPERATOR, limit=5, record=False)
        assert rank(after, answer) <= before, (question, [h.text[:80] for h in after.hits])
    assert approved >= 2


def test_a_claim_matching_much_worse_does_not_take_the_place_of_its_evidence(project, alice):
    episodes = note(
        project,
        "crew.md",
        "- The linkspan ramp at berth two was repaired by the Tuesday night crew.",
    )
    claim = claim_create(
        page=overview(project),
        text="The linkspan ramp was repaired.",
        evidence=[episodes[0].pk],
        reviewer=alice,
    )
    query = "linkspan ramp berth two Tuesday night crew"
    order = [(h.kind, h.id) for h in retrieve(project, query, caller=OPERATOR).hits]
    assert order[0] == ("episode", episodes[0].pk) and (CLAIM, claim.pk) in order


def test_an_episode_holding_more_of_the_question_than_its_claim_stays_above_it(project, alice):
    # The claim is the shorter wording and wins on the boost alone; the episode it rests
    # on also holds "kept", the word the answer hangs on, so it answers more fully.
    episodes = note(
        project,
        "retention.md",
        "- scan records are kept 400 days; the nightly purge deletes them row by row.",
    )
    claim = claim_create(
        page=overview(project),
        text="The nightly purge deletes scan records row by row.",
        evidence=[episodes[0].pk],
        reviewer=alice,
    )
    query = "how long are scan records kept before the nightly purge deletes them"
    order = [(h.kind, h.id) for h in retrieve(project, query, caller=OPERATOR).hits]
    assert order[:2] == [("episode", episodes[0].pk), (CLAIM, claim.pk)]


def test_a_claim_sharing_one_word_with_the_question_does_not_overtake_a_fuller_match():
    # Within the near tie on scores (the claim's 1.0 with its full lift against the
    # episode's 0.9), but the claim holds one of the question's three words, the episode two.
    raw = 1.0 / BOOST[CLAIM]
    claim = Hit(CLAIM, 1, "Spare keys are kept behind the counter.", raw, "claim", "internal")
    episode = Hit("episode", 2, "The sensor test was failing.", 0.9, "draft", "internal")
    idf = {"test": 1.0, "kept": 1.0, "fail": 1.0}
    listed = _one_list([claim], [], [], [episode], 10, "which test kept failing", idf)
    assert [(h.kind, h.id) for h in listed] == [("episode", 2), (CLAIM, 1)]
    # A claim holding the whole question keeps the full lift and wins the near tie.
    whole = Hit(CLAIM, 3, "The sensor test kept failing.", raw, "claim", "internal")
    episode = Hit("episode", 2, "The sensor test was failing.", 0.9, "draft", "internal")
    listed = _one_list([whole], [], [], [episode], 10, "which test kept failing", idf)
    assert [(h.kind, h.id) for h in listed] == [(CLAIM, 3), ("episode", 2)]


def test_open_conflicts_are_read_as_values_not_rows(project, alice, monkeypatch):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from llmwiki.search import disputes

    episodes = note(project, "broker.md", "- Events go through RabbitMQ.", "- Events use NATS.")
    conflict = Conflict.objects.create(
        project=project, subject="events broker", kind="value", dedupe_key="broker"
    )
    for n, episode in enumerate(episodes):
        side = ConflictSide.objects.create(conflict=conflict, position=n, text=episode.content)
        side.evidence.set([episode])

    def built(*args, **kwargs):
        raise AssertionError("a model instance was built to read an open conflict")

    # Every retrieval reads every open conflict (hundreds in a dreamed project): the
    # episodes they quote are read for their ids and labels, never built as rows.
    for model in (Episode, Conflict, ConflictSide, Candidate):
        monkeypatch.setattr(model, "from_db", classmethod(built))
    with CaptureQueriesContext(connection) as queries:
        (found,) = disputes.unresolved(project.pk)
    assert not any('"content"' in q["sql"] for q in queries.captured_queries)
    assert found.evidence_ids == [e.pk for e in episodes]
    assert [s.labels for s in found.sides] == [Labels.of(e) for e in episodes]


def test_only_the_best_open_conflicts_are_loaded_with_their_evidence(db):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    using = backend()
    words = ["broker queue", "broker", "broker queue events", "kiln"]
    disputes = [
        Dispute(n, "open", (Side(w, None, (n,), Labels()), Side("other", None, (), Labels())))
        for n, w in enumerate(words, start=1)
    ]
    query = "broker queue events"
    idf = using.idf(0, query) or {"broker": 1.0, "queue": 1.0, "event": 1.0}
    with CaptureQueriesContext(connection) as queries:
        best = _conflicts(using, query, idf, OPERATOR, disputes, 2)
    assert [h.id for h in best] == [3, 1]
    loaded = [q["sql"] for q in queries.captured_queries if "llmwiki_episode" in q["sql"]]
    assert len(loaded) == 1 and "IN (3, 1)" in loaded[0]  # the two best conflicts only


def open_conflict(project, key: str, *sides: str, claim=None) -> Conflict:
    """An open conflict between `sides` (texts); with `claim`, its first side is that claim."""
    conflict = Conflict.objects.create(project=project, subject=key, kind="value", dedupe_key=key)
    for n, text in enumerate(sides):
        ConflictSide.objects.create(
            conflict=conflict, position=n, text=text, claim=claim if n == 0 else None
        )
    return conflict


def test_a_retrieval_costs_no_more_queries_for_many_hits_than_for_one(project, alice):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from llmwiki.search.index import index_fold

    lines = [f"- Ferry {n} berths at the harbour ramp on pier {n}." for n in range(30)]
    episodes = note(project, "ferries.md", *lines)
    for n, episode in enumerate(episodes[:20]):
        claim = claim_create(
            page=overview(project),
            text=f"Ferry {n} uses the harbour ramp.",
            evidence=[episode.pk],
            reviewer=alice,
        )
        conflict = open_conflict(
            project, f"ramp {n}", claim.text, f"Ferry {n} uses the harbour crane.", claim=claim
        )
        ConflictSide.objects.get(conflict=conflict, position=1).evidence.set([episode])
    index_fold(project)

    def cost(limit: int) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            pack = retrieve(
                project, "harbour ramp ferry", caller=OPERATOR, limit=limit, record=False
            )
        return len(queries.captured_queries), len(pack.hits)

    (one, hits_one), (many, hits_many) = cost(1), cost(60)
    assert hits_one == 1 and hits_many >= 40  # claims, conflicts and episodes
    # Rows, citations and conflicts are loaded a layer at a time, never a hit at a time.
    assert many <= one


def test_a_claim_is_marked_disputed_by_a_conflict_that_shares_no_word_with_the_query(
    project, alice
):
    episodes = note(project, "gangway.md", "- The gangway at berth three is rated for 40 tonnes.")
    claim = claim_create(
        page=overview(project),
        text="The gangway at berth three is rated for 40 tonnes.",
        evidence=[episodes[0].pk],
        reviewer=alice,
    )
    # Neither side's text holds a word of the question; the claim is a side all the same.
    conflict = open_conflict(
        project, "load", "Rated load: forty.", "Rated load: thirty.", claim=claim
    )
    pack = retrieve(project, "gangway berth three", caller=OPERATOR)
    assert next(h for h in pack.hits if h.kind == CLAIM).disputed == [conflict.pk]
    assert not [h for h in pack.hits if h.kind == CONFLICT]
