"""Conflicts across wordings: two blocks about one thing that cannot both be true now.

``conflicts`` finds contradictions where the wording lines them up (one subject group
split by value, "moved from X to Y" against "use X"). Restatements in other words carry
contradictions too ("the sync interval is 10 minutes" … "the sync interval is 5
minutes from today"; "mail goes through A" … "mail now goes through B"; "each node has a
standby disk" … "the nodes have no standby disk"). Those blocks are paraphrase
neighbours (``similar``), so each block is compared with its few closest neighbours
only, never all pairs, for three kinds of disagreement:

* **value** — the same kind of quantity (money, a duration, a percentage, a size) in the
  same slot (the words around it overlap) with different values. A *setting* can
  conflict; a *reading* cannot. A value is a reading when an approximation or a
  measurement word stands before it ("about", "~", "peaks at", "median", "took",
  "went from"), or when its slot holds a series of values (three or more distinct ones:
  a measurement taken again and again). A setting is stated as a state, and a value
  change between settings must be restated (each side in two blocks or more) or announced
  by a change cue on the newer side ("from today", "now", "down from"). Two readings
  that differ are a timeline, as in ``conflicts``.
* **reversal** — the newer block announces a change ("now", "moved off", "moved the chat
  to", "swapped", "instead of", "no longer") in a sentence that names something the older
  block does not, and the older block names something the newer one does not: one choice
  replaced by another, whatever the verbs. Of several older blocks, the one whose
  sentence opens on what the change opens on (its subject) is the other side.
* **negation** — one block denies a possession or state ("have no …", "is not …",
  "doesn't have …") that its neighbour, which denies nothing, asserts about the same
  things: at least ``MIN_SHARED_TERMS`` terms of the denying sentence are in the other
  block.

Every rule here is about how English states values, changes and denials; none names a
domain, product or corpus.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise

from llmwiki.vocabulary import CHANGE_DESTINATION, CHANGE_MOVE, PROPOSAL_PAIRS, PROPOSALS

from .morph import term
from .similar import MIN_SHARED_TERMS
from .text import NEGATIONS, TOKEN_RE, Features, analyse, word_list

# ---- values --------------------------------------------------------------------------

# Verbs of a value moving ("went to", "drops to", "comes down to").
_MOVES = (
    "went", "goes", "go", "rose", "rises?", "fell", "falls?", "dropped", "drops?", "grew",
    "grows?", "climbed", "spiked", "reached", "hit", "measured", "comes? down", "came down",
    "comes? up", "came up", "goes down", "goes up", "went down", "went up",
)  # fmt: skip

_CURRENCY_CODES = "USD|EUR|GBP|NZD|AUD|CAD|CHF|JPY|CNY|INR|SEK|NOK|DKK|BRL|MXN|ZAR|SGD|HKD"
_NUMBER = r"\d+(?:[.,]\d+)*"
_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "day": 86400.0,
    "days": 86400.0,
    "week": 604800.0,
    "weeks": 604800.0,
    "month": 2_629_800.0,  # a twelfth of the mean Gregorian year
    "months": 2_629_800.0,
    "year": 31_557_600.0,
    "years": 31_557_600.0,
}
_SIZE_UNITS = {"kb": 1e3, "kib": 1024.0, "mb": 1e6, "mib": 1024.0**2, "gb": 1e9, "gib": 1024.0**3}
_SIZE_UNITS |= {"tb": 1e12, "tib": 1024.0**4}
_QUANTITY_RE = re.compile(
    r"(?P<money>(?:[A-Z]{1,3})?[$€£¥]\s?(?P<mv>" + _NUMBER + r")"
    r"|(?P<mv2>" + _NUMBER + r")\s?(?:" + _CURRENCY_CODES + r")\b)"
    r"|(?P<pv>" + _NUMBER + r")\s?%"
    r"|(?P<dv>"
    + _NUMBER
    + r")\s?(?P<du>"
    + "|".join(sorted(_DURATION_UNITS, key=len)[::-1])
    + r")\b"
    r"|(?P<sv>" + _NUMBER + r")\s?(?P<su>(?i:[kmgt]i?b))\b"
)
# Said before a value, these make it a reading: an estimate, a measurement, a movement.
_READING_BEFORE = re.compile(
    r"(?:\b(?:about|around|roughly|approx(?:imately|\.)?|nearly|almost|under|over|peaks?"
    r"|peaked|median|mean|average|avg|p\d\d|max(?:imum)?|min(?:imum)|took|takes|taking"
    r"|within|up to|at most|at least|estimated?|projected?|another|extra|more|"
    + r"|".join(_MOVES)
    + r")\s+(?:\w+\s+)?|~\s?|≈\s?)$",
    re.IGNORECASE,
)
_MOVED_BEFORE = re.compile(r"\b(?:" + r"|".join(_MOVES) + r")\s+(?:\w+\s+)?$", re.IGNORECASE)
# Nouns naming a quantity someone sets rather than measures. A setting that moves is a
# setting changed ("the refund cutoff drops to 6 hours"), not a reading ("latency dropped
# to 40 ms"). Stemmed, as slot words are.
_SETTING_NOUNS = frozenset((
    "limit", "cutoff", "fee", "price", "tariff", "interv", "timeout", "threshold", "quota",
    "retent", "deadlin", "window", "cap", "budget", "allow", "minimum", "maximum",
))  # fmt: skip
# "from 4 % to 7 %": a value moving is being observed, not set.
_MOVEMENT_RE = re.compile(r"\bfrom\s+\S+(?:\s\S+)?\s+to\b", re.IGNORECASE)
# The words either side of a value that say which slot it fills.
_SLOT_WORDS = 5
_SLOT_BEFORE = 8
# A slot holding this many distinct values is a measurement series, not a setting.
_SERIES = 3


@dataclass(frozen=True, slots=True)
class Quantity:
    kind: str  # money | percent | duration | size
    value: float
    slot: frozenset[str]  # stemmed terms around the value
    reading: bool


def _number(raw: str) -> float | None:
    # "1,200" and "1,200.50" group thousands; a lone "4,50" is a decimal comma.
    if "," in raw and ("." in raw or re.search(r",\d{3}(?!\d)", raw)):
        raw = raw.replace(",", "")
    else:
        raw = raw.replace(",", ".")
    try:
        return float(raw)
    except ValueError:
        return None


def names_setting(before: str) -> bool:
    """Does the clause before a value name a quantity someone sets (within 8 words)?"""
    clause = re.split(r"[;:,.]\s", before)[-1]
    words = analyse(" ".join(clause.split()[-8:])).subject
    return any(term(w) in _SETTING_NOUNS for w in words)


def _approximate(before: str) -> bool:
    """Is the value estimated or measured, not only moved ("went to about 6 h")?"""
    got = _READING_BEFORE.search(before)
    return got is not None and _MOVED_BEFORE.search(before) is None


def quantities(sentence: str) -> list[Quantity]:
    """The values with units in one sentence, each with its slot and reading status."""
    out: list[Quantity] = []
    moving = _MOVEMENT_RE.search(sentence) is not None
    for m in _QUANTITY_RE.finditer(sentence):
        if m.group("money"):
            kind, raw, scale = "money", m.group("mv") or m.group("mv2"), 1.0
        elif m.group("pv"):
            kind, raw, scale = "percent", m.group("pv"), 1.0
        elif m.group("dv"):
            kind, raw, scale = "duration", m.group("dv"), _DURATION_UNITS[m.group("du")]
        else:
            kind, raw, scale = "size", m.group("sv"), _SIZE_UNITS[m.group("su").lower()]
        number = _number(raw)
        if number is None:
            continue
        before = sentence[: m.start()]
        after = sentence[m.end() :]
        # The slot is read from the value's own clause: up to _SLOT_BEFORE words before it
        # ("the support window per minor line shrinks to 12 months"), _SLOT_WORDS after.
        clause = re.split(r"[;:]\s", before)[-1]
        around = " ".join(clause.split()[-_SLOT_BEFORE:] + after.split()[:_SLOT_WORDS])
        f = analyse(around)
        slot = frozenset(term(t) for t in f.subject)
        # The upper end of a range ("run to 40–80 MB") describes variation, not a setting.
        ranged = re.search(r"\d\s*[–-]\s*$", before) is not None
        reading = moving or ranged or _READING_BEFORE.search(before[-40:]) is not None
        if reading and not moving and not _approximate(before[-40:]) and names_setting(before):
            reading = False  # a setting moved: changed, not measured
        out.append(Quantity(kind, round(number * scale, 6), slot, reading))
    return out


# A block is compared with this many of its closest neighbours: a fact is restated a
# handful of times, so its contradiction is among the few blocks most like it.
NEIGHBOURS = 8
# A statement that replaces a choice shares less with the old statement than a
# restatement does: the names that differ are exactly the ones no longer shared. Its
# partner block is looked for down to this share of the grouping threshold, ln n nats
# (about one chance pair per block); the sentences stating the two sides must then share
# ln(n·s) nats, where s blocks switch or deny: fewer than one chance pair among all the
# pairs tested (a Bonferroni bound over those pairs, not over all pairs).
LOOSER = 0.5


def sentence_bar(n: int, tested: int) -> float:
    """The information two sides' sentences must share (see ``LOOSER``)."""
    return math.log(max(n, 2) * max(tested, 1))


# ---- change, denial ------------------------------------------------------------------

# A choice replaced by another: the newer block says so in one of these words.
_SWITCH = (
    # "now" of a new state, not "for now", "right now", "until now", "now that"
    r"(?<!for )(?<!right )(?<!until )(?<!by )(?<!just )now(?! that)|no longer|from now on"
    r"|moved (?:off|away from|over to|to|from)"
    r"|moving (?:off|away from|to)|switched|switching|swapped|swapping|replaced|replacing"
    r"|migrated|migrating|instead of|in place of|is out|are out|retired|flipped"
)
_SWITCH_RE = re.compile(r"\b(?:" + _SWITCH + r")\b", re.IGNORECASE)
_MONTHS_DAYS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|tomorrow|next"
)
# A value announced as changed: a switch, or words that date or compare the new value.
_CHANGE_RE = re.compile(
    r"\b(?:" + _SWITCH + r"|from today|as of (?:today|this|now)|down from|up from"
    r"|changed (?:to|from)|new default"
    # a value moved to, or a date it takes effect from ("from 30 March", "starting Monday")
    r"|(?:(?:comes?|came|goes|went) (?:down|up)|dropped|drops?|rose|rises?|fell|falls?|raised"
    r"|lowered|cut|reduced|increased|decreased) to"
    r"|(?:from|starting|effective|as of) (?:\d{1,2}(?:st|nd|rd|th)? )?(?:" + _MONTHS_DAYS + r"))\b",
    re.IGNORECASE,
)
# A change announced or foretold: "decided", "can move that onto X next week".
_ANNOUNCE_WORDS = frozenset(("changed", "changes", "decided", "decision"))
_CHANGE_VERBS = frozenset(("move", "switch", "migrate", "replace", "swap"))
_CHANGE_PARTICLES = frozenset(("onto", "to", "off", "over", "away", "with", "by"))


# Words a change verb's particle or destination may come after it ("move that onto X").
_VERB_REACH = 3


def _verb_then(
    words: Sequence[str], verbs: frozenset[str], then: frozenset[str], skip: int
) -> int | None:
    """The index of the first word of ``verbs`` followed, past ``skip`` words, within
    ``_VERB_REACH`` words by one of ``then`` (None when there is none)."""
    for i, w in enumerate(words):
        if w in verbs and not then.isdisjoint(words[i + 1 + skip : i + 1 + skip + _VERB_REACH]):
            return i
    return None


def _announces(sentence: str) -> bool:
    words = _words(sentence)
    return not _ANNOUNCE_WORDS.isdisjoint(words) or (
        _verb_then(words, _CHANGE_VERBS, _CHANGE_PARTICLES, 0) is not None
    )


def _words(text: str) -> list[str]:
    return [w.lower() for w in TOKEN_RE.findall(text)]


# Whether a block denies anything at all ("without" qualifies, it does not deny).
_DENIES = NEGATIONS - {"without"}
_CLAUSE_RE = re.compile(r"[;:—–]\s|\s[-–]\s")
# A denied possession ("has no X", "doesn't have X") contradicts a stated possession; a
# denied state ("X is not Y") contradicts a statement using the same predicate word.
_DENIAL_RE = re.compile(
    r"\b(?P<have>(?:has|have|had|carry|carries|with|there (?:is|are))\s+no\b"
    r"|(?:does|do|did)\s*(?:not|n't)\s+(?:have|carry|include|contain)\b)"
    r"|\b(?P<be>(?:is|are|was|were)\s+not\b|(?:isn't|aren't|wasn't|weren't)\b)",
    re.IGNORECASE,
)
_POSSESS = frozenset(
    word_list("with carry carries carrying include includes including contain contains equipped")
)
_HAVE = frozenset(("has", "have", "had"))


def _possesses(sentence: str) -> bool:
    words = _words(sentence)
    return not _POSSESS.isdisjoint(words) or any(
        # "have been stuck", "has moved": the auxiliary of a tense, not a possession
        w in _HAVE and not (nxt in ("been", "not") or nxt.endswith(("n't", "ed")))
        for w, nxt in zip(words, [*words[1:], ""], strict=True)
    )


# What a denial is not: a question reported or asked ("asked why the app isn't …"), a
# restrictive clause defining a kind ("a passenger whose pass wasn't scanned"), or a state
# in progress at one moment ("texts weren't going out").
_ASKING = frozenset(("why", "whether", "if"))
_RELATIVE = frozenset(("whose", "who", "which", "that"))


def _not_asserted(before: str) -> bool:
    clause = _words(re.split(r"[.;:]", before)[-1])
    return (
        not _ASKING.isdisjoint(clause)
        or ("how", "come") in set(pairwise(clause))
        or not _RELATIVE.isdisjoint(_words(before)[-4:])
    )


_IN_PROGRESS_RE = re.compile(r"^\s*(?:\w+\s+)?\w+ing\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True, eq=False)
class Said:
    """What one block says, as far as disagreement goes."""

    when: datetime | None
    terms: frozenset[str]  # stemmed subject terms of all its sentences
    sentences: tuple[str, ...]
    names: frozenset[str]  # names, identifiers and hosts it mentions
    sentence_terms: tuple[frozenset[str], ...]  # stemmed subject terms per sentence
    sentence_names: tuple[frozenset[str], ...]
    switches: tuple[int, ...]  # sentences announcing that one choice replaced another
    changes: bool  # some sentence announces a change (a switch, "from today", "down from")
    denies: bool  # some sentence denies something
    denials: tuple[int, ...]  # sentences denying a possession or a state
    denial_subjects: dict[int, frozenset[str]]  # per denial: stemmed terms before it
    denial_heads: dict[int, str | None]  # per denial: the denied predicate (None: a possession)
    quantities: tuple[tuple[int, Quantity], ...]  # (sentence index, value)


_NONE: frozenset[str] = frozenset()
_CODE_SPAN_RE = re.compile(r"`([^`\n]{1,200})`")


_CAPITALISED_RE = re.compile(r"\b[A-Z][a-z]{2,}\b")


def _known_in(sentence: str, known: frozenset[str]) -> frozenset[str]:
    if not known:
        return _NONE
    return frozenset(w.lower() for w in _CAPITALISED_RE.findall(sentence)) & known


def _move_told(sentence: str) -> int | None:
    """Where a move naming what moved before where it went starts ("moved the chat to X"),
    if the sentence has one."""
    toks = list(TOKEN_RE.finditer(sentence))
    i = _verb_then([t.group().lower() for t in toks], CHANGE_MOVE, CHANGE_DESTINATION, 1)
    return None if i is None else toks[i].start()


def announces_switch(sentence: str) -> bool:
    """Does the sentence announce that one choice replaced another (not merely ask for it)?"""
    m = _SWITCH_RE.search(sentence)
    start = m.start() if m else _move_told(sentence)
    if start is None:
        return False
    clause = _words(re.split(r"[.;:]", sentence[:start])[-1])
    return PROPOSALS.isdisjoint(clause) and PROPOSAL_PAIRS.isdisjoint(pairwise(clause))


def _code_names(sentence: str) -> frozenset[str]:
    """Capitalised words inside code spans: commands and keys, not names."""
    return analyse(" ".join(_CODE_SPAN_RE.findall(sentence))).names


def _choices(names: frozenset[str]) -> frozenset[str]:
    """Names that can be a choice: not a single letter ("class C"). Days and months are
    never names (text.GENERIC_WORDS)."""
    return frozenset(n for n in names if len(n) > 1)


def said(
    sentences: Sequence[str],
    feats: Sequence[Features],
    when: datetime | None,
    people: frozenset[str] = frozenset(),
    known: frozenset[str] = frozenset(),
) -> Said:
    """Read one block's sentences for values, change cues and denials.

    The names that can be a choice are proper names (a capitalised or CamelCase word),
    not people (``people``), code, tickets or hosts: a switch to a new ticket number or a
    new code line is a step of work, not a choice replaced. A capitalised word opening a
    sentence or a clause ("moved: Vendor, self-hosted, …") is a name when it is one of
    ``known``, the names the sweep saw where capitals are evidence.
    """
    s_terms = tuple(frozenset(term(t) for t in f.subject) for f in feats)
    s_names = tuple(
        (_choices(f.names) | _known_in(s, known)) - people - (_code_names(s) if "`" in s else _NONE)
        for s, f in zip(sentences, feats, strict=True)
    )
    switches = tuple(k for k, s in enumerate(sentences) if announces_switch(s))
    changes = bool(switches) or any(_CHANGE_RE.search(s) for s in sentences)
    denies = any(
        f.negated and not _DENIES.isdisjoint(w.lower() for w in TOKEN_RE.findall(s))
        for s, f in zip(sentences, feats, strict=True)
    )
    denial_subjects: dict[int, frozenset[str]] = {}
    denial_heads: dict[int, str | None] = {}
    for k, (s, f) in enumerate(zip(sentences, feats, strict=True)):
        m = _DENIAL_RE.search(s) if f.negated else None
        if m and (
            s.rstrip().endswith("?")
            or _not_asserted(s[: m.start()])
            or (m.group("be") and _IN_PROGRESS_RE.match(s[m.end() :]))
        ):
            m = None
        if m:
            if m.group("have"):
                denial_heads[k] = None
            else:
                after = analyse(" ".join(s[m.end() :].split()[:4])).subject
                head = next((t for t in analyse(s[m.end() :]).content if t in after), None)
                if head is None:
                    continue  # "isn't it": nothing said is denied
                denial_heads[k] = term(head)
            # The denial's subject is in its own clause: "…; the units have no …".
            clause = _CLAUSE_RE.split(s[: m.start()])[-1]
            denial_subjects[k] = frozenset(term(t) for t in analyse(clause).subject)
    denials = tuple(denial_subjects)
    qs = tuple(
        (k, q)
        for k, s in enumerate(sentences)
        if any(c.isdigit() for c in s)
        for q in quantities(s)
    )
    return Said(
        when,
        frozenset().union(*s_terms),
        tuple(sentences),
        frozenset().union(*s_names),
        s_terms,
        s_names,
        switches,
        changes,
        denies,
        denials,
        denial_subjects,
        denial_heads,
        qs,
    )


@dataclass(frozen=True, slots=True)
class Opposition:
    """Block ``new`` disagrees with the older block ``old`` (indices into the blocks)."""

    kind: str  # value | reversal | negation
    old: int
    new: int
    old_sentence: int  # the sentence of each block that states its side
    new_sentence: int
    strength: float = 0.0  # information the two sides' sentences share, in nats
    quantity: str = ""  # a value dispute's kind of quantity
    came: frozenset[str] = frozenset()  # a reversal's new names
    values: tuple[float, float] = (0.0, 0.0)  # a value dispute's old and new value


def _older(a: Said, b: Said) -> bool:
    """True when ``a`` was said before ``b`` (an undated block is never older)."""
    return a.when is not None and b.when is not None and a.when < b.when


Idf = Callable[[str], float]


def _best_sentence(a: Said, terms: frozenset[str], idf: Idf) -> tuple[int, float]:
    """``a``'s sentence sharing the most information with ``terms``, and that amount."""
    scored = [(sum(map(idf, st & terms)), -j) for j, st in enumerate(a.sentence_terms)]
    info, j = max(scored)
    return -j, info


def value_change(x: int, y: int, a: Said, b: Said) -> Opposition | None:
    """The same kind of quantity in overlapping slots, two different settings.

    A sentence may hold several values of one kind ("a single fare is 7.40, and the
    booking fee 1.20"): the pair whose slots share the most words is the one compared,
    and if those two values are equal the blocks agree.
    """
    if _older(b, a):
        x, y, a, b = y, x, b, a
    best: tuple[int, int, int, Quantity, Quantity] | None = None
    for ka, qa in a.quantities:
        if qa.reading:
            continue
        for kb, qb in b.quantities:
            if qb.reading or qb.kind != qa.kind:
                continue
            overlap = len(qa.slot & qb.slot)
            # One shared word is a topic ("fix"), as for paraphrases (MIN_SHARED_TERMS).
            if overlap >= MIN_SHARED_TERMS and (best is None or overlap > best[0]):
                best = (overlap, ka, kb, qa, qb)
    if best is None or best[3].value == best[4].value:
        return None
    _, ka, kb, qa, qb = best
    return Opposition("value", x, y, ka, kb, quantity=qa.kind, values=(qa.value, qb.value))


def reversal(x: int, y: int, a: Said, b: Said, idf: Idf, bar: float) -> Opposition | None:
    """``b`` (newer) switches, about what ``a`` states, from names of ``a``'s to new ones.

    The switching sentences must share ``bar`` nats with one sentence of ``a``; what they
    name and ``a`` does not is the new choice, and what that sentence of ``a`` names and
    ``b`` does not is the old one. Both must exist.
    """
    if not b.switches or not _older(a, b):
        return None
    terms = frozenset().union(*(b.sentence_terms[k] for k in b.switches))
    best, info = _best_sentence(a, terms, idf)
    if info < bar or len(a.sentence_terms[best] & terms) < MIN_SHARED_TERMS:
        return None
    if best in a.switches or _announces(a.sentences[best]):
        return None  # two announcements of a change are the same news told twice
    if not _same_topic(a.sentences[best], [b.sentences[k] for k in b.switches]):
        return None
    if _ASKED_RE.search(a.sentences[best]):
        return None  # a question asked chose nothing that a change could reverse
    came = frozenset().union(*(b.sentence_names[k] for k in b.switches)) - a.names
    if not came or not a.sentence_names[best] - b.names:
        return None
    # The side is stated by the switching sentence that names the new choice.
    k = next(k for k in b.switches if b.sentence_names[k] & came)
    return Opposition("reversal", x, y, best, k, info, came=came)


_ASKED_RE = re.compile(r"\bwhether\b|\?\s*$", re.IGNORECASE)
# A line opening with a label ("Lint: …", "**Storage.** …") says what it is about.
_TOPIC_RE = re.compile(r"^\W{0,3}([A-Za-z][\w /-]{1,30}?)\W{0,2}[:.]\**\s")


def _same_topic(old: str, new: Sequence[str]) -> bool:
    """Two statements under different labels ("Refactor: …", "Lint: …") are about two
    things, whatever words they share; unlabelled statements may be about one."""
    m = _TOPIC_RE.match(old)
    if m is None:
        return True
    labels = [n.group(1).lower() for s in new if (n := _TOPIC_RE.match(s))]
    return not labels or m.group(1).lower() in labels


def negation(x: int, y: int, a: Said, b: Said, idf: Idf, bar: float) -> Opposition | None:
    """``b`` denies what ``a``, which denies nothing, asserts (in either order).

    The denying sentence must name ``a``'s subject before the denial ("the units have
    no …") and the denying block must share something beyond that subject with the same
    sentence of ``a`` ("… the pack was cut"), or the two merely mention one thing.
    """
    if a.denies:
        return None
    for k in b.denials:
        best, info = _best_sentence(a, b.sentence_terms[k], idf)
        if info < bar:
            continue
        target = a.sentence_terms[best]
        head = b.denial_heads[k]
        if head is None:
            if not _possesses(a.sentences[best]):
                continue
        elif head not in target:
            continue
        subject = b.denial_subjects[k] & target
        rest = (b.terms - b.denial_subjects[k]) & target
        # The denial is about the same thing when they share its name, or two words of it:
        # one common word ("set") is a topic, not a subject.
        named = len(subject) >= MIN_SHARED_TERMS or any(not t.isalpha() for t in subject)
        if named and rest and len(subject | rest) >= MIN_SHARED_TERMS:
            return Opposition("negation", x, y, best, k, info)
    return None


# The words a sentence opens on hold its subject ("The docs build on …").
_OPENING = 4


def _opening(sentence: str) -> frozenset[str]:
    """Stemmed terms of a sentence's first words and of a label it opens with ("Docs:")."""
    m = _TOPIC_RE.match(sentence)
    words = sentence[m.end() if m else 0 :].split()[:_OPENING]
    if m:
        words.append(m.group(1))
    return frozenset(term(t) for t in analyse(" ".join(words)).subject)


def oppositions(
    x: int, a: Said, near: Sequence[tuple[int, Said]], idf: Idf, bar: float
) -> list[Opposition]:
    """What block ``x`` disagrees with among its neighbours (closest first).

    A reversal or a denial is one statement against the one it contradicts: only its
    best partner (most shared information) counts. A value is compared with the
    ``NEIGHBOURS`` closest blocks.
    """
    out: list[Opposition] = []
    said_of = dict(near)

    def rank(op: Opposition) -> tuple[bool, float]:
        # A partner that opens on what the statement opens on is about the same subject;
        # one naming it only in passing ("for the X glossary") is not.
        old = said_of[op.old].sentences[op.old_sentence]
        return bool(_opening(old) & _opening(a.sentences[op.new_sentence])), op.strength

    for rule in (reversal, negation):
        got = [op for y, b in near if (op := rule(y, x, b, a, idf, bar)) is not None]
        if got:
            out.append(max(got, key=rank))
    if a.quantities:
        for y, b in near[:NEIGHBOURS]:
            if b.quantities and y > x and (op := value_change(x, y, a, b)) is not None:
                out.append(op)
    return out


# A slot word shared by more blocks than this names a topic, not one setting: it proposes
# no pairs (and keeps the pairing near-linear in the number of blocks).
_SLOT_BUCKET = 32


def same_slot_changes(blocks: Sequence[tuple[int, Said]]) -> list[Opposition]:
    """Value changes between blocks that state one setting in few other words.

    "The attachment limit is 25 MB" and "the attachment limit per record is now 100 MB"
    share little besides the setting's name, too little to be paraphrase neighbours; their
    values' slots share two words or more. Blocks are paired through the words of their
    settings' slots (never all pairs) and compared as neighbours are.
    """
    by_word: dict[tuple[str, str], list[int]] = {}
    said_of: dict[int, Said] = {}
    for x, a in blocks:
        said_of[x] = a
        for word in {(q.kind, w) for _, q in a.quantities if not q.reading for w in q.slot}:
            by_word.setdefault(word, []).append(x)
    shared: dict[tuple[int, int], int] = {}
    for xs in by_word.values():
        if len(xs) > _SLOT_BUCKET:
            continue
        for i, x in enumerate(xs):
            for y in xs[i + 1 :]:
                shared[(x, y)] = shared.get((x, y), 0) + 1
    out = []
    for (x, y), n in sorted(shared.items()):
        if n >= MIN_SHARED_TERMS and (op := value_change(x, y, said_of[x], said_of[y])):
            out.append(op)
    return out


@dataclass(frozen=True, slots=True)
class Dispute:
    kind: str
    sides: list[tuple[list[int], tuple[int, int]]]  # blocks, (block, sentence) stating it


def disputes(ops: Sequence[Opposition], blocks: dict[int, Said]) -> list[Dispute]:
    """Join oppositions sharing a block into disputes and line up each dispute's sides.

    A value dispute's sides are its values; it is kept only if its values are settings
    (see the module docstring). A reversal's new side is every block naming what came,
    a negation's is every denying block; the old side is the rest.
    """
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(k: tuple[str, int]) -> tuple[str, int]:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def kind_of(op: Opposition) -> str:
        return op.kind + ":" + op.quantity

    for op in ops:
        parent[find((kind_of(op), op.old))] = find((kind_of(op), op.new))
    members: dict[tuple[str, int], list[Opposition]] = {}
    for op in ops:
        members.setdefault(find((kind_of(op), op.old)), []).append(op)
    out: list[Dispute] = []
    for (kind, _), group in sorted(members.items()):
        kind = kind.split(":")[0]
        roles: dict[object, dict[int, int]] = {}
        if kind == "value":
            for op in group:
                sides = ((op.old, op.old_sentence), (op.new, op.new_sentence))
                for (blk, k), value in zip(sides, op.values, strict=True):
                    roles.setdefault(value, {}).setdefault(blk, k)
            if not _settings(roles, group, blocks):
                continue
        else:
            came = frozenset().union(*(op.came for op in group))
            new: dict[int, int] = {}
            old: dict[int, int] = {}
            for op in group:
                new.setdefault(op.new, op.new_sentence)
                if kind == "reversal" and blocks[op.old].names & came:
                    new.setdefault(op.old, op.old_sentence)
                else:
                    old.setdefault(op.old, op.old_sentence)
            roles = {"old": {b: k for b, k in old.items() if b not in new}, "new": new}
        sides = [_side(m, blocks) for m in roles.values() if m]
        if len(sides) >= 2:
            sides.sort(key=lambda side: _first(side[0], blocks))
            out.append(Dispute(kind, sides))
    return out


def _settings(
    values: dict[object, dict[int, int]], group: Sequence[Opposition], blocks: dict[int, Said]
) -> bool:
    """Whether a value dispute is between settings: at most ``_SERIES`` - 1 values, each
    restated in two blocks, unless the newer side announces the change."""
    if not 2 <= len(values) < _SERIES:
        return False
    return any(blocks[op.new].changes for op in group) or all(len(b) >= 2 for b in values.values())


def _first(side: list[int], blocks: dict[int, Said]) -> tuple[bool, datetime | None]:
    times = [blocks[b].when for b in side if blocks[b].when is not None]
    return (not times, min(times) if times else None)


def _side(members: dict[int, int], blocks: dict[int, Said]) -> tuple[list[int], tuple[int, int]]:
    # The most recent statement of a side speaks for it.
    rep = max(members, key=lambda b: (blocks[b].when is not None, blocks[b].when or 0, -b))
    return sorted(members), (rep, members[rep])


def may_disagree(sentence: str) -> bool:
    """Whether a sentence could state a side at all (cheap enough for every block)."""
    return (
        _CHANGE_RE.search(sentence) is not None
        or any(c.isdigit() for c in sentence)
        or _move_told(sentence) is not None
    )


_SPEAKER_RE = re.compile(
    r"(?:\d{1,2}:\d{2}\s+)?([A-Z][\w-]{1,30})(?:\s*\+\s*\w+)?\s*(?:\([^)]{0,40}\))?:\s"
)


def speaker(text: str) -> str | None:
    """The name a block opens with as its speaker ("Ann: …", "10:40 Bo: …")."""
    m = _SPEAKER_RE.match(text)
    return m.group(1).lower() if m else None
