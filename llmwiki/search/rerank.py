"""The episode candidates, ranked again the same way whichever backend found them.

The backends find candidates by different formulas: Whoosh by BM25F, PostgreSQL by
ts_rank, which knows no document length, so a long turn that says every word once
outranks the short one that answers. On the LoCoMo dev split that cost PostgreSQL
evidence hit@5 0.706 against Whoosh's 0.739. Here every candidate is scored again by
BM25F over its own words and its context (the turn before, as indexed), with the
query's idf from the backend, so the order among candidates no longer depends on the
backend. A query naming a date then lifts the episodes dated within it: "What did Nate
do for Joanna on 25 May, 2022?" asks about that day's turns, and the dates in an
episode's line are words BM25 cannot read as a span.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime

from llmwiki.search import bm25f
from llmwiki.search.backends import _ANALYZER, FIELDS, WORDS

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTH = "|".join(MONTHS)
# "25 May, 2022", "May 25, 2022", "2022-05-25": that day.
_DAY_FIRST = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH}),?\s+(\d{{4}})\b", re.I)
_MONTH_FIRST = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
# "May 2022", "May, 2022": that month.
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),?\s+(\d{{4}})\b", re.I)
# "in May", "during June": that month of any year. Bare "may" is a verb too.
_MONTH_ONLY = re.compile(rf"\b(?:in|during|of|since)\s+({_MONTH})\b", re.I)
# "in 2023": that year.
_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I)


def words(text: str) -> list[str]:
    """The text's terms as the index reads them (Snowball stems, stop words dropped)."""
    return [t.text for t in _ANALYZER(text)]


def bm25f_scores(docs: Sequence[tuple[str, str]], query: str, idf: dict[str, float]) -> list[float]:
    """BM25F of each (text, context) pair for `query`, the fields weighed as the index
    weighs them. Lengths are normalised by the candidates' own average: the index's
    average is not known to every backend, and the order among the candidates is
    what is asked."""
    terms = sorted({t for t in words(query) if t in idf})
    if not docs or not terms:
        return [0.0] * len(docs)
    fields = [[Counter(words(part)) for part in doc] for doc in docs]
    lengths = [[sum(c.values()) for c in doc] for doc in fields]
    averages = [sum(doc[i] for doc in lengths) / len(docs) or 1.0 for i in range(len(FIELDS))]
    scores = []
    for counts, sizes in zip(fields, lengths, strict=True):
        norms = [
            (1 - bm25f.B) + bm25f.B * size / avg for size, avg in zip(sizes, averages, strict=True)
        ]
        score = 0.0
        for t in terms:
            weighted = sum(
                boost * c[t] / norm
                for (_, boost), c, norm in zip(FIELDS, counts, norms, strict=True)
            )
            if weighted:
                score += bm25f.saturated(idf[t], weighted)
        scores.append(score)
    return scores


class DateSpan:
    """The days, months and years a query names, to test an episode's date against."""

    def __init__(self, query: str) -> None:
        self.days: set[date] = set()
        self.months: set[tuple[int, int]] = set()
        self.any_year_months: set[int] = set()
        self.years: set[int] = set()
        rest = query
        for pattern, day in ((_DAY_FIRST, (1, 2, 3)), (_MONTH_FIRST, (2, 1, 3))):
            for m in pattern.finditer(rest):
                found = _date(m[day[2]], MONTHS[m[day[1]].lower()], m[day[0]])
                if found:
                    self.days.add(found)
            rest = pattern.sub(" ", rest)
        for m in _ISO.finditer(rest):
            found = _date(m[1], int(m[2]), m[3])
            if found:
                self.days.add(found)
        rest = _ISO.sub(" ", rest)
        self.months = {(int(m[2]), MONTHS[m[1].lower()]) for m in _MONTH_YEAR.finditer(rest)}
        rest = _MONTH_YEAR.sub(" ", rest)
        self.any_year_months = {MONTHS[m[1].lower()] for m in _MONTH_ONLY.finditer(rest)}
        self.years = {int(m[1]) for m in _YEAR.finditer(rest)}

    def __bool__(self) -> bool:
        return bool(self.days or self.months or self.any_year_months or self.years)

    def holds(self, moment: datetime | None) -> bool:
        if moment is None:
            return False
        day = moment.date()
        return (
            day in self.days
            or (day.year, day.month) in self.months
            or day.month in self.any_year_months
            or day.year in self.years
        )


def _date(year: str, month: int, day: str) -> date | None:
    try:
        return date(int(year), month, int(day))
    except ValueError:
        return None  # "31 June": not a day; the query's words still match


def asked_about(query: str, actors: set[str]) -> set[str]:
    """The actors a query asks about: of those it names, the one named first, with any
    joined to it by "and" ("Do Jon and Gina both dance?").

    A speaker named later is usually whom the first one dealt with: "What did Nate do
    for Joanna?" asks about Nate's turns, not Joanna's. A name counts through any of its
    parts longer than two letters ("user:Maya Lin" is named by "Maya" or "Lin").
    """
    tokens = WORDS.findall(query.lower())
    first: dict[str, int] = {}
    for actor in actors:
        parts = {p for p in WORDS.findall(actor.split(":", 1)[-1].lower()) if len(p) > 2}
        at = [i for i, token in enumerate(tokens) if token in parts]
        if at:
            first[actor] = at[0]
    if not first:
        return set()
    named = sorted(first.items(), key=lambda item: item[1])
    lead, end = {named[0][0]}, named[0][1]
    for actor, at in named[1:]:
        if at == end:  # another actor sharing the name part
            lead.add(actor)
        elif tokens[end + 1 : at] in ([], ["and"]):
            lead.add(actor)
            end = at
        else:
            break
    return lead
