"""A queue that learns from its reviewers: a per-project adjustment on top of the shipped
claim-worthiness model (``worth``).

A project's decided candidates (approved or rejected, with their text) come in as plain
data (``Decided``). A new candidate's claim-worthiness is moved by a nearest-neighbour vote:
the decided candidates whose wording has the most similar *form* — the text part of the
model's features (question, person, modal, orders, typed values, markup …), each counting
the same, whatever weight the shipped model gives it, since what the model underweights is
what a project's reviewers can teach it — vote by how far the reviewer's decision (1 approve,
0 reject) was from what the model expected of them, closer ones counting more, and the
vote shifts the model's log-odds: the project corrects the model where it was wrong.
Form, not topic: a reviewer who rejects "Add tests for the parser" has said to-dos are not
claims, which holds for "Update the docs" too, whatever either is about.

Deterministic (neighbours ordered by distance, then candidate id) and explainable: every
adjustment names the candidates that moved it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .text import analyse, word_list
from .worth import FEATURES, features

K = 5  # neighbours that vote
RADIUS = 1.25  # farther than this (about one form feature and a half) is not "similar"
STRENGTH = 2.0  # log-odds a unanimous, exact-match vote moves a candidate by
# A rejection counts this many times an approval: the queue shows what the model already
# rates as claims, so approvals mostly confirm it while each rejection names a kind of
# wording it gets wrong here.
REJECTION = 2.0
# The features a wording carries on its own: its place, source and restatement are left
# out, since a decided candidate is compared with a new one by its text alone.
_TEXT_NAMES = frozenset(
    word_list(
        """words short long question ends_colon ends_stop starts_upper first_singular
        first_plural second_person obligation copula negated dated points_back asks_listener
        lead_in standalone past_tense values hosts_envs idents names code_span link markup
        loose_digits percent stop_ratio speaker parenthesis decide_cue life_cue imperative
        future opens_past"""
    )
)
_TEXT_FEATURES = tuple(i for i, name in enumerate(FEATURES) if name in _TEXT_NAMES)


@dataclass(frozen=True, slots=True)
class Decided:
    """A candidate a reviewer decided: its id, its text, whether it was approved, and the
    claim-worthiness the shipped model gave it when it was proposed."""

    candidate_id: int
    text: str
    approved: bool
    worth: float


@dataclass(frozen=True, slots=True)
class Adjustment:
    """How the reviewers' decisions move one candidate: log-odds, and who moved it."""

    logit: float
    approved: tuple[int, ...]  # ids of the similar candidates reviewers approved
    rejected: tuple[int, ...]  # ... and rejected

    def apply(self, p: float) -> float:
        z = math.log(max(p, 1e-9) / max(1.0 - p, 1e-9)) + self.logit
        return 1.0 / (1.0 + math.exp(-z))


NONE = Adjustment(0.0, (), ())


class Reviewers:
    """The decided candidates of one project, ready to vote on new ones."""

    def __init__(self, decided: Sequence[Decided]) -> None:
        self._decided = sorted(decided, key=lambda d: d.candidate_id)
        self._vectors = [self.form(d.text) for d in self._decided]

    def __bool__(self) -> bool:
        return bool(self._decided)

    def form(self, text: str) -> list[float]:
        """The text features of a wording: what neighbours are measured on."""
        x = features(text, analyse(text), 0, 1, 0.5)
        return [x[i] for i in _TEXT_FEATURES]

    def adjust(self, text: str) -> Adjustment:
        """The vote of the decided candidates nearest ``text`` in form."""
        if not self._decided:
            return NONE
        v = self.form(text)
        near = sorted(
            (math.dist(v, w), d.candidate_id, d.approved, d.worth)
            for d, w in zip(self._decided, self._vectors, strict=True)
        )
        voters = [n for n in near[:K] if n[0] <= RADIUS]
        if not voters:
            return NONE
        # Each neighbour votes what the model got wrong about it: a rejected candidate the
        # model rated 0.7 pulls down by 0.7, an approval it already expected barely counts.
        # Closer ones count more, and one absent voter damps the vote, so a single
        # decision moves a candidate less than several agreeing ones.
        weights = [
            (1.0 if ok else REJECTION) * (1.0 - dist / (2 * RADIUS)) for dist, _, ok, _ in voters
        ]
        vote = sum(w * (float(ok) - p) for w, (_, _, ok, p) in zip(weights, voters, strict=True))
        logit = STRENGTH * vote / (sum(weights) + 1.0)
        voters = [n for n in voters if abs(float(n[2]) - n[3]) >= 0.25]
        return Adjustment(
            round(logit, 4),
            tuple(cid for _, cid, ok, _ in voters if ok),
            tuple(cid for _, cid, ok, _ in voters if not ok),
        )
