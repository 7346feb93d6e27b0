"""Episodes lifted by the date and the person a query names, and by opening a session.
Runs on whichever backend the database calls for (Whoosh on SQLite, PostgreSQL under
`make test`'s scale-out half)."""

from __future__ import annotations

from llmwiki.search import retrieve
from tests.test_search import OPERATOR, ingest_transcript


def turn(n: int, role: str, content: str, when: str) -> dict:
    return {"id": f"D{n}", "role": role, "content": content, "timestamp": when}


def filler(start: int) -> list[dict]:
    return [
        turn(start + n, "Tom", f"Chatting about the weather again, day {n}.", "2023-03-01T09:00:00")
        for n in range(12)
    ]


def texts(project, query: str) -> list[str]:
    return [h.text for h in retrieve(project, query, caller=OPERATOR, record=False).hits]


def test_a_date_the_query_names_lifts_the_turn_said_that_day(project):
    ingest_transcript(
        project,
        [
            turn(1, "Mel", "We went camping by the lake.", "2023-06-27T10:00:00"),
            turn(2, "Mel", "We went camping by the sea.", "2023-07-17T10:00:00"),
            *filler(3),
        ],
    )
    assert texts(project, "Where did Mel go camping in July?")[0] == "We went camping by the sea."
    assert texts(project, "Where did Mel go camping in June?")[0] == "We went camping by the lake."


def test_the_person_a_question_asks_about_leads_not_the_one_named_after(project):
    # Both turns hold both names and "baked"; only who said it differs.
    ingest_transcript(
        project,
        [
            turn(1, "Joanna", "Nate, I loved the cake you baked.", "2023-05-25T15:00:00"),
            turn(2, "Nate", "Joanna, I baked a cake for you.", "2023-05-25T15:00:01"),
            *filler(3),
        ],
    )
    assert texts(project, "What did Nate bake for Joanna?")[0] == "Joanna, I baked a cake for you."
    assert (
        texts(project, "What did Joanna say Nate baked?")[0] == "Nate, I loved the cake you baked."
    )


def test_the_turn_opening_a_session_wins_a_near_tie(project):
    # Two turns matching alike; the later one opens a session, a day after the last turn.
    ingest_transcript(
        project,
        [
            *filler(1),
            turn(20, "Maria", "I joined a yoga class.", "2023-03-01T09:00:30"),
            turn(21, "John", "Bye for now.", "2023-03-01T09:00:31"),
            turn(30, "Maria", "I joined a yoga class!", "2023-04-07T10:00:00"),
            *[
                turn(31 + n, "John", f"Nice, tell me more about it {n}.", "2023-04-07T10:00:01")
                for n in range(3)
            ],
        ],
    )
    hits = retrieve(project, "yoga class", caller=OPERATOR, record=False).hits
    assert hits[0].occurred_at.month == 4
    assert hits[1].occurred_at.month == 3
