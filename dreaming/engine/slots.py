"""Typed slots: what a statement of state sets, as (subject, attribute, value).

"The staging database runs PostgreSQL 16 on db-staging-2" sets two slots of one subject
(the staging database): the version of a named product (``version:postgres`` = 16) and
the host it is on (``host`` = db-staging-2). Two statements contradict each other when
they give one subject's one attribute two values that cannot both hold; statements that
share a word or two but not the attribute never do.

The reading is structural, not a list of phrasings:

* the **subject** is what stands before the statement's verb of state (a copula, "=",
  or a verb saying where or how something is: "runs", "lives", "listens"); environments
  and hosts named there *qualify* it, so the production and the staging database, or
  the cache on two hosts, are never one subject. A subject naming a version ("worker
  v1.4 is …") is one release among several, not a setting.
* the **value** is typed, read from the predicate: a version after a product name
  ("Postgres 15"), a number labelled by the noun before it ("port 6380"), a quantity
  with its unit (money, percent, duration, size), a schedule (weekday, clock time,
  frequency), a host, an environment, or a location (a path after a locative
  preposition, or in an apposition ``Name (path)``; a name after a locative, "happens on
  our Chatly server", which is held only against a move of the same thing, since one
  thing may be in several named places at once).
* a **reading** (an estimate, a measurement, a count, an event, a status) sets nothing:
  values that merely move are a series, not a contradiction.

Changes told in software notes are read here too (``changes``), with their verbs from
``llmwiki.vocabulary``: where a thing went ("X moved to Y", "moved X into Y", "X now lives
in Y": its location), what replaced it ("replaced X with Y in P": P's implementation),
whether it is still there ("removed `X`" against "… into X …": its presence) and who does
its work ("X handles …" against "X now delegates … to Y": its owner). Decisions to
use a product ("moved from X to Y", "do not use X") are read by ``conflicts.statements``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llmwiki.vocabulary import (
    CHANGE_DELEGATE,
    CHANGE_DESTINATION,
    CHANGE_MOVE,
    CHANGE_REMOVE,
    CHANGE_REPLACE,
    PERFORMS_ITSELF,
)

from .dedupe import UnionFind, jaccard
from .disputes import names_setting, quantities
from .similar import MIN_SHARED_TERMS, stem
from .text import (
    CAP,
    DATE,
    ENV,
    HOST,
    IDENT,
    MARK,
    NAMEY,
    NUM,
    STOP,
    WEAK,
    Features,
    token_info,
    word_list,
)

# Verbs that link a subject to its state; an event verb ("deployed") or a status word
# ("green") makes the sentence a report of the day instead.
_STATE_VERBS = frozenset(
    word_list(
        "is are = runs run lives live listens listen serves serve sits sit stays happens happen "
        "stay points point stores store located hosted kept held defined declared"
    )
)
_LOCATIVE = frozenset(word_list("in on at under inside within from"))
_WEEKDAYS = {
    d[:3]: d[:3] for d in word_list("monday tuesday wednesday thursday friday saturday sunday")
} | {d: d[:3] for d in word_list("monday tuesday wednesday thursday friday saturday sunday")}
_WEEKDAYS |= {d + "s": d[:3] for d in word_list("monday tuesday wednesday thursday friday")}
_WEEKDAYS |= {d + "s": d[:3] for d in word_list("saturday sunday")}
_FREQUENCY = frozenset(word_list("every daily nightly weekly hourly monthly yearly each"))
_CLOCK_RE = re.compile(r"^\d{1,2}:\d{2}(?:[ap]m)?$", re.I)
_TOKEN_RE = re.compile(r"`[^`]{1,120}`|[\w.+#/@$€£%:~'-]+|=|[(),;]|[—–]")
# A clause ends at these; a value after one belongs to another statement.
_CLAUSE_END = frozenset((",", ";", "—", "–", "(", ")"))
# Before a value these make it a reading ("about 40 ms", "peaks at", "took 3 h").
_READING = frozenset(
    word_list(
        "about around roughly approx approximately nearly almost peak peaks peaked median "
        "mean average avg max maximum min minimum took takes taking estimated projected ~"
    )
)
# What a statement is not when it reports rather than sets: an event or a status.
_REPORT = frozenset(
    word_list(
        "deployed released upgraded bumped restarted installed merged shipped failed "
        "green red passed passing failing flaky busy idle down stuck broken timed timeout "
        "pending queued"
    )
)
_NOT_VALUE_WORD = STOP | WEAK | MARK | DATE
_HOST_RE = re.compile(r"[a-z][a-z0-9.-]*[a-z0-9]")


@dataclass(frozen=True, slots=True)
class Slot:
    subject: frozenset[str]  # stemmed terms naming what the statement is about
    scope: frozenset[str]  # environments and hosts qualifying the subject
    attribute: str  # "version:postgres", "port", "schedule", "host", "location", …
    value: str  # canonical, compared only with values of the same attribute
    changed: bool = False  # told as a change ("moved to", "now lives in")
    was: str = ""  # the value a replacement left behind ("replaced X with Y": X)
    named: bool = False  # a location given by a name ("on our Chatly server"), not a path


def _tokens(sentence: str) -> list[str]:
    return [t.strip("`").strip() if t.startswith("`") else t for t in _TOKEN_RE.findall(sentence)]


def _info(tok: str) -> tuple[str, int]:
    tok = tok.strip(".:!?*\"'")
    return token_info(tok) if tok else ("", STOP)


def _is_path(tok: str) -> bool:
    t = tok.strip(".,:;!?*\"'")
    if t[:1] == "@" or "://" in t:
        return False  # a scoped package or a URL names no place in the tree
    if "/" in t and any(c.isalpha() for c in t):
        return True
    return bool(_info(t)[1] & IDENT) and "." in t and not t[0].isdigit()


def _path(tok: str) -> str:
    return tok.strip(".,:;!?*\"'").lower().removeprefix("./").rstrip("/")


def _subject(tokens: Sequence[str]) -> tuple[frozenset[str], frozenset[str]] | None:
    """Subject terms and qualifiers of the words before the verb; None for a release."""
    terms: set[str] = set()
    scope: set[str] = set()
    for tok in tokens:
        if tok in _CLAUSE_END:
            terms.clear()
            scope.clear()
            continue
        canon, flags = _info(tok)
        if not canon:
            continue
        if flags & (HOST | ENV):
            scope.add(canon)
        elif flags & NUM:
            return None
        elif not flags & (STOP | WEAK | MARK | DATE) and len(canon) > 1:
            terms.add(stem(canon) if canon.isalpha() else canon)
    if not terms and not scope:
        return None
    return frozenset(terms), frozenset(scope)


def _values(pred: Sequence[str], sentence: str) -> list[tuple[str, str]]:
    """The typed values of a predicate (its words up to the end of the clause)."""
    out: list[tuple[str, str]] = []
    schedule: list[str] = []
    hosts: list[str] = []
    for k, tok in enumerate(pred):
        low = tok.lower().strip(".,:;!?")
        prev = pred[k - 1].lower().strip(".,:;!?") if k else ""
        if low in _WEEKDAYS:
            schedule.append(_WEEKDAYS[low])
            continue
        if _CLOCK_RE.match(low):
            schedule.append(low)
            continue
        if low in _FREQUENCY and low != "every" and low != "each":
            schedule.append(low)
            continue
        if prev in _READING:
            continue
        canon, flags = _info(tok)
        if _is_path(tok) and (prev in _LOCATIVE or k == 0):
            out.append(("location", _path(tok)))
        elif flags & (CAP | NAMEY) and flags == flags & (CAP | NAMEY) and _placed(pred, k):
            # A named place ("happens on our Chatly server"): compared only with a move
            # of the same thing (``clashes``), since a thing may be in several places.
            out.append(("place", canon))
        elif flags & HOST and (prev in _LOCATIVE or hosts) and _HOST_RE.fullmatch(canon):
            hosts.append(canon)
        elif flags & ENV and not flags & HOST:
            out.append(("environment", canon))
        elif flags & NUM and canon[:1].isdigit() and k:
            nxt = pred[k + 1].lower() if k + 1 < len(pred) else ""
            if nxt[:1].isalpha() and nxt not in _LOCATIVE and not _info(nxt)[1] & (STOP | WEAK):
                continue  # "9 workers": a count of something, or a quantity with a unit
            label, lflags = _info(pred[k - 1])
            if lflags & (_NOT_VALUE_WORD | NUM | HOST) or not label.isalpha():
                continue
            if pred[k - 1][:1].isupper():
                # A number after a name is that product's version ("Postgres 15"); after
                # a common noun it is the value that noun labels ("port 6380").
                out.append(("version:" + label, canon))
            else:
                out.append((stem(label), canon))
    if schedule:
        out.append(("schedule", " ".join(schedule)))
    if hosts:
        out.append(("host", " ".join(sorted(set(hosts)))))
    return out


_DETERMINERS = frozenset(word_list("the a an our their its his her my your this that"))


def _placed(pred: Sequence[str], k: int) -> bool:
    """Is word ``k`` a named place: after a locative, past determiners ("on our …"),
    and not a product given its version ("on Postgres 15")?"""
    if k + 1 < len(pred) and _info(pred[k + 1])[1] & NUM:
        return False
    j = k - 1
    while j >= 0 and pred[j].lower() in _DETERMINERS:
        j -= 1
    return j >= 0 and pred[j].lower() in _LOCATIVE


def may_set(sentence: str, f: Features) -> bool:
    """Whether a sentence could set a slot (cheap enough for every sentence): every typed
    value holds a digit, a path, a bracket, code, a named environment or host, a change
    verb, or a name where a verb of state places something."""
    return bool(
        f.values
        or f.hosts
        or f.envs
        or "/" in sentence
        or "(" in sentence
        or may_change(sentence)
        or (f.names and not _STATE_VERBS.isdisjoint(sentence.lower().split()))
    )


def slots(sentence: str) -> list[Slot]:
    """The slots one sentence sets (empty for most sentences: events, readings, chatter)."""
    if sentence.rstrip().endswith("?"):
        return []
    tokens = _tokens(sentence)
    low = [t.lower().strip(".,:!?") for t in tokens]
    out = changes(sentence)
    if not _REPORT.isdisjoint(low):
        return out
    verb = next((k for k, t in enumerate(low) if t in _STATE_VERBS), None)
    if verb is not None:
        subj = _subject(tokens[:verb])
        if subj is not None:
            end = next(
                (k for k in range(verb + 1, len(tokens)) if tokens[k] in _CLAUSE_END), len(tokens)
            )
            pred = tokens[verb + 1 : end]
            negated = any(_info(t)[0] in ("not", "no", "never") for t in pred[:2])
            if not negated:
                clause = " ".join(tokens[:end])
                # "X now lives in Y" tells a change as plainly as "X moved to Y".
                now = "now" in low[max(0, verb - 1) : verb + 2]
                for attr, value in _values(pred, clause):
                    # A named place is a location, compared apart (``clashes``).
                    named = attr == "place"
                    kind = "location" if named else attr
                    out.append(Slot(subj[0], subj[1], kind, value, changed=now, named=named))
                for q in quantities(clause):
                    # A size or a share is a setting only when the clause names one ("the
                    # attachment limit is 25 MB"); else it is what something measured.
                    if q.reading or (q.kind in ("size", "percent") and not names_setting(clause)):
                        continue
                    out.append(Slot(subj[0], subj[1], q.kind, f"{q.value:g}"))
    out.extend(_appositions(tokens))
    return out


_CODE_TOKEN_RE = re.compile(r"`([^`]{1,120})`|([\w.+#/@$:~'*-]+)|([(),;—–])")
# Words between a change verb and what it names ("removed unused direct `x`").
_LEAD = 3


def _code_tokens(sentence: str) -> list[tuple[str, bool]]:
    """Tokens with whether each was written as code (in backticks)."""
    out = []
    for m in _CODE_TOKEN_RE.finditer(sentence):
        code, word, punct = m.groups()
        out.append((code.strip(), True) if code is not None else (word or punct, False))
    return out


def _named(tok: str, code: bool) -> str | None:
    """The canonical name of a thing in code or a product a token names, else None."""
    t = tok.strip(".,:;!?*\"'")
    if not t or t in _CLAUSE_END:
        return None
    if _is_path(t):
        return _path(t)
    canon, flags = _info(t)
    # Only ever asked of a word after a verb, where a capital marks a name.
    if code or flags & (NAMEY | IDENT | CAP):
        return canon.strip("()*") or None
    return None


def _next_named(toks: Sequence[tuple[str, bool]], start: int) -> tuple[int, str] | None:
    """The first name within ``_LEAD`` words from ``start``, in the same clause."""
    for k in range(start, min(start + _LEAD, len(toks))):
        tok, code = toks[k]
        if tok in _CLAUSE_END:
            return None
        name = _named(tok, code)
        if name:
            return k, name
        if _info(tok)[0] in _LOCATIVE | CHANGE_DESTINATION | {"with", "by", "via", "and"}:
            return None
    return None


def _clause_end(toks: Sequence[tuple[str, bool]], start: int) -> int:
    return next((k for k in range(start, len(toks)) if toks[k][0] in _CLAUSE_END), len(toks))


def _named_subject(toks: Sequence[str]) -> frozenset[str] | None:
    """The subject before a verb, a bracketed aside dropped ("`X` (`path`) now …")."""
    kept: list[str] = []
    depth = 0
    for tok in toks:
        if tok.endswith(":") and not depth:
            kept.clear()  # "Refactor: X moved …": the label is a topic, X the subject
            continue
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth = max(0, depth - 1)
        elif not depth:
            kept.append(tok)
    subj = _subject(kept)
    return subj[0] if subj and subj[0] else None


# The words a sentence telling a change holds; most sentences hold none and are not read.
CHANGE_WORDS = CHANGE_MOVE | CHANGE_REPLACE | CHANGE_REMOVE | CHANGE_DELEGATE | PERFORMS_ITSELF
_CHANGE_STRIP = ".,:;!?*`()\"'"


def may_change(sentence: str) -> bool:
    """Whether a sentence holds a change verb at all (cheap enough for every sentence)."""
    return not CHANGE_WORDS.isdisjoint(w.strip(_CHANGE_STRIP) for w in sentence.lower().split())


def changes(sentence: str) -> list[Slot]:
    """The slots a sentence telling a change sets (see the module docstring)."""
    out: list[Slot] = []
    if not may_change(sentence):
        return out
    toks = _code_tokens(sentence)
    low = [t.lower().strip(".,:!?*") for t, _ in toks]
    if any(w in ("not", "never", "no") for w in low):
        return out  # a change denied or asked for sets nothing
    for v, word in enumerate(low):
        if word not in CHANGE_WORDS and word not in CHANGE_DESTINATION:
            continue
        end = _clause_end(toks, v + 1)
        if word in CHANGE_MOVE:
            if v + 1 < len(low) and low[v + 1] in ("from", "off", "away"):
                continue  # a switch of products: conflicts.statements reads it
            if v + 1 < len(low) and low[v + 1] in CHANGE_DESTINATION:
                subject = _named_subject([t for t, _ in toks[:v]])
                dest = v + 1
            else:
                dest = next((k for k in range(v + 1, end) if low[k] in CHANGE_DESTINATION), None)
                if dest is None:
                    continue
                got = _subject([t for t, _ in toks[v + 1 : dest]])
                subject = got[0] if got and got[0] else None
            place = _next_named(toks, dest + 1)
            if subject and place:
                out.append(Slot(subject, frozenset(), "location", place[1], changed=True))
        elif word in CHANGE_REPLACE:
            old = _next_named(toks, v + 1)
            by = next((k for k in range(v + 1, end) if low[k] in ("with", "by")), None)
            new = _next_named(toks, by + 1) if by is not None else None
            if not (old and new):
                continue
            # "… in `src/types.ts`": the place whose implementation changed.
            where = next(
                (
                    _path(toks[k + 1][0])
                    for k in range(new[0], end - 1)
                    if low[k] == "in" and _is_path(toks[k + 1][0])
                ),
                None,
            )
            subject = frozenset({where or old[1]})
            out.append(
                Slot(subject, frozenset(), "implementation", new[1], changed=True, was=old[1])
            )
        elif word in CHANGE_REMOVE:
            gone = _next_named(toks, v + 1)
            if gone and toks[gone[0]][1]:
                out.append(Slot(frozenset({gone[1]}), frozenset(), "presence", "absent", True))
        elif word in CHANGE_DELEGATE or word in PERFORMS_ITSELF:
            subject = _named_subject([t for t, _ in toks[:v]])
            if not subject or not any(
                _info(t)[1] & NAMEY or code for t, code in toks[:v] if t not in _CLAUSE_END
            ):
                continue  # a component named in code does or passes on the work
            if word in PERFORMS_ITSELF:
                out.append(Slot(subject, frozenset(), "owner", "itself"))
                continue
            to = next((k for k in range(v + 1, end) if low[k] == "to"), None)
            if to is None:
                continue
            stop = next((k for k in range(to + 1, end) if low[k] in ("via", "using", "with")), end)
            got = _subject([t for t, _ in toks[to + 1 : stop]])
            if got and got[0]:
                value = " ".join(sorted(got[0]))
                out.append(Slot(subject, frozenset(), "owner", value, changed=True))
        if word in CHANGE_DESTINATION and (word != "to" or (v and low[v - 1] in CHANGE_MOVE)):
            # What something moved into is there now: "… moved into X stores".
            there = _next_named(toks, v + 1)
            if there and not _is_path(toks[there[0]][0]):
                out.append(Slot(frozenset({there[1]}), frozenset(), "presence", "present"))
    return out


def replaced_in(slots_read: Sequence[Sequence[Slot]]) -> dict[str, frozenset[str]]:
    """Per place, the values replacements there left behind (``Slot.was``)."""
    out: dict[str, set[str]] = {}
    for ss in slots_read:
        for s in ss:
            if s.was:
                for place in s.subject:
                    out.setdefault(place, set()).add(s.was)
    return {k: frozenset(v) for k, v in out.items()}


def mentions(sentence: str, left: dict[str, frozenset[str]]) -> list[Slot]:
    """What an untold sentence says of a place whose implementation was replaced: "add an
    entry to the `Shape` dict in `kinds.py`" names the value that "replaced `dict` … in
    `kinds.py`" left."""
    toks = _code_tokens(sentence)
    places = {_path(t) for t, _ in toks if _is_path(t)} & left.keys()
    if not places:
        return []
    words = {_info(t)[0] for t, _ in toks}
    return [
        Slot(frozenset({place}), frozenset(), "implementation", was)
        for place in sorted(places)
        for was in sorted(left[place] & words)
    ]


def _camel(tok: str) -> bool:
    return tok[:1].isupper() and any(c.isupper() for c in tok[1:]) and not _is_path(tok)


def _appositions(tokens: Sequence[str]) -> list[Slot]:
    """Where a named thing is defined, told in brackets: ``Name (path)``, ``path (Name …)``
    or ``(path -> Name)``. A bracket holding one path names that path's content."""
    out: list[Slot] = []
    for k, tok in enumerate(tokens):
        if tok != "(":
            continue
        close = next((j for j in range(k + 1, min(k + 12, len(tokens))) if tokens[j] == ")"), None)
        if close is None:
            continue
        inside = tokens[k + 1 : close]
        paths = [t for t in inside if _is_path(t)]
        if len(paths) != 1:
            continue
        names = [t for t in inside if _camel(t)]
        if not names and k and _camel(tokens[k - 1]):
            names = [tokens[k - 1]]
        for name in names[:1]:
            out.append(Slot(frozenset({_info(name)[0]}), frozenset(), "location", _path(paths[0])))
    for k in range(len(tokens) - 2):
        # "path (Name with …)": the bracket says what the path holds.
        if _is_path(tokens[k]) and tokens[k + 1] == "(" and _camel(tokens[k + 2]):
            out.append(
                Slot(
                    frozenset({_info(tokens[k + 2])[0]}), frozenset(), "location", _path(tokens[k])
                )
            )
    return out


def _agree(attribute: str, a: str, b: str) -> bool:
    if a == b:
        return True
    if attribute == "host":
        # "on tw-1" and "on tw-1 and tw-2" may both be true of a service on several hosts.
        ha, hb = set(a.split()), set(b.split())
        return ha <= hb or hb <= ha
    if attribute == "location":
        # A path and a deeper one name the same place at two precisions.
        return a.startswith(b + "/") or b.startswith(a + "/")
    if attribute.startswith("version") or "." in a or "." in b:
        # "1.4" and "1.4.2" name the same release line at two precisions.
        return a.startswith(b + ".") or b.startswith(a + ".")
    return False


def same_subject(a: Slot, b: Slot) -> bool:
    """Two statements are about one thing: qualifiers agree and the terms cover each other."""
    if a.scope and b.scope and a.scope != b.scope:
        return False
    if not (a.subject and b.subject) and not (
        a.attribute.startswith("version:") and a.scope and b.scope
    ):
        # A bare environment or host ("Prod is …") is a subject only for the version of a
        # named product; anything else said of it is about one of many things there.
        return False
    ta, tb = a.subject | a.scope, b.subject | b.scope
    if not ta & tb:
        return False
    if a.changed and b.changed and a.attribute == "location":
        # Two tellings of where one thing moved name it loosely ("the billing sync moved
        # to …", "ledger billing now lives in …"): each says it is a move, and they share
        # half the terms of the shorter name.
        return 2 * len(ta & tb) >= min(len(ta), len(tb))
    return ta <= tb or tb <= ta or jaccard(ta, tb) >= 0.5


# A subject word shared by more statements of one attribute than this names a topic,
# not one thing: it proposes no pairs (and keeps the pairing near-linear).
_BUCKET = 32
# A subject's number given this many different values is a measurement series.
_SERIES = 3


def _numeric(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Clash:
    """Statements giving one subject's attribute values that cannot both hold."""

    attribute: str
    sides: list[list[int]]  # item indices per value, in the order values were first seen
    subject: frozenset[str]  # the terms every side's statements share


def clashes(items: Sequence[Sequence[Slot]]) -> list[Clash]:
    """Group items (one list of slots each) by subject and attribute; return the clashes.

    Items are paired only through a shared subject term within one attribute, never all
    pairs; one pair of items is reported once, under the first attribute that clashes.
    """
    by_key: dict[tuple[str, str], list[tuple[int, Slot]]] = {}
    for i, ss in enumerate(items):
        for s in ss:
            for t in sorted(s.subject | s.scope):
                by_key.setdefault((s.attribute, t), []).append((i, s))
    per_attr: dict[str, set[tuple[int, int]]] = {}
    slot_of: dict[tuple[str, int], Slot] = {}
    for (attr, _), members in sorted(by_key.items()):
        if len(members) > _BUCKET:
            continue
        for n, (i, a) in enumerate(members):
            slot_of.setdefault((attr, i), a)
            for j, b in members[n + 1 :]:
                if i != j and same_subject(a, b):
                    per_attr.setdefault(attr, set()).add((min(i, j), max(i, j)))
    out: list[Clash] = []
    reported: set[tuple[int, int]] = set()
    for attr in sorted(per_attr):
        pairs = sorted(per_attr[attr])
        idx = sorted({i for p in pairs for i in p})
        pos = {i: n for n, i in enumerate(idx)}
        uf = UnionFind(len(idx))
        for i, j in pairs:
            uf.union(pos[i], pos[j])
        groups: dict[int, list[int]] = {}
        for i in idx:
            groups.setdefault(uf.find(pos[i]), []).append(i)
        for members in groups.values():
            # A thing may be in two named places at once; a named place is compared only
            # with a move of that very thing, named in two words or more (one shared word
            # is a topic), not of something its group reached.
            moved = [slot_of[(attr, j)] for j in members if slot_of[(attr, j)].changed]
            members = [
                i
                for i in members
                if not (a := slot_of[(attr, i)]).named
                or any(
                    same_subject(a, b) and len(a.subject & b.subject) >= MIN_SHARED_TERMS
                    for b in moved
                    if b is not a
                )
            ]
            by_value: dict[str, list[int]] = {}
            for i in members:
                value = slot_of[(attr, i)].value
                home = next((v for v in by_value if _agree(attr, v, value)), value)
                by_value.setdefault(home, []).append(i)
            if len(by_value) < 2 or (len(by_value) >= _SERIES and all(map(_numeric, by_value))):
                continue  # one value, or a number read again and again (a series)
            sides = list(by_value.values())
            new = {
                (min(i, j), max(i, j))
                for s in sides
                for t in sides
                if s is not t
                for i in s
                for j in t
            }
            if new <= reported:
                continue
            reported |= new
            shared = frozenset.intersection(
                *(slot_of[(attr, i)].subject | slot_of[(attr, i)].scope for i in members)
            )
            out.append(Clash(attr, sides, shared))
    return out
