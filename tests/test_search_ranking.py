"""Ranking on whichever backend the database calls for (Whoosh on SQLite, PostgreSQL's
full-text search under `make test`'s scale-out half): the same two properties of BM25F."""

from __future__ import annotations

from llmwiki.search.backends import backend
from llmwiki.search.documents import EPISODE, Doc


def doc(project, n: int, text: str, context: str = "") -> Doc:
    return Doc(
        key=f"{EPISODE}:{n}",
        project_id=project.pk,
        layer=EPISODE,
        text=text,
        context=context,
        sensitive=False,
        trust="raw",
        security_class="internal",
        page_target="",
        occurred_at=None,
    )


def ranked(project, docs, query) -> list[str]:
    using = backend()
    using.apply(project.pk, docs, (), (), None)
    return [key for key, _ in using.search(project.pk, EPISODE, query, sensitive=True, limit=5)]


def test_a_rare_word_outweighs_a_common_one_said_twice(project, settings, tmp_path):
    settings.INDEX_DIR = tmp_path
    common = [
        doc(project, n, f"deploy notes {n}: deploy went fine, deploy again") for n in range(30)
    ]
    rare = doc(project, 99, "the linkspan ramp was repaired")
    assert ranked(project, [*common, rare], "deploy linkspan")[0] == f"{EPISODE}:99"


def test_the_items_own_words_count_more_than_its_neighbours(project, settings, tmp_path):
    settings.INDEX_DIR = tmp_path
    filler = [doc(project, n, f"routine entry number {n}") for n in range(10)]
    own = doc(project, 50, "the ferry timetable changed", "someone asked about the weather")
    neighbour = doc(project, 51, "someone asked about the weather", "the ferry timetable changed")
    found = ranked(project, [*filler, neighbour, own], "ferry timetable")
    assert found[:2] == [f"{EPISODE}:50", f"{EPISODE}:51"]
