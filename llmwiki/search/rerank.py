"""What a query says beyond its words, for ranking episodes: the dates it names and the
people it asks about.

"What did Nate do for Joanna on 25 May, 2022?" asks about Nate's turns of that day. The
date in an episode's indexed line is words BM25 cannot read as a span, and both names
are words like any other; `retrieval._rerank` lifts the episodes these pick out, the
same way on every backend.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime

from llmwiki.search.backends import WORDS

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
