"""A queue that learns from its reviewers: the per-project adjustment (engine ``learn``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine import Decided, Ep, run_sweep
from dreaming.engine.learn import Reviewers

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)
TODO = "Add focused unit tests around the wave manager and the spawner."
FACT = "The staging database runs PostgreSQL 16 on db-staging-2."
DECIDED = [
    Decided(12, "Add design documents for the tech tree and the sector map.", False, 0.7),
    Decided(31, "Create a CI job that runs the unit tests on every push.", False, 0.7),
    Decided(40, "The render loop runs at a fixed step of 16 ms.", True, 0.7),
]


def ep(i: int, text: str) -> Ep:
    return Ep(i, T0 + timedelta(minutes=i), text, "note", "episodic", "user:a", i, 0.8)


def test_rejected_to_dos_move_a_similarly_worded_one_down_and_name_who_moved_it():
    moved = Reviewers(DECIDED).adjust(TODO)

    assert moved.logit < 0
    assert moved.rejected == (12, 31)
    assert moved.apply(0.5) < 0.5


def test_a_statement_unlike_every_decided_candidate_is_not_moved():
    assert Reviewers(DECIDED).adjust(FACT).logit == 0.0


def test_an_approval_the_model_expected_barely_moves_a_neighbour():
    expected = [Decided(40, "The render loop runs at a fixed step of 16 ms.", True, 0.99)]
    surprising = [Decided(40, "The render loop runs at a fixed step of 16 ms.", True, 0.2)]
    text = "The audio mixer runs at a fixed rate of 48 kHz."
    assert 0 <= Reviewers(expected).adjust(text).logit < Reviewers(surprising).adjust(text).logit


def test_the_sweep_gates_the_to_do_after_rejections_and_keeps_the_fact_deterministically():
    eps = [ep(1, FACT), ep(2, TODO)]
    before = {c.text for c in run_sweep(eps).candidates}

    after = run_sweep(eps, decided=DECIDED)

    assert before == {FACT, TODO}
    assert [c.text for c in after.candidates] == [FACT]
    assert "not_claim_worthy" in {s.reason for s in after.stays_episodic}
    again = run_sweep(eps, decided=list(reversed(DECIDED)))
    assert (again.candidates, again.stays_episodic) == (after.candidates, after.stays_episodic)
