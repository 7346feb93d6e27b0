"""Postings held in the process (`llmwiki.search.postings`) on PostgreSQL: the lists they
give are the lists the SQL ranking passes give, through writes, rewrites, deletions and
rebuilds, and they never outlive what the database holds.

These tests commit (`transactional_db`): a query inside a transaction goes to SQL."""

from __future__ import annotations

import dataclasses
import random

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from llmwiki.ingest import collect_paths, ingest_files
from llmwiki.management.commands.load_demo import CORPUS
from llmwiki.models import Episode, Page, PageKey
from llmwiki.search import Caller, postings, retrieve
from llmwiki.search.backends import backend
from llmwiki.search.documents import EPISODE
from llmwiki.services import project_create
from llmwiki.wiki import claim_create
from tests.test_search_ranking import doc

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the PostgreSQL backend runs on PostgreSQL"
)

WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture
def live(transactional_db, django_user_model):
    owner = django_user_model.objects.create_user("owner")
    postings.held.forget()
    yield project_create(slug="live", name="Live", actor="system", owner=owner)
    postings.held.forget()


def text(rng: random.Random, n: int) -> str:
    # Zipf-like: a few words most rows hold, many that few do.
    return " ".join(WORDS[min(int(rng.paretovariate(0.8)) - 1, 39)] for _ in range(n))


def both_ways(project, query, sensitive=True, limit=10):
    """(the list from held postings, the list from SQL's ranking passes)."""
    using = backend()
    held = using.search(project.pk, EPISODE, query, sensitive=sensitive, limit=limit)
    with transaction.atomic():
        sql = using.search(project.pk, EPISODE, query, sensitive=sensitive, limit=limit)
    return held, sql


def assert_same(held, sql):
    assert [k for k, _ in held] == [k for k, _ in sql]
    assert [s for _, s in held] == pytest.approx([s for _, s in sql], rel=1e-6)


def test_held_postings_give_sql_s_lists_through_writes_rewrites_deletions_and_rebuilds(live):
    rng = random.Random(7)
    using = backend()
    queries = [" ".join(rng.sample(WORDS[:25], rng.randint(1, 5))) for _ in range(12)]
    keys = []
    for batch in range(6):
        rows = []
        for n in range(batch * 60, batch * 60 + 60):
            context = text(rng, rng.randint(0, 6)) if n % 3 == 0 else ""
            row = doc(live, n, text(rng, rng.randint(2, 25)), context=context)
            rows.append(dataclasses.replace(row, sensitive=n % 7 == 0))
        # Rewrites of rows already held, with other words and lengths.
        earlier = rng.sample(range(batch * 60), min(18, batch * 60))
        rows += [doc(live, n, text(rng, rng.randint(2, 25))) for n in earlier[:10]]
        gone = [f"{EPISODE}:{n}" for n in earlier[10:]]
        using.apply(live.pk, rows, gone, (), None)
        keys = sorted({*keys, *(r.key for r in rows)} - set(gone))
        for query in queries:
            for sensitive in (True, False):
                assert_same(*both_ways(live, query, sensitive=sensitive, limit=10))
        if batch == 3:
            # A rebuild: every row under a new id, and a number past what is held.
            using.clear(live.pk)
            again = [doc(live, int(k.split(":")[1]), text(rng, 9)) for k in keys]
            using.apply(live.pk, again, (), (), None)
    assert postings.held.size > 0


def test_a_write_is_read_at_the_next_query_from_the_rows_written_since(live):
    using = backend()
    rows = [doc(live, n, f"kitten nap {n}") for n in range(50)] + [doc(live, 50, "pixel nap")]
    using.apply(live.pk, rows, (), (), None)
    assert [k for k, _ in using.search(live.pk, EPISODE, "kitten pixel", sensitive=True, limit=5)]
    using.apply(live.pk, [doc(live, 7, "pixel pixel kitten"), doc(live, 99, "pixel")], (), (), None)
    with CaptureQueriesContext(connection) as captured:
        found = using.search(live.pk, EPISODE, "kitten pixel", sensitive=True, limit=5)
    assert [k for k, _ in found][:2] == [f"{EPISODE}:7", f"{EPISODE}:99"]
    read = [q["sql"] for q in captured.captured_queries if "unnest(d.vec)" in q["sql"]]
    assert len(read) == 1 and "d.written >" in read[0]  # the two rows, not the layer
    assert_same(*both_ways(live, "kitten pixel"))


def test_a_deleted_row_left_in_the_held_postings_never_reaches_a_list(live):
    using = backend()
    using.apply(
        live.pk, [doc(live, n, f"kitten {'nap ' * (n % 5)}") for n in range(20)], (), (), None
    )
    first = using.search(live.pk, EPISODE, "kitten", sensitive=True, limit=3)
    using.apply(live.pk, [], [key for key, _ in first], (), None)
    after = using.search(live.pk, EPISODE, "kitten", sensitive=True, limit=3)
    assert not {k for k, _ in after} & {k for k, _ in first}
    assert_same(*both_ways(live, "kitten", limit=3))


def test_a_query_inside_a_transaction_is_answered_by_sql_and_a_rollback_leaves_nothing_held(
    live,
):
    using = backend()
    using.apply(live.pk, [doc(live, n, f"kitten {n}") for n in range(10)], (), (), None)
    using.search(live.pk, EPISODE, "kitten", sensitive=True, limit=3)
    with pytest.raises(RuntimeError), transaction.atomic():
        using.apply(live.pk, [doc(live, 100, "kitten kitten kitten")], (), (), None)
        with CaptureQueriesContext(connection) as captured:
            inside = using.search(live.pk, EPISODE, "kitten", sensitive=True, limit=3)
        assert inside[0][0] == f"{EPISODE}:100"
        assert any("ts_rank" in q["sql"] for q in captured.captured_queries)
        raise RuntimeError
    after = using.search(live.pk, EPISODE, "kitten", sensitive=True, limit=3)
    assert f"{EPISODE}:100" not in {k for k, _ in after}
    assert_same(*both_ways(live, "kitten", limit=3))


def test_the_held_postings_stay_within_their_bound_least_recently_asked_out(live, monkeypatch):
    using = backend()
    using.apply(
        live.pk, [doc(live, n, " ".join(WORDS[: 1 + n % 40])) for n in range(200)], (), (), None
    )
    monkeypatch.setattr(postings._Held, "budget", 400)
    monkeypatch.setattr(postings, "RECENT", 3)
    for word in WORDS:
        using.search(live.pk, EPISODE, word, sensitive=True, limit=5)
        assert postings.held.size <= 400
    assert "w39" in {w for (_, w) in postings.held.used}
    assert "w0" not in {w for (_, w) in postings.held.used}  # the first asked, 200 postings
    assert_same(*both_ways(live, "w0 w1 w39"))


def test_words_the_recent_queries_use_are_not_pushed_out_for_another(live, monkeypatch):
    using = backend()
    rows = [doc(live, n, " ".join(WORDS[: 1 + n % 40])) for n in range(200)]
    using.apply(live.pk, rows, (), (), None)
    monkeypatch.setattr(postings._Held, "budget", 400)  # w0 (200 rows) and w1 (195) fit
    for _ in range(3):
        using.search(live.pk, EPISODE, "w0", sensitive=True, limit=5)
        using.search(live.pk, EPISODE, "w1", sensitive=True, limit=5)
    with CaptureQueriesContext(connection) as captured:
        found = using.search(live.pk, EPISODE, "w2", sensitive=True, limit=5)
    assert any("ORDER BY rank DESC" in q["sql"] for q in captured.captured_queries)  # in SQL
    assert {w for (_, w) in postings.held.used} == {"w0", "w1"}
    assert_same(found, both_ways(live, "w2", limit=5)[1])


def test_a_retrieval_gives_the_same_hits_from_held_postings_as_from_sql(live, django_user_model):
    files = [f for f in collect_paths([CORPUS]) if f.path.endswith(".md")][:12]
    ingest_files(project=live, files=files, actor="system")
    episodes = list(Episode.objects.filter(project=live, status="active").order_by("id"))
    page = Page.objects.get(project=live, key=PageKey.SYSTEM_OVERVIEW)
    reviewer = django_user_model.objects.get(username="owner")
    rng = random.Random(3)
    for episode in rng.sample(episodes, 8):
        claim_create(
            page=page, text=episode.content[:200], evidence=[episode.pk], reviewer=reviewer
        )
    questions = [" ".join(e.content.split()[:7]) for e in rng.sample(episodes, 10)]
    caller = Caller.operator("test")

    def hits(query):
        return [(h.kind, h.text, h.score) for h in retrieve(live, query, caller=caller).hits]

    for query in questions:
        held = hits(query)
        with transaction.atomic():
            sql = hits(query)
        assert [h[:2] for h in held] == [h[:2] for h in sql]
        assert [h[2] for h in held] == pytest.approx([h[2] for h in sql], rel=1e-6)
        assert held
    assert postings.held.layers


def test_a_query_whose_words_could_not_be_held_is_ranked_in_sql(live, monkeypatch, settings):
    using = backend()
    rows = [
        doc(live, n, f"kitten {'nap ' * (n % 3)}{'pixel' if n % 4 == 0 else ''}") for n in range(40)
    ]
    using.apply(live.pk, rows, (), (), None)
    monkeypatch.setattr(postings._Held, "budget", 50)  # kitten alone is in 40 rows
    for query, in_sql in (("pixel nap", False), ("kitten nap", True)):
        with CaptureQueriesContext(connection) as captured:
            found = using.search(live.pk, EPISODE, query, sensitive=True, limit=5)
        ranked = [q for q in captured.captured_queries if "ORDER BY rank DESC" in q["sql"]]
        assert bool(ranked) == in_sql
        assert_same(found, both_ways(live, query, limit=5)[1])
    settings.LLMWIKI_SEARCH_POSTINGS_MB = 0
    monkeypatch.undo()
    postings.held.forget()
    assert using.search(live.pk, EPISODE, "pixel", sensitive=True, limit=5)
    assert not postings.held.layers
