"""The PostgreSQL backend's own machinery, under `make test`'s scale-out half: the term
dictionary kept beside the rows (counts and peaks), and ranking passes that skip rows that
cannot make the list without changing the list."""

from __future__ import annotations

import io
import random
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from llmwiki.erasure import source_erase
from llmwiki.models import SearchTerm, Source
from llmwiki.search import Caller, bm25f, postgres, retrieve
from llmwiki.search.backends import CONTEXT_BOOST, backend
from llmwiki.search.documents import EPISODE
from llmwiki.search.index import index_check, index_fold, index_rebuild
from tests.test_search import TRANSCRIPT, ingest_transcript
from tests.test_search_ranking import doc

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the PostgreSQL backend runs on PostgreSQL"
)


def counts(project) -> dict[tuple[str, str], int]:
    return {(t.layer, t.lexeme): t.docs for t in SearchTerm.objects.filter(project=project)}


def peak(project, lexeme: str) -> float:
    return SearchTerm.objects.get(project=project, layer=EPISODE, lexeme=lexeme).peak


def ranking_matches(captured) -> list[str]:
    """The tsquery each ranking pass matched rows with."""
    return [
        q["sql"].split("@@")[-1].split("::tsquery")[0] + "::tsquery"
        for q in captured.captured_queries
        if "ts_rank" in q["sql"]
    ]


def test_the_term_counts_follow_every_write(project, alice):
    using = backend()
    ingest_transcript(project)
    index_fold(project)
    assert counts(project)[(EPISODE, "")] == 4 and counts(project)[(EPISODE, "pixel")] == 3
    assert using.miscounted(project.pk) == []
    # The same row written again (a second fold of the same changes) counts once.
    using.apply(project.pk, [doc(project, 10**6, "pixel pixel kitten")], (), (), None)
    using.apply(project.pk, [doc(project, 10**6, "pixel pixel kitten")], (), (), None)
    assert counts(project)[(EPISODE, "pixel")] == 4
    later = [{**row, "content": row["content"] + " Later, the kitten slept."} for row in TRANSCRIPT]
    ingest_transcript(project, later, path="more.jsonl")
    index_fold(project)
    assert using.miscounted(project.pk) == []
    source_erase(source=Source.objects.get(path="more.jsonl"), actor=alice, note="test")
    index_fold(project)
    assert using.miscounted(project.pk) == []
    index_rebuild(project)
    assert using.miscounted(project.pk) == [] and counts(project)[(EPISODE, "")] == 4


def test_a_word_s_peak_rises_with_the_rows_written_and_stays_when_they_go(project):
    using = backend()
    using.apply(project.pk, [doc(project, 1, "kitten nap nap nap nap nap nap")], (), (), None)
    once = peak(project, "kitten")
    using.apply(project.pk, [doc(project, 2, "kitten kitten")], (), (), None)
    assert peak(project, "kitten") > once
    # A peak left high is still a bound; one below a row's rank would drop that row.
    using.apply(project.pk, [], ["episode:2"], (), None)
    assert peak(project, "kitten") > once and using.miscounted(project.pk) == []
    SearchTerm.objects.filter(project=project, lexeme="nap").update(peak=0.1)
    assert using.miscounted(project.pk) == ["episode:nap"]


def test_check_reports_words_miscounted_and_rebuild_repairs_them(project):
    ingest_transcript(project)
    index_fold(project)
    SearchTerm.objects.filter(project=project, lexeme="pixel").update(docs=7)
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("search_index", project=project.slug, check=True, stdout=out)
    assert "1 words miscounted" in out.getvalue() and "miscounted: episode:pixel" in out.getvalue()
    index_rebuild(project)
    assert index_check(project).ok


def prose(project) -> list[str]:
    """1,499 rows whose word frequencies spread as in prose (a few words in most rows, many
    in few), and 80 queries of three words."""
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(300)]
    weights = [1 / (i + 1) for i in range(300)]
    docs = [
        doc(project, n, " ".join(rng.choices(vocabulary, weights, k=rng.randint(3, 25))))
        for n in range(1, 1500)
    ]
    backend().apply(project.pk, docs, (), (), None)
    queries = [" ".join(rng.sample(vocabulary[:60], 3)) for _ in range(60)]
    return queries + [f"w0 w1 w{rng.randint(100, 299)}" for _ in range(20)]


def test_ranking_passes_give_the_list_one_pass_over_every_row_gives(project, monkeypatch):
    queries = prose(project)
    using = backend()

    def answers():
        return [using.search(project.pk, EPISODE, q, sensitive=True, limit=10) for q in queries]

    monkeypatch.setattr(postgres, "FIRST_PASS_ROWS", 10**9)
    whole = answers()
    monkeypatch.setattr(postgres, "FIRST_PASS_ROWS", 50)
    with CaptureQueriesContext(connection) as passes:
        pruned = answers()
    assert pruned == whole
    # No query needed more than a first pass and one exact second pass.
    assert len(ranking_matches(passes)) <= 2 * len(queries)
    # Words left out of the match are taken as held by every row: still the same lists.
    monkeypatch.setattr(postgres, "MATCH_WORDS", 1)
    assert answers() == whole


def test_a_later_ranking_pass_ranks_no_row_an_earlier_one_ranked(project, monkeypatch):
    queries = prose(project)
    using = backend()
    monkeypatch.setattr(postgres, "FIRST_PASS_ROWS", 50)
    later = 0
    for query in queries:
        with CaptureQueriesContext(connection) as passes:
            using.search(project.pk, EPISODE, query, sensitive=True, limit=10)
        ranked = []
        for match in ranking_matches(passes):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT key FROM llmwiki_searchdocument "  # noqa: S608 (the backend's own SQL)
                    f"WHERE project_id = %s AND layer = %s AND vec @@ {match}",
                    [project.pk, EPISODE],
                )
                ranked.append({key for (key,) in cursor.fetchall()})
        later += len(ranked) - 1
        for i, rows in enumerate(ranked):
            assert all(not rows & earlier for earlier in ranked[:i]), query
    assert later  # some queries needed a second pass


def test_common_words_alone_rank_only_the_rows_that_can_make_the_list(project, monkeypatch):
    monkeypatch.setattr(postgres, "FIRST_PASS_ROWS", 20)
    using = backend()
    # Every word of the question is in hundreds of rows; a few rows hold all of them.
    rows = [doc(project, n, f"harbour crane {n}") for n in range(1, 300)]
    rows += [doc(project, 300 + n, f"crane winch {n}") for n in range(300)]
    rows += [doc(project, 600 + n, f"harbour winch {n}") for n in range(300)]
    rows += [doc(project, 1000 + n, f"harbour crane winch {n}") for n in range(12)]
    using.apply(project.pk, rows, (), (), None)
    with CaptureQueriesContext(connection) as passes:
        found = using.search(project.pk, EPISODE, "harbour crane winch", sensitive=True, limit=10)
    assert all(key.startswith(f"{EPISODE}:10") for key, _ in found) and len(found) == 10
    # Rows holding two of the three words cannot reach the tenth score: not one pass
    # matched every row holding any word.
    assert all(" & " in match for match in ranking_matches(passes))


def test_a_rare_word_answers_without_reading_the_rows_of_a_common_one(project, monkeypatch):
    monkeypatch.setattr(postgres, "FIRST_PASS_ROWS", 20)
    using = backend()
    common = [doc(project, n, f"status update {n}: all quiet") for n in range(1, 400)]
    rare = [doc(project, 500 + n, f"the linkspan {n} needs grease") for n in range(12)]
    using.apply(project.pk, common + rare, (), (), None)
    with CaptureQueriesContext(connection) as passes:
        found = using.search(project.pk, EPISODE, "status linkspan", sensitive=True, limit=10)
    assert all(key.startswith(f"{EPISODE}:5") for key, _ in found)
    ranking = ranking_matches(passes)
    assert len(ranking) == 1
    assert "linkspan" in ranking[0] and "status" not in ranking[0]


def test_a_retrieval_reads_the_query_s_words_from_the_term_dictionary_once(project):
    ingest_transcript(project)
    index_fold(project)
    with CaptureQueriesContext(connection) as queries:
        retrieve(project, "pixel kitten", caller=Caller.operator(), record=False)
    reads = [q for q in queries.captured_queries if "FROM llmwiki_searchterm" in q["sql"]]
    assert len(reads) == 1  # the idf, then the claim, page and episode layers


def test_each_row_s_length_weights_are_worked_out_once_not_once_a_word(project):
    # Working out a row's weights costs more than ranking it for a word: with them written
    # into each word's rank, the server works them out again for every word.
    ingest_transcript(project)
    index_fold(project)
    using, query = backend(), "pixel kitten litter"
    with CaptureQueriesContext(connection) as queries:
        using.search(project.pk, EPISODE, query, sensitive=True, limit=10)
        idf = using.idf(project.pk, query)
        using.score_texts(query, ["The pixel kitten slept.", "A kitten."], idf)
    ranking = [q["sql"] for q in queries.captured_queries if "ts_rank_cd" in q["sql"]]
    assert len(ranking) >= 2
    for sql in ranking:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN VERBOSE {sql}")
            plan = "\n".join(row for (row,) in cursor.fetchall())
        weights = re.findall(r"ts_rank_cd\(([^,]*),", plan)
        assert len(weights) >= 2 and not any("ARRAY" in w for w in weights), plan


def test_open_conflicts_are_ranked_in_the_database_and_only_the_best_are_read(
    project, alice, monkeypatch
):
    from llmwiki.models import Claim
    from llmwiki.search import disputes
    from llmwiki.search.retrieval import _conflicts, _disputes
    from llmwiki.wiki import claim_create
    from tests.test_search_one_list import note, open_conflict, overview

    episodes = note(project, "winch.md", "- The stern winch brake was relined in March.")
    restricted = claim_create(
        page=overview(project),
        text="The stern winch brake was relined.",
        evidence=[episodes[0].pk],
        reviewer=alice,
    )
    Claim.objects.filter(pk=restricted.pk).update(security_class="restricted")
    # The best match (every word of the question) has a restricted side; four hold one.
    withheld = open_conflict(
        project, "w", restricted.text, "The stern winch brake is original.", claim=restricted
    )
    for part in ("drum", "cover", "motor", "cable"):
        open_conflict(project, part, f"The winch {part} was painted.", "It was not.")
    for n in range(8):
        open_conflict(project, f"other {n}", f"Tide table {n} was printed.", "It was not.")
    index_fold(project)
    using, query = backend(), "stern winch brake"
    idf = using.idf(project.pk, query)
    read = []
    unresolved = disputes.unresolved

    def reading(*args, **kwargs):
        found = unresolved(*args, **kwargs)
        read.extend(d.conflict_id for d in found)
        return found

    monkeypatch.setattr(disputes, "unresolved", reading)
    lists = {}
    for caller, reads in (
        (Caller.operator(), 2),
        # The withheld conflict gives way to the next best: one more batch is read.
        (Caller("agent:x"), 4),
    ):
        read.clear()
        found, scores = _disputes(project, using, query, idf, caller, [], None, 2)
        best = _conflicts(using, query, idf, caller, found, 2, scores)
        assert len(set(read)) == reads  # never the tide tables, nor every winch conflict
        # The same list, to the last digit, as parsing and scoring every open conflict here.
        everyone = _conflicts(using, query, idf, caller, unresolved(project.pk), 2)
        assert [(h.id, h.score) for h in best] == [(h.id, h.score) for h in everyone]
        lists[caller.actor] = [h.id for h in best]
    assert lists[Caller.operator().actor][0] == withheld.pk
    assert withheld.pk not in lists["agent:x"] and len(lists["agent:x"]) == 2


@pytest.mark.django_db
def test_the_latest_episode_of_a_project_is_read_from_an_index_not_past_other_projects(project):
    """Every retrieval asks where the project's material stands (`documents.head`). With
    newer projects' episodes above it in the primary key, a walk down that key would read
    every one of them; the (project, id) index answers at once."""
    from llmwiki.search.documents import head_columns, project_row_sql

    with connection.cursor() as cursor:
        # A test database's statistics are whatever earlier tests left: forbid the plans a
        # large table would never take (reading it all, or sorting the project's rows).
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + project_row_sql(connection.vendor, head_columns), [project.pk])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    for table in ("llmwiki_episode", "llmwiki_auditevent"):
        scan = next(line for line in plan.splitlines() if f" on {table} " in line)
        # Read backwards along the project's own ids: no sort, no other project's rows.
        assert "Scan Backward" in scan and "_pkey" not in scan, plan


def lengths(project) -> tuple[int, int, int]:
    """The episode layer's documents, own words and context words, as the dictionary keeps them."""
    t = SearchTerm.objects.get(project=project, layer=EPISODE, lexeme="")
    return t.docs, t.own_words, t.context_words


def test_a_row_ranks_as_bm25f_ranks_it_with_the_layer_s_average_lengths(project):
    using = backend()
    rows = [
        doc(project, 1, "kitten nap"),
        doc(project, 2, "kitten alpha bravo delta echo foxtrot golf hotel"),
        doc(project, 3, "nap alpha", context="kitten bravo"),
        doc(project, 4, "alpha bravo"),
    ]
    using.apply(project.pk, rows, (), (), None)
    assert lengths(project) == (4, 14, 2)
    own, context = 14 / 4, 2 / 4  # the layer's average lengths, not the matching rows'
    idf = bm25f.okapi_idf(4, 3)

    def bm25f_score(tf_own, own_words, tf_context=0, context_words=0):
        weighted = tf_own / (1 - bm25f.B + bm25f.B * own_words / own)
        weighted += CONTEXT_BOOST * tf_context / (1 - bm25f.B + bm25f.B * context_words / context)
        return bm25f.saturated(idf, weighted)

    found = dict(using.search(project.pk, EPISODE, "kitten", sensitive=True, limit=5))
    assert found == {
        "episode:1": pytest.approx(bm25f_score(1, 2), rel=1e-6),
        "episode:2": pytest.approx(bm25f_score(1, 8), rel=1e-6),
        "episode:3": pytest.approx(bm25f_score(0, 2, 1, 2), rel=1e-6),
    }


def test_a_short_turn_stating_the_answer_outranks_a_long_text_repeating_the_word(project):
    using = backend()
    quiet = [doc(project, n, f"status update {n} all quiet on deck today") for n in range(20)]
    short = doc(project, 100, "The broker is redis streams now")
    repeats = doc(project, 101, "broker config review pending " * 3 + "config review pending " * 16)
    note = doc(project, 102, "the ledger " + "lists every crane lift of the season " * 8)
    using.apply(project.pk, [*quiet, short, repeats, note], (), (), None)
    found = [key for key, _ in using.search(project.pk, EPISODE, "broker", sensitive=True, limit=5)]
    assert found == ["episode:100", "episode:101"]
    # A long note is not buried for its length when it is what holds the word.
    assert using.search(project.pk, EPISODE, "ledger", sensitive=True, limit=5)[0][0] == (
        "episode:102"
    )


def test_the_layer_s_lengths_follow_every_write(project):
    using = backend()
    using.apply(project.pk, [doc(project, 1, "kitten nap nap", context="pixel")], (), (), None)
    using.apply(project.pk, [doc(project, 2, "pixel")], (), (), None)
    assert lengths(project) == (2, 4, 1)
    # Written again with other words: its old lengths go, its new ones count.
    using.apply(project.pk, [doc(project, 1, "kitten", context="pixel pixel")], (), (), None)
    assert lengths(project) == (2, 2, 2)
    using.apply(project.pk, [], ["episode:1"], (), None)
    assert lengths(project) == (1, 1, 0) and using.miscounted(project.pk) == []
    SearchTerm.objects.filter(project=project, lexeme="").update(own_words=5)
    assert using.miscounted(project.pk) == ["episode:"]


def test_peaks_stay_bounds_while_the_average_lengths_grow(project, monkeypatch):
    using = backend()
    short = [doc(project, n, f"kitten nap {n}") for n in range(1, 4)]
    using.apply(project.pk, short, (), (), None)
    long = [doc(project, 10 + n, "crane lift log entry " * 10) for n in range(30)]

    def highest_kitten_rank() -> float:
        averages = using._terms(project.pk, "kitten", fresh=True)[EPISODE][""].averages()
        weights = postgres._lengths("own", "ctx")
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT max({postgres._rank('vec', '%s::tsquery', weights)}) "  # noqa: S608
                "FROM llmwiki_searchdocument WHERE project_id = %s AND vec @@ %s::tsquery",
                [*averages, "kitten", project.pk, "kitten"],
            )
            return cursor.fetchone()[0]

    def bound() -> float:
        terms = using._terms(project.pk, "kitten", fresh=True)[EPISODE]
        grown = terms[""].growth(terms[""].averages())
        return postgres._loosened(terms["kitten"].peak, grown)

    # Averages left to drift: the peak kept from the short rows no longer bounds them...
    monkeypatch.setattr(postgres, "DRIFT", 10**9)
    using.apply(project.pk, long, (), (), None)
    assert peak(project, "kitten") < highest_kitten_rank() <= bound() * (1 + postgres.SLACK)
    assert using.miscounted(project.pk) == []
    # ...and past DRIFT the layer's peaks are ranked again at the new averages.
    monkeypatch.setattr(postgres, "DRIFT", 1.25)
    using.apply(project.pk, [doc(project, 99, "crane lift log entry " * 10)], (), (), None)
    assert peak(project, "kitten") == pytest.approx(highest_kitten_rank(), rel=1e-6)
    assert using.miscounted(project.pk) == []


def test_a_hyphenated_name_is_read_as_its_parts_only_as_the_whoosh_backend_reads_it(project):
    from tests.test_search_one_list import open_conflict

    using = backend()
    using.apply(
        project.pk,
        [doc(project, 1, "Deployed on tw-worker-2 today."), doc(project, 2, "A worker left.")],
        (),
        (),
        None,
    )
    lexemes = {t.lexeme for t in SearchTerm.objects.filter(project=project, layer=EPISODE)}
    assert {"tw", "worker", "2"} <= lexemes and "tw-worker" not in lexemes
    # The query's name asks for the same parts, each once: not a fourth word for the whole.
    assert sorted(using.idf(project.pk, "Which tw-worker-2?")) == ["2", "tw", "worker"]
    hits = using.search(project.pk, EPISODE, "tw-worker-2", sensitive=False, limit=5)
    assert [key for key, _ in hits] == [f"{EPISODE}:1", f"{EPISODE}:2"]
    # A conflict's sides are parsed the same way, so a query's words meet them too.
    conflict = open_conflict(project, "host", "It runs on tw-worker-2.", "It runs on db-prod-1.")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(words) FROM dreaming_conflictside WHERE conflict_id = %s "
            "ORDER BY position",
            [conflict.pk],
        )
        sides = [set(words) for (words,) in cursor.fetchall()]
    assert sides == [{"run", "tw", "worker", "2"}, {"run", "db", "prod", "1"}]
