"""What a query says beyond its words, for ranking episodes: the dates it names and whom
it asks about."""

from __future__ import annotations

from datetime import UTC, date, datetime

from llmwiki.search.rerank import DateSpan, asked_about


def test_a_date_span_reads_days_months_and_years():
    span = DateSpan("What did Nate do on 25 May, 2022, and on October 13, 2023 or 2024-01-02?")
    assert span.days == {date(2022, 5, 25), date(2023, 10, 13), date(2024, 1, 2)}
    assert not span.months and not span.years
    span = DateSpan("What did Maria start in December 2023, in June and in 2021?")
    assert span.months == {(2023, 12)}
    assert span.any_year_months == {6}
    assert span.years == {2021}


def test_a_date_span_holds_the_moments_within_it():
    span = DateSpan("Where did Mel go camping in July?")
    assert span.holds(datetime(2023, 7, 17, 14, 31, tzinfo=UTC))
    assert not span.holds(datetime(2023, 6, 27, tzinfo=UTC))
    assert not span.holds(None)


def test_no_date_named_no_span():
    assert not DateSpan("What may Caroline research next?")  # "may" the verb
    assert not DateSpan("What happened on 31 June, 2023?").days  # no such day


def test_the_person_named_first_is_whom_a_question_asks_about():
    actors = {"user:Nate", "user:Joanna", "user:Maria Lopez"}
    assert asked_about("What did Nate do for Joanna?", actors) == {"user:Nate"}
    assert asked_about("What advice does Joanna give Nate?", actors) == {"user:Joanna"}


def test_people_joined_by_and_are_asked_about_together():
    actors = {"user:Jon", "user:Gina", "user:Nate"}
    assert asked_about("Do Jon and Gina both dance, unlike Nate?", actors) == {
        "user:Jon",
        "user:Gina",
    }


def test_a_name_counts_through_any_of_its_parts():
    assert asked_about("What does Lopez cook?", {"user:Maria Lopez"}) == {"user:Maria Lopez"}
    assert asked_about("What do we know?", {"user:Maria Lopez"}) == set()
