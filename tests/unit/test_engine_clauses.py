"""A line stating several facts is cut into one unit per fact, and only such a line."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from dreaming.engine import Policy, light, run_sweep
from dreaming.engine.clauses import clauses, statements
from dreaming.engine.facts import Clock, Inputs
from tests.unit.test_engine_slots import T0, ep


def test_two_clauses_about_two_things_become_two_units_each_as_written():
    line = "The staging DB is Postgres 15; nightly exports land in the reports bucket."
    assert clauses(line) == [
        "The staging DB is Postgres 15",
        "nightly exports land in the reports bucket.",
    ]
    assert clauses("`resetCache()` drops every entry; `warmCache()` reloads the hot keys.") == [
        "`resetCache()` drops every entry",
        "`warmCache()` reloads the hot keys.",
    ]


@pytest.mark.parametrize(
    "line",
    [
        # too short to be approved on its own
        "Avoid `any`; prefer `unknown` with narrowing or explicit types.",
        # the second clause leans on the first: a pronoun, an article, a connective
        "All sensors stay on radio class A; we do not adopt class C because of the drain.",
        "Meters report every ten minutes; the rates live in the device profiles.",
        "Frames land in the broker first; the decoder consumes its stream and stores rows.",
        "The export job was rewritten last spring; hence reports arrive before noon now.",
        "Sessions are allowed for support work; ensuring tickets get linked is on the lead.",
        "Skippers liked the new threshold in knots; they'd want gusts counted as well.",
        "Refunds closed after one day; support desk handles that backlog manually.",
        # a lower-case clause opening on a bare word is a label or a noun, not an order
        "Yusuf showed the tablet layout; rollout to half the dispatchers on Friday.",
        # the same subject in both: one fact told in two steps
        "Tiles use vertex colours for shading; instanced tiles multiply vertex colours too.",
        # no verb: a list after a label
        "Stack: React 19 with hooks and context; Vite 5 for the dev server and bundling.",
        # the semicolon is inside brackets or code
        "Reduced allocations in hot paths (target lookup in engine; cache reuse in renderer).",
        "The loader runs `a(); b(); c()` in order before the first frame is drawn.",
        # a table row's cells are read under its header
        "| cache | holds sessions; expires hourly | redis runs the store |",
    ],
)
def test_clauses_that_do_not_stand_apart_stay_one_unit(line):
    assert clauses(line) == [line]


def test_a_sentence_stays_in_its_block_run_and_a_clause_cut_off_opens_its_own():
    text = (
        "Decided: reports stay weekly. No daily digest this year. "
        "The archive moved to cold storage; invoice exports run on the first of the month."
    )
    assert statements(text) == [
        [
            "Decided: reports stay weekly.",
            "No daily digest this year.",
            "The archive moved to cold storage",
        ],
        ["invoice exports run on the first of the month."],
    ]


def test_a_contested_clause_goes_to_open_questions_without_its_uncontested_neighbour():
    eps = [
        ep(1, 0, "The staging DB is Postgres 15; nightly exports land in the reports bucket."),
        ep(2, 1, "The staging DB is Postgres 16."),
        ep(3, 2, "Nightly exports land in the reports bucket, one file per tenant."),
    ]
    result = run_sweep(eps, now=T0 + timedelta(days=4))

    (conflict,) = result.conflicts
    assert conflict.kind == "value"
    assert sorted(s.text for s in conflict.sides) == [
        "The staging DB is Postgres 15",
        "The staging DB is Postgres 16.",
    ]
    exports = [c for c in result.candidates if "reports bucket" in c.text]
    assert exports
    for cand in exports:
        assert "Postgres" not in cand.text
        assert cand.page_target == "SYSTEM_OVERVIEW"
        assert 1 in {e.episode_id for e in cand.evidence}


def test_a_numbered_procedure_step_keeps_its_clauses_together():
    runbook = (
        "## Fail over the scheduler\n\n"
        "1. Drain the worker pool; queued jobs finish on the spare host.\n"
        "2. Restart the scheduler service on the primary host.\n"
        "3. Verify the dashboard shows every queue green again."
    )
    eps = [replace(ep(1, 0, runbook), source_trust=0.8)]
    units = light.run(Inputs.of(eps, (), {}, Policy(), None), Clock()).units
    # A step is matched against other runs of the procedure as it is written.
    assert "Drain the worker pool; queued jobs finish on the spare host." in units.text
    assert "Drain the worker pool" not in units.text

    result = run_sweep(eps, now=T0 + timedelta(days=1))
    (procedure,) = result.candidates
    assert procedure.page_target == "RUNBOOKS"
    assert "1. Drain the worker pool; queued jobs finish on the spare host." in procedure.text
