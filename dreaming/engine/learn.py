"""A queue that learns from its reviewers: a per-project adjustment on top of the shipped
claim-worthiness model (``worth``).

A project's decided candidates (approved or rejected, with their wording and where it was
written) come in as plain data (``Decided``). Two things move a new candidate's
claim-worthiness, both in log-odds on top of the shipped model:

- **A refit of the model to the project.** The shipped weights are the prior; the
  project's decisions refit them, each weight pulled back toward its shipped value by an
  L2 penalty strong enough that twenty decisions move it only where they agree. What the
  refit learns is the project's own shape of junk and of claims, over every feature the
  model reads, place and source included: when its reviewers reject the day's narration of
  its logs, the weights of narration and of log entries fall for this project alone. At
  the optimum of an L2-penalised logistic loss the change of the weights is exactly a sum
  over the decided candidates (each one's residual, the decision minus what the refitted
  model expects, times its features), so the change a new candidate gets splits exactly
  into the share each decided candidate contributed: the panel names, of those that
  pushed it the way it moved, the ones nearest it in form.
- **A neighbour vote on form.** The decided candidates whose wording has the most similar
  form (the text part of the features, each counting the same whatever the shipped model
  weighs it, since what the model underweights is what reviewers can teach it) vote by how
  far the decision was from what the model expected of them: a reviewer who rejects "Add
  tests for the parser" has said to-dos are not claims, which holds for "Update the docs".

A rejection weighs more than an approval (``REJECTION``): the queue shows what the model
already rates as claims, so approvals mostly confirm it while each rejection, which needs a
reason, names a kind of wording it gets wrong here.

Learning never lowers the bar across the board, either way. Since the queue shows the
model's best candidates first, a project's first decisions are mostly approvals of what it
rated 0.7-0.9: read literally, they would say the model is too strict everywhere and lift
the junk just under the gate with the claims. So the refit's level is fitted but not
applied, and a move is measured from the approved candidates' mean: only what tells this
project's approved from its rejected candidates moves a new one. The vote likewise counts
each neighbour's surprise beyond the model's usual shortfall on the other decisions, and
moves nothing unless at least two neighbours push the same way (``AGREE``). A move down
goes no further than the decisions that make it (``EVIDENCE`` log-odds for each rejected, or
approved, candidate that lowers it by ``MIN_MOVE`` or more, and never further than the
rejected or the approved ones push together): one rejected log entry does not turn away
every log entry the model rates a claim, nor do the approvals' small pushes down of
whatever is unlike them add up to a move none of them makes.

Deterministic (decided candidates in id order, ties by id) and explainable: every
adjustment names the decided candidates that moved it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .text import analyse, word_list
from .worth import FEATURES, features, shipped

K = 5  # neighbours that vote
RADIUS = 1.25  # farther than this (about one form feature and a half) is not "similar"
# Decisions the model got right that every project's mean shortfall starts from (see
# Reviewers.__init__).
SHORTFALL_PRIOR = 5.0
AGREE = 2  # neighbours that must push the way a vote moves for it to move anything
STRENGTH = 2.0  # log-odds a unanimous, exact-match vote moves a candidate by
# A rejection counts this many times an approval: see the module's docstring.
REJECTION = 2.0
# The refit's pull back toward the shipped weights (L2 on the change of each weight,
# against the summed, weighted log-loss of the decisions).
PRIOR = 8.0
# The pull on the refit's own level, which is fitted so that the weights need not carry it
# and then left out of every move (see ``Reviewers._refit``): weak, only to keep the fit
# finite when every decision agrees.
LEVEL_PRIOR = 0.1
NEWTON_STEPS = 25
# A move smaller than this (log-odds) is no move: the refit shifts every candidate a
# little, and the panel should say "ranked down" only where the reviewers made a difference.
MIN_MOVE = 0.1
# Log-odds the refit may move a candidate down by for each decided candidate that lowers it
# by ``MIN_MOVE`` or more (see ``Reviewers._lowered``): one rejection alone cannot turn away
# what the model rates above 0.575, two what it rates above 0.65.
EVIDENCE = 0.3
NAMED = 3  # decided candidates the panel names for one move, the nearest in form first
# The features a wording carries on its own: its place, source and restatement are left
# out of the neighbour vote, since two wordings are compared there by their text alone.
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
class Where:
    """Where a wording was written and how its fact is restated: what, beside its text,
    the model reads (``worth.features``). A candidate keeps it in its signals, so that once
    decided it teaches the refit with the features it was proposed with."""

    place: int  # Units.place: list item, heading above, source kind … (worth.place_code)
    weight: int = 1  # episodes saying the sentence
    trust: float = 0.5  # its source's trust
    days: int = 1  # on how many days its fact is said
    wordings: int = 1  # in how many wordings

    _KEYS = ("worth.place", "worth.weight", "worth.trust", "worth.days", "worth.wordings")

    def signals(self) -> dict[str, float]:
        values = (self.place, self.weight, self.trust, self.days, self.wordings)
        return dict(zip(self._KEYS, values, strict=True))

    @classmethod
    def from_signals(cls, signals: Mapping[str, float]) -> Where | None:
        """None for a candidate proposed before its place was kept."""
        if not all(k in signals for k in cls._KEYS):
            return None
        place, weight, trust, days, wordings = (signals[k] for k in cls._KEYS)
        return cls(int(place), int(weight), float(trust), int(days), int(wordings))


@dataclass(frozen=True, slots=True)
class Decided:
    """A candidate a reviewer decided: its id, its text, whether it was approved, the
    claim-worthiness the shipped model gave it when it was proposed, and where its wording
    was written (None when not known: it then votes on form only)."""

    candidate_id: int
    text: str
    approved: bool
    worth: float
    where: Where | None = None


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


def _features(text: str, where: Where | None) -> list[float]:
    """The model's features of a wording, where it was written (a neutral place when not
    known: only its text features are then read)."""
    where = where or Where(0)
    return features(
        text, analyse(text), where.place, where.weight, where.trust, where.days, where.wordings
    )


def _form(x: Sequence[float]) -> list[float]:
    """The text part of a feature vector: what neighbours are measured on."""
    return [x[i] for i in _TEXT_FEATURES]


class Reviewers:
    """The decided candidates of one project, ready to move new ones."""

    def __init__(self, decided: Sequence[Decided]) -> None:
        self._decided = sorted(decided, key=lambda d: d.candidate_id)
        xs = [_features(d.text, d.where) for d in self._decided]
        self._forms = [_form(x) for x in xs]
        placed = [i for i, d in enumerate(self._decided) if d.where is not None]
        self._placed = placed
        self._x = np.array([[*xs[i], 1.0] for i in placed]).reshape(len(placed), len(FEATURES) + 1)
        # Where a move is nought: the approved candidates' mean (every decided one's when
        # none was approved). A new candidate like what this project approves is left as
        # the model rates it; one unlike it the way the rejected ones were moves down.
        approved = [k for k, i in enumerate(placed) if self._decided[i].approved]
        rows = self._x[approved or list(range(len(placed))), :-1]
        self._mean = rows.mean(axis=0) if placed else np.zeros(len(FEATURES))
        self._shares = self._refit()
        self._approved = np.array([self._decided[i].approved for i in placed], dtype=bool)
        # How far the model fell short on the other decisions, on average (rejections
        # weighing as in the refit, and as many more decisions as ``SHORTFALL_PRIOR`` it
        # got right, so that a few say little), for each decided candidate: never below
        # nothing, since the queue's order biases what is decided toward approvals only.
        c = [1.0 if d.approved else REJECTION for d in self._decided]
        err = [float(d.approved) - d.worth for d in self._decided]
        total, weight = sum(w * e for w, e in zip(c, err, strict=True)), sum(c)
        self._surprise = [
            max((total - w * e) / (weight - w + SHORTFALL_PRIOR), 0.0)
            for w, e in zip(c, err, strict=True)
        ]

    def __bool__(self) -> bool:
        return bool(self._decided)

    def _refit(self) -> np.ndarray:
        """Each placed decided candidate's share in the project's change of the shipped
        weights: ``change = sum_i share_i * x_i``, the stationarity of the penalised loss at
        its optimum, so a new candidate's move splits exactly into the decided ones' parts.

        The refit has a level of its own (``LEVEL_PRIOR``), fitted but never applied: the
        queue shows what the model already rates highest, so how many of its candidates a
        project approves says how the reviewers chose what to decide as much as where its
        bar lies. Twenty approvals of the top of the queue would otherwise raise every
        candidate, junk near the gate included; three rejected chat lines against one
        approved note would lower every candidate, clean notes included. Only what tells
        the approved from the rejected, in the features, moves a new candidate."""
        if not self._placed:
            return np.zeros(0)
        model = shipped()
        x = self._x
        y = np.array([float(self._decided[i].approved) for i in self._placed])
        c = np.where(y > 0, 1.0, REJECTION)
        z0 = x @ np.array([*model.weights, model.bias])
        change = np.zeros(x.shape[1])
        penalty = np.full(x.shape[1], float(PRIOR))
        penalty[-1] = LEVEL_PRIOR
        # Newton's method on a strictly convex loss from no change, a fixed number of
        # steps: the same decisions give the same weights.
        for _ in range(NEWTON_STEPS):
            p = _sigmoid(z0 + x @ change)
            grad = x.T @ (c * (p - y)) + penalty * change
            hess = x.T @ (x * (c * p * (1.0 - p))[:, None]) + np.diag(penalty)
            change -= np.linalg.solve(hess, grad)
        return c * (y - _sigmoid(z0 + x @ change)) / PRIOR

    def adjust(self, text: str, where: Where | None = None) -> Adjustment:
        """How the project's decisions move a wording of ``text`` written at ``where``."""
        if not self._decided:
            return NONE
        x = _features(text, where)
        form = _form(x)
        pushed: dict[int, bool] = {}  # decided candidates that moved it: index -> approved
        refit = floor = 0.0
        if where is not None and self._placed:
            # Measured from the approved candidates' mean, the level column left out: see
            # _refit.
            parts = self._shares * (self._x[:, :-1] @ (np.array(x) - self._mean))
            refit, floor = float(parts.sum()), self._lowered(parts)
            for i, part in zip(self._placed, parts, strict=True):
                if part * refit > 0:
                    pushed[i] = self._decided[i].approved
        vote, voters = self._vote(form)
        pushed.update(voters)
        # A move down goes no further than the decisions that support it (``_lowered``); a
        # refit part that may not lower a candidate by itself may still hold back a lift.
        logit = refit + vote
        if logit < 0:
            logit = max(logit, floor + min(vote, 0.0))
        logit = round(logit, 4)
        if abs(logit) < MIN_MOVE:
            return NONE
        # Named: of the decided candidates that pushed the way it moved, the nearest in form.
        named = sorted(
            (math.dist(form, self._forms[i]), self._decided[i].candidate_id, ok)
            for i, ok in pushed.items()
            if ok == (logit > 0)
        )[:NAMED]
        return Adjustment(
            logit,
            tuple(sorted(cid for _, cid, ok in named if ok)),
            tuple(sorted(cid for _, cid, ok in named if not ok)),
        )

    def _lowered(self, parts: np.ndarray) -> float:
        """How far down the decided candidates' parts (``parts``, one per placed decided
        candidate) may move a candidate: the rejected ones' net push and the approved ones'
        net push, each only when it is down and at most ``EVIDENCE`` for each of its
        members that lowers the candidate by ``MIN_MOVE`` or more.

        Each decision's part is the refit's estimate from twenty decisions, not a fact: one
        rejected log entry would otherwise turn away every log entry the model rates a
        claim (as for the vote, one decision is an anecdote), and eighteen approvals, each
        nudging down whatever is unlike them through the features they share (place,
        source, form), would add up to a shift no one of them supports."""
        moved = 0.0
        for group in (parts[~self._approved], parts[self._approved]):
            lowering = int(np.count_nonzero(group <= -MIN_MOVE))
            moved += max(min(float(group.sum()), 0.0), -EVIDENCE * lowering)
        return moved

    def _vote(self, form: list[float]) -> tuple[float, dict[int, bool]]:
        """The vote of the decided candidates nearest in form, and the surprising ones
        among them (index -> approved)."""
        near = sorted(
            (math.dist(form, w), d.candidate_id, i)
            for i, (d, w) in enumerate(zip(self._decided, self._forms, strict=True))
        )
        voters = [(dist, i) for dist, _, i in near[:K] if dist <= RADIUS]
        if not voters:
            return 0.0, {}
        # Each neighbour votes what the model got wrong about it: a rejected candidate the
        # model rated 0.7 pulls down by 0.7, an approval it already expected barely counts.
        # Closer ones count more, and one absent voter damps the vote, so a single
        # decision moves a candidate less than several agreeing ones. What the model got
        # wrong is counted beyond what it got wrong on average on the other decisions, for
        # the reason the refit's level is not applied (see _refit): approving the top of
        # the queue is how reviewers chose what to decide, not a lesson about wording.
        weights = [
            (1.0 if self._decided[i].approved else REJECTION) * (1.0 - dist / (2 * RADIUS))
            for dist, i in voters
        ]
        pushes = [
            w * (float(self._decided[i].approved) - self._decided[i].worth - self._surprise[i])
            for w, (_, i) in zip(weights, voters, strict=True)
        ]
        vote = sum(pushes)
        # One decision is an anecdote: a reviewer who rejected one plan has not yet said
        # that plans are not claims here.
        if sum(push * vote > 0 for push in pushes) < AGREE:
            return 0.0, {}
        return STRENGTH * vote / (sum(weights) + 1.0), {
            i: self._decided[i].approved for _, i in voters
        }


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -500.0, 500.0)))
