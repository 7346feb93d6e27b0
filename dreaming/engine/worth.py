"""Claim-worthiness: P(a sentence is a claim line | the sentence and its place).

A logistic regression over general features of a sentence and where it was written: its
form (a question, first or second person, a modal of obligation, a copula, time words
relative to the writer's now, past-tense narration), the typed values it carries (numbers,
versions, hosts, identifiers, code spans, links), its share of markup, the kind of episode
it comes from and how trusted that source is, the heading above it, its place in a list or
procedure, and how often it is restated. No feature names a word of any corpus; the
lexicons it reads are closed-class words (pronouns, modals) and the engine's own.

Trained on the units the engine itself produces. ``worth_train`` runs the engine's Light
phase over each labelled corpus and labels each unit by the corpus line its text comes
from (the key's ``claim_lines``), so the features at training time are computed by this
module from exactly what Deep later sees: the unit's sentence (``Units.text``), its
analysed features (``Units.feat``), its place (``Units.place``, packed by Light with
``place_code``), how many episodes say it (``Units.weight``) and its source's trust
(``Units.trust``). Computing features on raw corpus lines instead would have needed a
second reader of markdown and transcripts kept in step with Light by hand.

The weights ship as ``worth_weights.json`` beside this module; rebuild them with
``python -m dreaming.engine.worth_train`` (deterministic, byte-identical output).
Inference is a dot product in plain Python.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import pairwise
from pathlib import Path

from llmwiki.vocabulary import (
    AHEAD,
    FIRST_PLURAL,
    FIRST_SINGULAR,
    FUTURE,
    HEDGES,
    OBLIGATIONS,
    SECOND_PERSON,
)

from .blocks import Block
from .facts import Fact, Inputs, Units
from .text import DECIDE_CUE, LIFE_CUE, Features, word_list
from .types import DATED_KINDS, KINDS, Ep
from .wording import asks_the_listener, dated, not_a_claim, opens_pointing_back, standalone

WEIGHTS_PATH = Path(__file__).with_name("worth_weights.json")

# Where a sentence was written, packed into one small int per unit by Light.
ITEM = 1  # a bullet, numbered or checkbox item
NUMBERED = 2  # an item of a numbered list
BOX_OPEN = 4  # an unticked checkbox: a to-do
BOX_DONE = 8  # a ticked checkbox
UNDER_HEADING = 16  # some heading stands above it in its text
HEADING_DATED = 32  # the nearest heading above holds a digit (a date or a time)
HEADING_ASKS = 64  # the nearest heading above is a question
FIRST_SENTENCE = 128  # the first sentence of its block
FIRST_BLOCK = 256  # in the first block of its text
ONE_BLOCK = 512  # its text is that one block (a chat turn, a one-line event)
PLAN_SECTION = 1024  # most items under its heading are to-dos (see ``plan_sections``)
HEADING_AHEAD = 2048  # the nearest heading above names what is still to come
_KIND_SHIFT = 12  # bits 12.. hold the episode kind's index in KINDS


def place_code(
    *,
    kind: str,
    item: bool,
    number: int,
    checkbox: str | None,
    heading: str | None,
    first_sentence: bool,
    first_block: bool,
    one_block: bool,
    plan: bool = False,
) -> int:
    """Pack a sentence's place into the int ``Units.place`` keeps for it."""
    code = KINDS.index(kind) << _KIND_SHIFT if kind in KINDS else 0
    if item or number or checkbox is not None:
        code |= ITEM
    if number:
        code |= NUMBERED
    if checkbox == " ":
        code |= BOX_OPEN
    elif checkbox is not None:
        code |= BOX_DONE
    if heading is not None:
        code |= UNDER_HEADING
        if any(c.isdigit() for c in heading):
            code |= HEADING_DATED
        if heading.rstrip().endswith("?"):
            code |= HEADING_ASKS
        if AHEAD.intersection(re.findall(r"[\w-]+", heading.lower())):
            code |= HEADING_AHEAD
    if first_sentence:
        code |= FIRST_SENTENCE
    if first_block:
        code |= FIRST_BLOCK
    if one_block:
        code |= ONE_BLOCK
    if plan:
        code |= PLAN_SECTION
    return code


# Closed-class words: what an imperative does not open with, and what tells a subject
# ("The job runs …", "It is …") from an order ("Run the job …").
_CLOSED = frozenset(
    word_list(
        """a an the this that these those it its they them their we our us i my me you your he
    him his she her there here all each every some any no not none both either neither one
    two first next last other another such same in on at to for from with by of as if when
    while after before until since during via into onto over under about and or but so
    because though although unless whether then than also only just still even now already
    yet again is are was were be been being am has have had do does did will would can could
    should may might must shall what which who whom whose where why how yes ok okay please
    thanks"""
    )
)
_AUX = frozenset(
    word_list("is are was were has have had will would can could should may might must does did")
)
_TOKENS_RE = re.compile(r"[A-Za-z][\w'’-]*|\S")


def imperative(text: str) -> bool:
    """True when a sentence reads as an order: it opens on a bare verb-like word ("Add …",
    "Verify …"), capitalised, not a closed-class word or an inflected one, not a field label
    ("Source: …"), and the next word is not the verb of a subject ("Redis runs …")."""
    toks = _TOKENS_RE.findall(text[:80].lstrip("*_ "))
    if len(toks) < 3:
        return False
    w0, w1 = toks[0], toks[1]
    if not (w0.isalpha() and w0[0].isupper() and w0[1:].islower()):
        return False
    low = w0.lower()
    if low in _CLOSED or low.endswith(("ing", "ed", "ly")) or (low[-1] == "s" and low[-2:] != "ss"):
        return False
    if w1 in (":", "'", "’"):
        return False
    low1 = w1.lower()
    if low1 in _AUX:
        return False
    # "Redis runs …", "Postgres crashed at …": a subject and its verb. A past form
    # followed by a content word qualifies it instead ("Add focused tests …").
    past = low1.endswith("ed") and (len(toks) < 3 or toks[2].lower() in _CLOSED)
    inflected = past or (low1[-1] == "s" and low1[-2:] != "ss")
    return not (w1.isalpha() and inflected and low1 not in _CLOSED)


def plan_sections(parts: Sequence[Block]) -> list[bool]:
    """Per block of a text: whether it stands under a heading whose
    items are mostly to-dos — open checkboxes, orders or future tense. A "next steps" list is
    found by its shape, whatever its heading says."""
    out = [False] * len(parts)
    start, todo, items = 0, 0, 0

    def close(end: int) -> None:
        if items >= 2 and 2 * todo > items:
            out[start:end] = [True] * (end - start)

    for i, (text, heading, box, code, *_) in enumerate(parts):
        if heading:
            close(i)
            start, todo, items = i + 1, 0, 0
        elif not code:
            items += 1
            words = set(text[:120].lower().split())
            todo += box == " " or imperative(text) or bool(words & FUTURE)
    close(len(parts))
    return out


_ITEM_MARK_RE = re.compile(r"^\s*(?:[-*•+]|\d{1,3}[.)])\s+(\[[ xX]\]\s*)?")


def plan_episodes(eps: Sequence[Ep]) -> set[int]:
    """The episodes (by index) that are items of a to-do list: a note cut into one episode
    per item keeps its list's shape in the section the importer located each item in, and
    a section whose items are mostly to-dos (open boxes, orders, future tense) is a plan,
    whatever its heading says. A numbered list of orders is a procedure, not a plan."""
    groups: dict[tuple[int, str], list[tuple[int, bool]]] = {}
    for i, e in enumerate(eps):
        if not e.section:
            continue
        m = _ITEM_MARK_RE.match(e.content)
        if m is None or m.group(0).lstrip()[:1].isdigit():
            continue
        text = e.content[m.end() : m.end() + 120]
        todo = (m.group(1) or "").strip() == "[ ]" or imperative(text)
        todo = todo or bool(set(text.lower().split()) & FUTURE)
        groups.setdefault((e.source_id, e.section), []).append((i, todo))
    out: set[int] = set()
    for items in groups.values():
        if len(items) >= 2 and 2 * sum(t for _, t in items) > len(items):
            out.update(i for i, _ in items)
    return out


_WORD_RE = re.compile(r"[\w'’-]+")
_COPULA = frozenset(("is", "are", "was", "were", "be", "means", "isn't", "aren't"))
# A text talking about itself ("this file", "this document") is about the writing, not
# about the project it describes.
_SELF_NOUNS = frozenset(("file", "document", "doc", "page", "note", "section"))
_SPEAKER_RE = re.compile(r"^[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*)?:\s")
_PLAIN = frozenset(" .,;:!?'’\"()-")

FEATURES = (
    "words",
    "short",
    "long",
    "question",
    "ends_colon",
    "ends_stop",
    "starts_upper",
    "first_singular",
    "first_plural",
    "second_person",
    "obligation",
    "copula",
    "negated",
    "dated",
    "points_back",
    "asks_listener",
    "lead_in",
    "standalone",
    "past_tense",
    "values",
    "hosts_envs",
    "idents",
    "names",
    "code_span",
    "link",
    "markup",
    "loose_digits",
    "percent",
    "stop_ratio",
    "speaker",
    "parenthesis",
    "decide_cue",
    "life_cue",
    "item",
    "numbered",
    "box_open",
    "box_done",
    "under_heading",
    "heading_dated",
    "heading_asks",
    "heading_ahead",
    "first_sentence",
    "first_block",
    "one_block",
    *(f"kind_{k}" for k in KINDS),
    "trust",
    "restated",
    "imperative",
    "imperative_dated",
    "plan_section",
    "plan_dated",
    "fact_days",
    "wordings",
    "future",
    "opens_past",
    "narration",
    "days_logged",
    "order_bullet",
    "order_step",
    "hedged",
    "self_reference",
    "noted",
)


def opens_past(text: str) -> bool:
    """True when a sentence opens on a past-tense verb with its subject dropped, the way a
    log records what was done ("Fixed the flaky test", "Paired with Bo on …")."""
    toks = _TOKENS_RE.findall(text[:40].lstrip("*_ "))
    if len(toks) < 2:
        return False
    w0 = toks[0]
    return (
        w0.isalpha()
        and w0[0].isupper()
        and w0[1:].islower()
        and len(w0) > 4
        and w0.endswith("ed")
        and toks[1] not in (":", "'", "’")
        and toks[1].lower() not in _AUX
    )


def _past(words: list[str]) -> int:
    return sum(1 for w in words if len(w) > 4 and w.endswith("ed"))


def loose_digits(text: str, f: Features) -> int:
    """Digits outside the typed values a sentence carries: dates, clock times and counts
    of the day, not a host, a version, a port or an identifier, which a claim states."""
    typed = [v.lower() for v in (*f.values, *f.hosts, *f.idents) if any(c.isdigit() for c in v)]
    n = 0
    for chunk in text.lower().split():
        chunk = chunk.strip("()[]{}<>,.;:!?\"'`*")
        if any(c.isdigit() for c in chunk) and not any(
            v == chunk or (len(v) > 1 and v in chunk) for v in typed
        ):
            n += sum(1 for c in chunk if c.isdigit())
    return n


def spread(eps: Sequence[Ep], idx: Iterable[int]) -> int:
    """On how many days a fact is said: distinct dates of its dated episodes, and each
    undated source once (a reference note is not restated by being read again)."""
    return len(
        {e.occurred_at.date() if e.dated else -e.source_id for e in map(eps.__getitem__, idx)}
    )


def noted(eps: Sequence[Ep], idx: Iterable[int]) -> bool:
    """Whether any of these episodes is written outside a log or a chat (a note, a
    decision record, a document): said there, a fact was written down to be kept."""
    return any(eps[i].kind not in DATED_KINDS for i in idx)


def restatement(U: Units, inp: Inputs, fact: Fact | None, u: int) -> tuple[int, int, bool]:
    """How a fact is restated: the ``spread`` of everything that says it, in how many
    wordings (unit ``u`` alone when it belongs to no fact), and whether it is ``noted``
    (every fact is, in a project that keeps no notes: ``Inputs.keeps_notes``)."""
    eps = inp.eps
    idx = U.eps[u] if fact is None else fact.episodes
    if idx is None:
        idx = {i for w in fact.units for i in U.eps[w]}
    wordings = 1 if fact is None else sum(1 for w in fact.units if U.eps[w])
    return spread(eps, idx), wordings, not inp.keeps_notes or noted(eps, idx)


def unit_features(U: Units, u: int, restated: tuple[int, int, bool]) -> list[float]:
    """``features`` of unit ``u`` of a sweep, as training and Deep both compute them."""
    days, wordings, in_note = restated
    return features(
        U.text[u], U.feat[u], U.place[u], U.weight[u], U.trust[u], days, wordings, in_note
    )


def features(
    text: str,
    f: Features,
    place: int,
    weight: int,
    trust: float,
    days: int = 1,
    wordings: int = 1,
    in_note: bool | None = None,
) -> list[float]:
    """The feature vector of one sentence in its place, in the order of ``FEATURES``;
    ``days``, ``wordings`` and ``in_note`` say how the fact it states is restated
    (``restatement``); not known, ``in_note`` is read from the sentence's own place."""
    stripped = text.strip()
    words = [w.lower().replace("’", "'") for w in _WORD_RE.findall(stripped)]
    wordset = set(words)
    n = max(len(words), 1)
    chars = max(len(stripped), 1)
    markup = sum(1 for c in stripped if not c.isalnum() and c not in _PLAIN)
    kind = place >> _KIND_SHIFT
    order = imperative(stripped)
    plan = bool(place & PLAN_SECTION)
    # A log is dated: an order or a to-do list there is the day's plan, in a note a rule.
    # Under a dated heading a note keeps a log of its own ("### 2026-03-02").
    logged = bool(place & HEADING_DATED) or (
        KINDS[kind] in DATED_KINDS if kind < len(KINDS) else False
    )
    past = opens_past(stripped)
    # Log narration: what the writer did that day, in the first person or with the
    # subject dropped ("Paired with Bo on …", "I restarted the job").
    narrated = logged and (past or (bool(FIRST_SINGULAR & wordset) and _past(words)))
    if in_note is None:
        in_note = kind < len(KINDS) and KINDS[kind] not in DATED_KINDS
    return [
        min(math.log1p(f.words) / math.log(50.0), 1.0),
        float(f.words < 6),
        float(f.words > 40),
        float(stripped.endswith("?")),
        float(stripped.endswith(":")),
        float(stripped[-1:] in (".", "!")),
        float(stripped[:1].isupper()),
        float(bool(FIRST_SINGULAR & wordset)),
        float(bool(FIRST_PLURAL & wordset)),
        float(bool(SECOND_PERSON & wordset)),
        float(bool(OBLIGATIONS & wordset)),
        float(bool(_COPULA & wordset)),
        float(f.negated),
        float(dated(stripped)),
        float(opens_pointing_back(stripped)),
        float(asks_the_listener(stripped)),
        float(not_a_claim(stripped)),
        float(standalone(stripped)),
        _past(words) / n,
        min(len(f.values), 3) / 3.0,
        float(bool(f.hosts or f.envs)),
        min(len(f.idents), 3) / 3.0,
        min(len(f.names), 3) / 3.0,
        float("`" in stripped),
        float("http" in stripped or "](" in stripped),
        min(markup / chars * 10.0, 1.0),
        min(loose_digits(stripped, f) / chars * 5.0, 1.0),
        float("%" in stripped),
        f.stop_ratio,
        float(_SPEAKER_RE.match(stripped) is not None),
        float("(" in stripped),
        float(bool(f.cues & DECIDE_CUE)),
        float(bool(f.cues & LIFE_CUE)),
        float(bool(place & ITEM)),
        float(bool(place & NUMBERED)),
        float(bool(place & BOX_OPEN)),
        float(bool(place & BOX_DONE)),
        float(bool(place & UNDER_HEADING)),
        float(bool(place & HEADING_DATED)),
        float(bool(place & HEADING_ASKS)),
        float(bool(place & HEADING_AHEAD)),
        float(bool(place & FIRST_SENTENCE)),
        float(bool(place & FIRST_BLOCK)),
        float(bool(place & ONE_BLOCK)),
        *(float(kind == i) for i in range(len(KINDS))),
        trust,
        min(math.log1p(weight) / math.log(10.0), 1.0),
        float(order),
        float(order and logged),
        float(plan),
        float(plan and logged),
        min(math.log1p(days - 1) / math.log(10.0), 1.0),
        min(math.log(max(wordings, 1)) / math.log(5.0), 1.0),
        float(bool(FUTURE & wordset)),
        float(past),
        float(narrated),
        # Said again day after day in a log or a chat: a routine, unless a note says it too.
        min(math.log1p(days - 1) / math.log(10.0), 1.0) * logged,
        # A bullet list of orders is a to-do list; a numbered one, the steps of a procedure.
        float(order and bool(place & ITEM) and not place & NUMBERED),
        float(order and bool(place & NUMBERED)),
        float(bool(HEDGES & wordset)),
        float(any(a == "this" and b in _SELF_NOUNS for a, b in pairwise(words))),
        # Said in a note, a fact was written down to be kept; said only in logs and chat,
        # day after day, it is as often the day's news or joke. Narration is a log's
        # wherever it was written.
        float(in_note and not narrated),
    ]


class Model:
    """A fitted logistic regression: ``bias``, one weight per feature, and the threshold
    below which a fact is gated as not claim-worthy."""

    __slots__ = ("bias", "threshold", "weights")

    def __init__(self, weights: list[float], bias: float, threshold: float) -> None:
        if len(weights) != len(FEATURES):
            raise ValueError(
                f"claim-worthiness weights: {len(weights)} weights for {len(FEATURES)} features"
            )
        self.weights = weights
        self.bias = bias
        self.threshold = threshold

    def logit(self, x: list[float]) -> float:
        return self.bias + sum(w * v for w, v in zip(self.weights, x, strict=True))

    def prob(self, x: list[float]) -> float:
        z = self.logit(x)
        return 1.0 / (1.0 + math.exp(-z)) if z > -500 else 0.0

    @classmethod
    def from_json(cls, doc: dict) -> Model:
        by_name = doc["weights"]
        missing = [name for name in FEATURES if name not in by_name]
        if missing:
            raise ValueError(f"claim-worthiness weights lack features: {', '.join(missing)}")
        return cls([by_name[name] for name in FEATURES], doc["bias"], doc["threshold"])


@cache
def shipped() -> Model:
    """The model shipped with the engine (``worth_weights.json``)."""
    return Model.from_json(json.loads(WEIGHTS_PATH.read_text(encoding="utf-8")))
