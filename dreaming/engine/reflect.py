"""REM: recurring themes across days and the lifecycle of each topic.

Lifecycle markers ("Closed:", "done", "shipped", "archived", "wontfix", "snoozed until",
"waiting on", "blocked by", "TODO", ticked/unticked checkboxes) are read per sentence. A
marker's *topic* is the clause it governs ("Closed: billing-export migration" → {billing-
export, migration}, at most four terms, nearest first); a marker applies to a fact cluster
when the cluster's core terms hold the topic (all of a short topic, two thirds of a longer
one) and host and environment agree. Events of one topic are folded once and shared by
every cluster they apply to, found by intersecting postings rather than scanning; a topic
whose rarest term is a core term of more than ``BROAD`` facts is too broad to name a line
of work and speaks only for its own sentence. The latest marker wins, with one exception
taken from signal-dreaming's lifecycle guard: done / closed / archived are sticky, and only
an explicit "reopened" brings a topic back — a casual later mention, or a stale TODO
re-pasted from an old list, does not.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from itertools import combinations, pairwise

import numpy as np

from llmwiki.vocabulary import RECURRENCE

from .text import TOKEN_RE, Features, subject_terms
from .types import TERMINAL_LIFECYCLES, Theme

_MARKERS: list[tuple[str, re.Pattern[str]]] = [
    ("reopened", re.compile(r"\bre-?open(?:ed|ing|s)?\b", re.I)),
    (
        "closed",
        re.compile(
            r"^closed\b|\bclosed\s*[:\-–—]|\b(?:is|was|been|got|now|marked(?: as)?)\s+closed\b"
            r"|\bclos(?:ed|ing) (?:this |it )?out\b|\bwon'?t[- ]?fix\b|\bwontfix\b",
            re.I,
        ),
    ),
    (
        "archived",
        re.compile(
            r"^archived?\b|\barchived\s*[:,;\-–—]"
            r"|\b(?:is|was|been|got|now|marked(?: as)?)\s+archived\b",
            re.I,
        ),
    ),
    (
        "done",
        re.compile(
            r"^(?:done|finished|completed|resolved|wrapped up)\b"
            r"|\b(?:done|finished|completed|resolved)\s*[:\-–—]"
            r"|\b(?:is|are|was|were|been|got|now|marked(?: as)?)\s+"
            r"(?:done|finished|completed|resolved|fixed)\b|\bshipped\b",
            re.I,
        ),
    ),
    (
        "snoozed",
        re.compile(
            r"\bsnoozed?\b(?:\s+until\s+(?P<until>\d{4}-\d{2}-\d{2}))?|\bon hold\b|\bpaused\b",
            re.I,
        ),
    ),
    ("waiting", re.compile(r"\bwaiting (?:on|for)\b|\bblocked (?:by|on)\b", re.I)),
    ("todo", re.compile(r"\btodo\b|\bfixme\b|\bin progress\b", re.I)),
]
_PRECEDENCE = {name: i for i, (name, _) in enumerate(_MARKERS)}
# "Name: closed the pilot." reports, as a log line would, who said it: the label is no
# part of what was closed, and the marker opens what follows it.
_LABEL_RE = re.compile(r"^[^:.?!]{1,40}:\s+(?=\w)")
_CLOCK_RE = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?(?:\s*[–—-]\s*\d{1,2}:\d{2})?\s+")
# One pass finds the earliest marker; at equal positions the regex engine tries the
# alternatives in order, which is the precedence above.
_ANY_MARKER = re.compile("|".join(f"(?P<{name}>{rx.pattern})" for name, rx in _MARKERS), re.I)
_CLAUSE_RE = re.compile(r"[,;:()\[\]—–]|\s-\s|\bbut\b|\bbecause\b|\bso\b")


@dataclass(frozen=True, slots=True)
class Marker:
    """A lifecycle marker found in one sentence."""

    state: str  # reopened | closed | archived | done | snoozed | waiting | todo
    topic: frozenset[str]
    until: date | None = None


# Literal substrings each marker pattern cannot match without. Testing them first means a
# sentence runs only the one or two patterns it could match, not the whole alternation.
_MARKER_CUES: dict[str, tuple[str, ...]] = {
    "reopened": ("open",),
    "closed": ("clos", "fix"),
    "archived": ("archiv",),
    "done": ("done", "finish", "complet", "resolv", "fixed", "shipped", "wrapped"),
    "snoozed": ("snooz", "hold", "paus"),
    "waiting": ("waiting", "blocked"),
    "todo": ("todo", "fixme", "progress"),
}


def find_marker(sentence: str, checkbox: str | None = None) -> Marker | None:
    """Return the lifecycle marker of a sentence (earliest in the text wins), or None.

    A log line's clock time is not part of what it says: "08:15 closed OPS-150." opens
    with its marker just as "closed OPS-150." does.
    """
    if sentence[:1].isdigit():
        sentence = _CLOCK_RE.sub("", sentence, count=1)
    found = _find(sentence)
    label = None if found else _LABEL_RE.match(sentence)
    if label:
        sentence = sentence[label.end() :]
        found = _find(sentence)
    if found is None:
        if checkbox is None:
            return None
        state = "done" if checkbox == "x" else "todo"
        return Marker(state, _topic(sentence, 0, 0))
    state, m = found
    until = None
    if state == "snoozed" and m.group("until"):
        try:
            until = date.fromisoformat(m.group("until"))
        except ValueError:
            until = None
    return Marker(state, _topic(sentence, m.start(), m.end()), until)


def _find(sentence: str) -> tuple[str, re.Match[str]] | None:
    low = sentence.lower()
    best: tuple[int, int, str, re.Match[str]] | None = None
    for rank, (name, rx) in enumerate(_MARKERS):
        if not any(c in low for c in _MARKER_CUES[name]):
            continue
        m = rx.search(sentence)
        if m and (best is None or (m.start(), rank) < best[:2]):
            best = (m.start(), rank, name, m)
    return None if best is None else (best[2], best[3])


def _topic(sentence: str, start: int, end: int) -> frozenset[str]:
    # The clause holding the marker names what it is about; when the marker is a label
    # ("Closed: X, ...") that clause is empty and the next one carries the topic.
    bounds = [0] + [m.end() for m in _CLAUSE_RE.finditer(sentence)] + [len(sentence) + 1]
    spans = list(pairwise(bounds))
    for idx, (lo, hi) in enumerate(spans):
        if lo <= start < hi or (start == 0 and idx == 0):
            clause = sentence[lo:hi]
            if end > start:
                clause = clause.replace(sentence[start:end], " ", 1)
            terms = subject_terms(clause)
            if not terms and idx + 1 < len(spans):
                nlo, nhi = spans[idx + 1]
                terms = subject_terms(sentence[nlo:nhi])
            # "Closed the turnstile work": what was closed is the turnstile, not "work".
            terms = (terms - _ACTIVITY_NOUNS) or terms
            return frozenset(_nearest_terms(terms, sentence, start, 4))
    return frozenset()


# Nouns naming the kind of effort rather than its subject ("the X work", "the X job").
_ACTIVITY_NOUNS = frozenset(
    ("work", "job", "jobs", "task", "tasks", "project", "effort", "install", "installation")
)


def _nearest_terms(terms: frozenset[str], sentence: str, at: int, cap: int) -> list[str]:
    # A marker governs the words next to it; far words in a run-on log line do not name
    # the topic, and every extra term makes the topic match fewer restatements.
    if len(terms) <= cap:
        return list(terms)
    low = sentence.lower()

    def distance(t: str) -> tuple[int, str]:
        pos = low.find(t)
        return (abs(pos - at) if pos >= 0 else len(low), t)

    return sorted(terms, key=distance)[:cap]


@lru_cache(maxsize=4096)
def heading_state(heading: str) -> str | None:
    """The state a heading gives every item under it, when the heading names only a state.

    "## Completed" or "### Done" files its items as finished work; "## In progress" as
    open work. A heading that names a subject as well ("Done: billing export") is a
    marker about that subject, read as any sentence is, not a label for a list.
    """
    if not heading:
        return None
    m = find_marker(heading)
    return m.state if m is not None and not m.topic else None


# A document's own status field ("Status: Done", "**Status:** Archived"): the state of
# the whole document, as a task or ticket file records it.
_STATUS_RE = re.compile(r"^\W*status\W*:\W*(?P<value>\w.*)$", re.I | re.M)


def status_field(content: str) -> str | None:
    """The state a document's status field gives it, if the text holds one."""
    m = _STATUS_RE.search(content)
    if m is None:
        return None
    marker = find_marker(m.group("value"))
    return marker.state if marker is not None else None


@dataclass(frozen=True, slots=True)
class Event:
    """A marker asserted at a time, with the features used by the identity guard."""

    marker: Marker
    when: datetime
    episode_id: int
    unit: int
    features: Features


@dataclass(frozen=True, slots=True)
class TopicState:
    """The folded lifecycle of one topic (all events sharing a topic term set)."""

    state: str
    decided: Event | None
    last_reopen: tuple[datetime, int] | None


def _order(ev: Event) -> tuple[datetime, int, int]:
    return ev.when, ev.episode_id, _PRECEDENCE[ev.marker.state]


def fold(events: Sequence[Event]) -> TopicState:
    """Fold one topic's events in time order: latest wins, terminal states are sticky."""
    state = "active"
    decided: Event | None = None
    last_reopen = None
    for ev in sorted(events, key=_order):
        new = ev.marker.state
        if new == "reopened":
            last_reopen = (ev.when, ev.episode_id)
        if state in TERMINAL_LIFECYCLES and new != "reopened":
            continue  # closed work stays closed until someone says "reopened"
        state = "active" if new in ("reopened", "todo") else new
        decided = ev
    return TopicState(state, decided, last_reopen)


def combine(states: Sequence[TopicState], now: datetime) -> tuple[str, Event | None]:
    """Combine the topics that apply to one cluster into its lifecycle.

    Each topic is folded on its own (cheap, shared by every cluster it applies to); across
    topics a terminal state wins unless a "reopened" came after it, otherwise the most
    recent decision wins — the same answer as folding all events together whenever the
    topics do not interleave reopen/close pairs.
    """
    decided = [s for s in states if s.decided is not None]
    if not decided:
        return "active", None
    terminal = [s for s in decided if s.state in TERMINAL_LIFECYCLES]
    if terminal:
        last = max(terminal, key=lambda s: _order(s.decided))
        when = (last.decided.when, last.decided.episode_id)
        if not any(s.last_reopen and s.last_reopen > when for s in states):
            return last.state, last.decided
        decided = [s for s in decided if s.state not in TERMINAL_LIFECYCLES]
        if not decided:
            return "active", None
    latest = max(decided, key=lambda s: _order(s.decided))
    state = latest.state
    until = latest.decided.marker.until
    if state == "snoozed" and until and until <= now.date():
        state = "active"  # the snooze ran out
    return state, latest.decided


def lifecycle_for(events: Sequence[Event], now: datetime) -> tuple[str, Event | None]:
    """Fold events of a single topic into (state, deciding event)."""
    return combine([fold(events)], now)


BROAD = 1000  # see TopicIndex.clusters_for


def topic_need(k: int) -> int:
    """How many of a k-term topic a cluster must hold for the marker to apply to it.

    Short topics need every term: "Closed: cleanup for worker on app-3" must not close
    the fact "worker runs on app-3" through two shared words.
    """
    return k if k <= 3 else math.ceil(2 * k / 3)


class TopicIndex:
    """Find the clusters whose core terms cover a topic, by intersecting postings."""

    def __init__(self, cores: Sequence[set[str] | frozenset[str]], terms: set[str]) -> None:
        # Only terms that occur in some topic are indexed: everything else is never asked.
        self._postings: dict[str, set[int]] = {t: set() for t in terms}
        postings = self._postings
        for ci, core in enumerate(cores):
            for t in terms.intersection(core):
                postings[t].add(ci)

    def clusters_for(self, topic: frozenset[str]) -> set[int] | None:
        """Return clusters holding the topic's terms (two thirds of them past three).

        Returns None when the topic is too broad to name one line of work: even its
        rarest term is a core term of more than ``BROAD`` facts. Such a marker ("Done:
        deploy") then speaks only for its own sentence's cluster. Besides being the
        cautious reading, this bounds the work per marker, which otherwise grows with
        the corpus and made lifecycle quadratic.
        """
        if not topic:
            return set()
        need = topic_need(len(topic))
        lists = sorted((self._postings.get(t, set()) for t in topic), key=len)
        if len(lists[0]) > BROAD:
            return None
        if need == len(lists):
            return set.intersection(*lists)
        out: set[int] = set()
        # Combinations come smallest-first; one whose rarest list is already broad adds
        # only cost, never a specific match.
        for combo in combinations(lists, need):
            if combo[0] and len(combo[0]) <= BROAD:
                out |= set.intersection(*combo)
        return out


def _recurs(low: str) -> bool:
    return "on and off" in low or not RECURRENCE.isdisjoint(TOKEN_RE.findall(low))


def recurring_identifiers(
    idents: Sequence[frozenset[str]],
    texts: Sequence[str],
    days: Callable[[int], set[int]],
    min_days: int,
) -> list[tuple[str, list[int]]]:
    """Find identifiers that keep coming back as a problem; ``(term, units)`` pairs.

    A recurring *theme* (a flaky test, a table that keeps filling up) is named by an
    identifier, and its mentions are scattered over many facts: "CI red: `test_x`
    again", "opened TW-1 for flaky test_x", "test_x: tie on starts_at confirmed". An
    identifier qualifies when, on at least ``min_days`` distinct days, a sentence names it
    together with a recurrence cue ("again", "still", "flaky", "on and off", …), and at
    least a third of its sentences carry such a cue, so an identifier merely mentioned
    every day (a table, a setting) does not turn into a blob of everything said near it.
    Inputs are per unit (``days(u)`` gives a unit's days); each unit goes to at most one
    theme, the most widespread first.
    """
    mentions: dict[str, list[int]] = {}
    cued: dict[str, list[int]] = {}
    for u, terms in enumerate(idents):
        low = texts[u].lower()
        cue = _recurs(low)
        for t in terms:
            mentions.setdefault(t, []).append(u)
            if cue:
                cued.setdefault(t, []).append(u)
    found = []
    for t, units in cued.items():
        # Cheap counts first: too few cued sentences can never span enough days.
        if len(units) < min_days or len(units) * 3 < len(mentions[t]):
            continue
        if len({d for u in units for d in days(u)}) >= min_days:
            all_days = {d for u in mentions[t] for d in days(u)}
            found.append((-len(all_days), t))
    out: list[tuple[str, list[int]]] = []
    taken: set[int] = set()
    for _, t in sorted(found):
        units = [u for u in mentions[t] if u not in taken]
        taken.update(units)
        if len({d for u in units for d in days(u)}) >= min_days:
            out.append((t, units))
    return out


def term_themes(
    unit_terms: Sequence[Sequence[str]],
    unit_days: Sequence[Sequence[int]],
    unit_counts: Sequence[int],
    min_days: int,
    limit: int,
) -> list[Theme]:
    """Return terms seen on at least ``min_days`` distinct days, most widespread first."""
    vocab: dict[str, int] = {}
    mentions: list[int] = []
    term_ids: list[int] = []
    days: list[int] = []
    for terms, ds, count in zip(unit_terms, unit_days, unit_counts, strict=True):
        for t in terms:
            tid = vocab.get(t)
            if tid is None:
                tid = vocab[t] = len(vocab)
                mentions.append(0)
            mentions[tid] += count
            term_ids.extend([tid] * len(ds))
            days.extend(ds)
    if not term_ids:
        return []
    tid_arr = np.asarray(term_ids, dtype=np.int64)
    day_arr = np.asarray(days, dtype=np.int64)
    day_arr -= day_arr.min()
    span = int(day_arr.max()) + 1
    # Distinct (term, day) pairs in one vectorised pass instead of a set per term.
    uniq = np.unique(tid_arr * span + day_arr)
    n_days = np.bincount(uniq // span, minlength=len(vocab))
    names = list(vocab)
    ok = np.flatnonzero(n_days >= min_days)
    ranked = sorted(ok.tolist(), key=lambda t: (-int(n_days[t]), -mentions[t], names[t]))
    return [Theme(names[t], "term", int(n_days[t]), int(mentions[t])) for t in ranked[:limit]]


# ---- work reported done ---------------------------------------------------------------
# A log reports finished work by opening on the past form of its verb ("Pruned stale keys",
# "**Cache:** Pruned …"); an open item names the same work by the bare verb ("Prune the
# keys", "Decide whether to prune …"). The report closes the item when both name the same
# verb and at least two of the same other terms, half of what the report names (an item
# is not closed by a report of other work of its kind: "Added tests for X").
_REPORT_RE = re.compile(
    r"^\W*(?:(?P<label>[A-Za-z][\w /-]{0,30}?)\W{0,2}:\W*\s+)?(?P<verb>[A-Za-z]+)\b"
)
_ITEM_VERBS_RE = re.compile(r"^\W*(?P<verb>[A-Za-z]+)\b(?:\s+\w+){0,2}?\s+to\s+(?P<then>[a-z]+)\b")
_REPORT_CLAUSE_RE = re.compile(r"[;:—–(]|\s-\s")
REPORT_SHARED = 2


def done_report(sentence: str) -> tuple[str, frozenset[str]] | None:
    """``(verb, terms)`` when a sentence reports work done: it opens (after a "Label:") on
    a past form; the terms are the label's and those of the verb's own clause."""
    m = _REPORT_RE.match(sentence)
    if m is None:
        return None
    verb = m.group("verb")
    if not (verb.lower().endswith("ed") and verb[1:].islower() and len(verb) > 4):
        return None
    clause = _REPORT_CLAUSE_RE.split(sentence[m.end() :], maxsplit=1)[0]
    terms = subject_terms(f"{m.group('label') or ''} {clause}")
    return verb.lower(), terms - {verb.lower()}


def item_actions(sentence: str) -> list[str]:
    """The bare verbs an open item names: its opening verb and one it goes on to
    ("Decide whether to clean …": decide, clean)."""
    m = _REPORT_RE.match(sentence)
    if m is None or m.group("label"):
        return []
    verbs = [m.group("verb").lower()]
    then = _ITEM_VERBS_RE.match(sentence)
    if then:
        verbs.append(then.group("then"))
    return verbs


def past_forms(verb: str) -> tuple[str, ...]:
    """The regular past forms a bare verb may take ("clean" → "cleaned", "stop" →
    "stopped", "remove" → "removed", "copy" → "copied")."""
    forms = [verb + "ed", verb + "d", verb + verb[-1] + "ed"]
    if verb.endswith("y"):
        forms.append(verb[:-1] + "ied")
    return tuple(forms)
