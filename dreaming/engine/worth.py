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
from functools import cache
from pathlib import Path

from .text import DECIDE_CUE, LIFE_CUE, Features
from .types import KINDS
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
_KIND_SHIFT = 10  # bits 10.. hold the episode kind's index in KINDS


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
    if first_sentence:
        code |= FIRST_SENTENCE
    if first_block:
        code |= FIRST_BLOCK
    if one_block:
        code |= ONE_BLOCK
    return code


_WORD_RE = re.compile(r"[\w'’-]+")
_FIRST_SINGULAR = frozenset(("i", "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "myself"))
_FIRST_PLURAL = frozenset(("we", "we're", "we've", "we'll", "we'd", "us", "our", "ours"))
_SECOND = frozenset(("you", "your", "yours", "you're", "you've", "you'll", "you'd"))
_OBLIGATION = frozenset(
    ("must", "should", "never", "always", "only", "required", "need", "needs", "cannot")
)
_COPULA = frozenset(("is", "are", "was", "were", "be", "means", "isn't", "aren't"))
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
    "digits",
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
    "first_sentence",
    "first_block",
    "one_block",
    *(f"kind_{k}" for k in KINDS),
    "trust",
    "restated",
)


def features(text: str, f: Features, place: int, weight: int, trust: float) -> list[float]:
    """The feature vector of one sentence in its place, in the order of ``FEATURES``."""
    stripped = text.strip()
    words = [w.lower().replace("’", "'") for w in _WORD_RE.findall(stripped)]
    wordset = set(words)
    n = max(len(words), 1)
    chars = max(len(stripped), 1)
    markup = sum(1 for c in stripped if not c.isalnum() and c not in _PLAIN)
    kind = place >> _KIND_SHIFT
    return [
        min(math.log1p(f.words) / math.log(50.0), 1.0),
        float(f.words < 6),
        float(f.words > 40),
        float(stripped.endswith("?")),
        float(stripped.endswith(":")),
        float(stripped[-1:] in (".", "!")),
        float(stripped[:1].isupper()),
        float(bool(_FIRST_SINGULAR & wordset)),
        float(bool(_FIRST_PLURAL & wordset)),
        float(bool(_SECOND & wordset)),
        float(bool(_OBLIGATION & wordset)),
        float(bool(_COPULA & wordset)),
        float(f.negated),
        float(dated(stripped)),
        float(opens_pointing_back(stripped)),
        float(asks_the_listener(stripped)),
        float(not_a_claim(stripped)),
        float(standalone(stripped)),
        sum(1 for w in words if len(w) > 4 and w.endswith("ed")) / n,
        min(len(f.values), 3) / 3.0,
        float(bool(f.hosts or f.envs)),
        min(len(f.idents), 3) / 3.0,
        min(len(f.names), 3) / 3.0,
        float("`" in stripped),
        float("http" in stripped or "](" in stripped),
        min(markup / chars * 10.0, 1.0),
        min(sum(1 for c in stripped if c.isdigit()) / chars * 5.0, 1.0),
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
        float(bool(place & FIRST_SENTENCE)),
        float(bool(place & FIRST_BLOCK)),
        float(bool(place & ONE_BLOCK)),
        *(float(kind == i) for i in range(len(KINDS))),
        trust,
        min(math.log1p(weight) / math.log(10.0), 1.0),
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
