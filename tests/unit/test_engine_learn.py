"""A queue that learns from its reviewers: the per-project adjustment (engine ``learn``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from scipy.optimize import minimize

from dreaming.engine import Decided, Ep, learn, run_sweep
from dreaming.engine.learn import Reviewers, Where
from dreaming.engine.worth import place_code, shipped

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
TODO = "Add focused unit tests around the wave manager and the spawner."
FACT = "The staging database runs PostgreSQL 16 on db-staging-2."
NEW_FACT = "The booking service keeps its reservations in the bookings schema."
DECIDED = [
    Decided(12, "Add design documents for the tech tree and the sector map.", False, 0.7),
    Decided(31, "Create a CI job that runs the unit tests on every push.", False, 0.7),
    Decided(40, "The render loop runs at a fixed step of 16 ms.", True, 0.7),
]


def ep(i: int, text: str, kind: str = "note") -> Ep:
    return Ep(i, T0 + timedelta(minutes=i), text, kind, "episodic", "user:a", i, 0.8)


def written(kind: str, heading: str) -> Where:
    place = place_code(
        kind=kind,
        item=kind == "log_entry",
        number=0,
        checkbox=None,
        heading=heading,
        first_sentence=True,
        first_block=False,
        one_block=False,
    )
    return Where(place, 1, 0.6 if kind == "log_entry" else 0.8)


LOG = written("log_entry", "2026-03-02 (Mon)")
NOTE = written("note", "Architecture")
# A project whose reviewers reject the day's narration of its log and approve its notes.
NARRATION = [
    Decided(12, "Kicked off the pricing experiment with Freya this morning.", False, 0.6, LOG),
    Decided(31, "Closed the turnstile work at the north pier after lunch.", False, 0.6, LOG),
    Decided(40, "Paired with Ines on the rota export and the crew list.", False, 0.55, LOG),
    Decided(50, "The booking service stores reservations in PostgreSQL 16.", True, 0.8, NOTE),
    Decided(51, "Refunds above 150 GBP need a second approver.", True, 0.75, NOTE),
]

# What a project writes in its notes and approves.
NOTES = [
    "The booking service stores reservations in PostgreSQL 16.",
    "Refunds above 150 GBP need a second approver.",
    "Dispatch reads vessel positions from the AIS receivers.",
    "The app keeps no location history after a pickup.",
    "Releases are tagged from the main branch only.",
    "The tide service caches each prediction for ten minutes.",
    "Crew rotas are published every Thursday at noon.",
    "Card readers on the boats run offline for up to a day.",
    "The harbour console talks to the tracker over one websocket.",
    "Passenger manifests go only to the coastguard on request.",
]


def test_rejected_to_dos_move_a_similarly_worded_one_down_and_name_who_moved_it():
    moved = Reviewers(DECIDED).adjust(TODO)

    assert moved.logit < 0
    assert moved.rejected == (12, 31)
    assert moved.apply(0.5) < 0.5


def test_a_statement_unlike_every_decided_candidate_is_not_moved():
    assert Reviewers(DECIDED).adjust(FACT).logit == 0.0


def test_approvals_the_model_expected_barely_move_a_neighbour():
    loop = "The render loop runs at a fixed step of 16 ms."
    physics = "The physics step runs at a fixed rate of 60 Hz."
    # The project's other approvals, of what the model expected, say how far it usually
    # falls short here: what surprised it beyond that is the lesson.
    others = [
        Decided(50, "Refunds above 150 GBP need a second approver.", True, 0.95),
        Decided(51, "Releases are tagged from the main branch only.", True, 0.95),
    ]
    expected = [Decided(40, loop, True, 0.99), Decided(41, physics, True, 0.99), *others]
    surprising = [Decided(40, loop, True, 0.2), Decided(41, physics, True, 0.2), *others]
    text = "The audio mixer runs at a fixed rate of 48 kHz."
    assert 0 <= Reviewers(expected).adjust(text).logit < Reviewers(surprising).adjust(text).logit


def test_one_decision_alone_does_not_move_a_neighbour():
    # A reviewer who rejected one to-do has not yet said to-dos are not claims here; the
    # second rejection of one does.
    one = Reviewers(DECIDED[:1])
    two = Reviewers(DECIDED[:2])

    assert one.adjust(TODO).logit == 0.0
    assert two.adjust(TODO).logit < 0


def test_the_sweep_gates_the_to_do_after_rejections_and_keeps_the_fact_deterministically():
    eps = [ep(1, FACT), ep(2, TODO)]
    before = {c.text for c in run_sweep(eps).candidates}

    after = run_sweep(eps, decided=DECIDED)

    assert before == {FACT, TODO}
    assert [c.text for c in after.candidates] == [FACT]
    assert "not_claim_worthy" in {s.reason for s in after.stays_episodic}
    again = run_sweep(eps, decided=list(reversed(DECIDED)))
    assert (again.candidates, again.stays_episodic) == (after.candidates, after.stays_episodic)


def test_the_refit_learns_where_the_project_writes_its_junk_not_only_how():
    # The same statement, unlike every decided one in form: written in the log, where this
    # project's reviewers rejected what they read, it moves down; written in a note it
    # does not. A vote on wording alone cannot tell the two apart.
    reviewers = Reviewers(NARRATION)
    text = "The dispatch console talks to the tracker over one websocket."

    in_log, in_note = reviewers.adjust(text, LOG), reviewers.adjust(text, NOTE)

    assert in_log.logit < 0 and in_log.rejected and not in_log.approved
    assert set(in_log.rejected) <= {12, 31, 40}
    assert in_note.logit == 0.0
    assert in_log.apply(0.5) < 0.5


def test_the_refit_moves_a_new_narration_down_and_names_the_rejections_that_did():
    moved = Reviewers(NARRATION).adjust(
        "Wrapped up the berth survey with Callum before the ferry left.", LOG
    )

    assert moved.logit < -1.0
    assert (moved.rejected, moved.approved) == ((12, 31, 40), ())


def test_approvals_of_the_top_of_the_queue_alone_lift_nothing_through_the_refit():
    # The queue shows what the model rates highest, so a project approves most of what it
    # decides first. Those approvals say nothing that tells its claims from its junk: news
    # of the day in its log, which the model rates just above the gate, is not lifted.
    approvals = [Decided(50 + i, t, True, 0.7 + i / 50, NOTE) for i, t in enumerate(NOTES)]
    reviewers = Reviewers(approvals)

    for news in ("Sea Aster's bow thruster fixed: a loose connector.", "CI on main green all day."):
        assert reviewers.adjust(news, LOG).logit <= 0.0


def test_a_candidate_keeps_where_its_wording_was_written_in_its_signals():
    (c,) = run_sweep([ep(1, FACT)]).candidates

    where = Where.from_signals(c.signals)

    assert where is not None and where.place == c.signals["worth.place"]
    assert Where.from_signals(where.signals()) == where
    assert Where.from_signals({"worth": 0.7}) is None  # decided before places were kept


def said_on_four_days(i: int, text: str, kind: str) -> list[Ep]:
    # Said on two days only in chat, news is already gated by the shipped model.
    return [
        Ep(i + 100 * d, T0 + timedelta(days=d, minutes=i), text, kind, "episodic", who, i, 0.6)
        for d, who in enumerate(("user:a", "user:b", "user:a", "user:b"))
    ]


def test_after_its_chat_news_was_rejected_the_sweep_gates_new_news_and_keeps_the_note(
    monkeypatch,
):
    # The project's reviewers rejected what its chat reported of the day, said on four days
    # and proposed by a gate that let it through, and approved its note: the sweep of new
    # material learns that shape, place and source included, not one wording. The shipped
    # gate turns most such news away by itself, which would leave little to learn from;
    # this project's gate is lower.
    monkeypatch.setattr(shipped(), "threshold", 0.4)
    news = [
        "The staging deploy is green again after the fix.",
        "Freya is preparing a new price list for October.",
        "The ferry timetable for May is still with the printer.",
        "The north pier turnstiles are waiting on the contractor.",
    ]
    history = [e for i, t in enumerate(news, 1) for e in said_on_four_days(i, t, "chat_turn")]
    first = run_sweep([*history, ep(9, FACT)]).candidates
    # The model already gates some news; what it proposes is what reviewers decide.
    shown = {c.text for c in first}
    assert FACT in shown and len(shown & set(news)) >= 3 and shown <= {*news, FACT}
    decided = [
        Decided(i, c.text, c.text == FACT, c.signals["worth"], Where.from_signals(c.signals))
        for i, c in enumerate(first, 1)
    ]
    later = "The harbour office still has the berth survey from Callum."
    new = [*said_on_four_days(20, later, "chat_turn"), ep(30, NEW_FACT)]
    assert {c.text for c in run_sweep(new).candidates} == {later, NEW_FACT}

    after = run_sweep(new, decided=decided)

    assert [c.text for c in after.candidates] == [NEW_FACT]
    again = run_sweep(new, decided=list(reversed(decided)))
    assert again.candidates == after.candidates


def test_the_move_is_the_refitted_models_change_split_over_the_decisions(monkeypatch):
    # The refit is the L2-penalised logistic fit it claims to be: minimising the same loss
    # with a general-purpose optimiser gives the same move for a new candidate, the change
    # of the weights applied from the decided candidates' mean, the refit's level left out.
    monkeypatch.setattr(learn, "STRENGTH", 0.0)  # the refit alone, without the vote
    monkeypatch.setattr(learn, "MIN_MOVE", 0.0)
    model = shipped()
    x = np.array([[*learn._features(d.text, d.where), 1.0] for d in NARRATION])
    y = np.array([float(d.approved) for d in NARRATION])
    c = np.where(y > 0, 1.0, learn.REJECTION)
    z0 = x @ np.array([*model.weights, model.bias])
    penalty = np.array([learn.PRIOR] * (x.shape[1] - 1) + [learn.LEVEL_PRIOR])

    def loss(change: np.ndarray) -> float:
        z = z0 + x @ change
        return float(np.sum(c * (np.logaddexp(0, z) - y * z)) + penalty @ change**2 / 2)

    change = minimize(loss, np.zeros(x.shape[1]), method="BFGS", options={"gtol": 1e-9}).x
    text = "Wrapped up the berth survey with Callum before the ferry left."
    new = np.array(learn._features(text, LOG)) - x[y > 0, :-1].mean(axis=0)

    moved = Reviewers(NARRATION).adjust(text, LOG).logit
    assert moved == pytest.approx(change[:-1] @ new, abs=1e-3)
    assert abs(moved) > 0.1


def test_one_or_two_rejections_sharing_its_place_do_not_turn_away_a_claim_rated_well_above():
    # A project approved its notes and rejected narration in its log. A claim written in
    # the log, often restated, that the model rates well above the gate shares nothing with
    # the narration but where it was written: the refit still ranks it down, naming the
    # rejections, but one or two of them are too few to turn it away.
    model = shipped()
    often = Where(LOG.place, 1, 0.6, days=6, wordings=12)
    notes = [Decided(50 + i, t, True, 0.8, NOTE) for i, t in enumerate(NOTES[:6])]
    narration = [
        Decided(
            12, "Kicked off the pricing experiment with Freya this morning.", False, 0.6, often
        ),
        Decided(31, "Closed the turnstile work at the north pier after lunch.", False, 0.6, often),
    ]
    claim = "Passenger manifests go only to the coastguard on request."
    worth = model.prob(learn._features(claim, often))
    assert worth > 0.65

    for n in (1, 2):
        moved = Reviewers([*notes, *narration[:n]]).adjust(claim, often)

        assert moved.logit < 0 and moved.rejected == tuple(d.candidate_id for d in narration[:n])
        assert moved.apply(worth) >= model.threshold


def test_approvals_unlike_a_claim_do_not_rank_it_down_when_the_rejections_do_not():
    # The queue's approvals are the top of it, all notes here; each nudges down whatever is
    # unlike it, a claim written in the log included. The rejections (a plan in a note, a
    # chat line) together say it is unlike what this project rejects. Ranked down would
    # name a rejection for a move the approvals made, and turn the claim away.
    model = shipped()
    chat = Where(
        place_code(
            kind="chat_turn",
            item=False,
            number=0,
            checkbox=None,
            heading="",
            first_sentence=True,
            first_block=True,
            one_block=True,
        ),
        1,
        0.5,
        4,
        6,
    )
    decided = [
        *(Decided(50 + i, t, True, 0.8, NOTE) for i, t in enumerate(NOTES[:8])),
        Decided(12, "Kicked off the pricing experiment with Freya this morning.", False, 0.7, chat),
        Decided(13, "Freya is preparing a new price list for October.", False, 0.7, NOTE),
    ]
    restated = Where(LOG.place, 1, 0.6, days=4, wordings=8)
    claim = "Lifejackets are checked every Monday by the deck crew."
    worth = model.prob(learn._features(claim, restated))
    assert worth > model.threshold

    moved = Reviewers(decided).adjust(claim, restated)

    assert not moved.rejected
    assert moved.apply(worth) >= model.threshold
