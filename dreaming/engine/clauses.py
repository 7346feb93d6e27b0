"""Cut a sentence that states several facts into one unit per fact.

A semicolon joins clauses that could each have been a sentence of their own ("The report
job moved to the new host; invoice exports land in the archive bucket."). Read as one
unit, the two facts share one fate: when a later log contests the first, the whole line
becomes an open question and drags the uncontested second with it. Cut apart, each clause
is grouped, routed, conflict-checked and gated on its own.

The cut is decided by structure, never by a phrasing. Both clauses must stand alone: long
enough to say something, holding a finite verb (an auxiliary, a verb inflected after the
word that could be its subject) or giving an order. The second must open on its own
subject or an order, not on a word that leans on the first (an article, a pronoun, a
conjunction: "…; the limits live in …", "…; we do not …"), must point back at nothing
("… consumes its stream"), and must share no subject term with the first, since two
clauses about one thing are one fact told in two steps. Anything else stays attached to
the clause before it, so "Avoid globals; prefer arguments." and a list after a label stay
one unit."""

from __future__ import annotations

import re

from .blocks import sentences
from .text import subject_terms, word_list
from .worth import _AUX, _CLOSED, imperative

# Fewer words than this say too little to be approved on their own ("Avoid globals").
MIN_CLAUSE_WORDS = 4

# Connectives that open a clause drawing on the one before it ("…; hence …"), besides the
# closed-class words (``_CLOSED``: articles, pronouns, conjunctions), which do the same.
_CONTINUES = frozenset(word_list("nor thus hence therefore otherwise else whereas plus"))
# Words that point back wherever they stand in a clause: "…; the worker consumes its
# stream", "…; inside that window, the desk decides".
_POINTS_BACK = frozenset(word_list("it its they them their that these those this such"))
_CODE_SPAN_RE = re.compile(r"`[^`]*`")
_WORDS_RE = re.compile(r"[A-Za-z][\w'’-]*")
_OPEN, _CLOSE = "([{", ")]}"


def _cut_points(sentence: str) -> list[int]:
    """Where a semicolon followed by a space separates two clauses: outside brackets and
    code spans, where a semicolon belongs to what is quoted."""
    points: list[int] = []
    depth = 0
    code = False
    for i, ch in enumerate(sentence):
        if ch == "`":
            code = not code
        elif code:
            continue
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and sentence[i + 1 : i + 2].isspace():
            points.append(i)
    return points


def _has_verb(words: list[str]) -> bool:
    """Does the clause hold a finite verb? An auxiliary or copula anywhere; else a word
    inflected in "-s" or "-ed" in the run of content words the clause opens on, where the
    verb follows its subject ("report job moved", "exports land"). After a
    closed-class word such a word is a noun ("on two spare nodes", "with plugins")."""
    low = [w.lower() for w in words]
    if any(w in _AUX for w in low):
        return True
    for w in low[1:]:
        if w in _CLOSED:
            return False
        if len(w) > 3 and (w.endswith("ed") or (w[-1] == "s" and w[-2] not in "siu")):
            return True
    return False


def stands_alone(clause: str) -> bool:
    """Could this clause be read as a sentence of its own? Long enough to say something,
    and holding a finite verb or giving an order."""
    plain = _CODE_SPAN_RE.sub(" X ", clause).strip(" ;,.*_")
    words = _WORDS_RE.findall(plain)
    if len(words) < MIN_CLAUSE_WORDS:
        return False
    # An order is written as one, capitalised: a lower-case clause opening on a bare
    # word is as often a label or a noun ("rollout to half the team on Friday").
    return _has_verb(words) or (plain[:1].isupper() and imperative(plain))


def _apart(head: str, tail: str) -> bool:
    """Do two clauses state two facts? Each stands alone; the second opens on its own
    subject or an order, points back at nothing, and shares no subject term with the
    first: two clauses about one thing ("… `cacheKey` …; … derives `cacheKey`
    …") are one fact told in two steps."""
    if not (stands_alone(head) and stands_alone(tail)):
        return False
    words = _WORDS_RE.findall(_CODE_SPAN_RE.sub(" X ", tail).lower())
    first = re.split(r"['’]", words[0])[0]  # "they'd" leans on the clause as "they" does
    # A closed-class word first ("the limits live …", "we do not …", "every entry …")
    # leans on the clause before, and so does a connective or an "-ing" form ("ensuring
    # …", "raising one …"); a word pointing back anywhere does too ("… consumes its …").
    if first in _CLOSED or first in _CONTINUES or first.endswith("ing"):
        return False
    if not _POINTS_BACK.isdisjoint(words):
        return False
    return subject_terms(head).isdisjoint(subject_terms(tail))


def clauses(sentence: str) -> list[str]:
    """The sentence's clauses that stand alone, each as written (without the semicolon
    that joined it to the next); a clause that does not stand alone stays with the one
    before it, and a sentence with no such cut comes back whole."""
    if "; " not in sentence or sentence.lstrip()[:1] == "|":
        return [sentence]  # no clause break; a table row's cells are read under its header
    points = _cut_points(sentence)
    if not points:
        return [sentence]
    spans: list[tuple[int, int]] = []
    start = 0
    for p in [*points, len(sentence)]:
        spans.append((start, p))
        start = p + 1
    out: list[tuple[int, int]] = [spans[0]]
    for a, b in spans[1:]:
        head = sentence[out[-1][0] : out[-1][1]]
        if _apart(head, sentence[a:b]):
            out.append((a, b))
        else:
            out[-1] = (out[-1][0], b)
    if len(out) == 1:
        return [sentence]
    return [sentence[a:b].strip() for a, b in out]


def statements(text: str) -> list[list[str]]:
    """A block's text as the units it states, in runs that belong together: its sentences
    form one run, as a fact is often spread over them ("Decided: reports stay weekly. No
    daily digest this year."); a clause cut off (``clauses``) opens a run of its own."""
    runs: list[list[str]] = []
    for s in sentences(text):
        for k, part in enumerate(clauses(s)):
            if runs and k == 0:
                runs[-1].append(part)
            else:
                runs.append([part])
    return runs
