"""The sweep's phases hand frozen results on, each reading only what came before."""

from __future__ import annotations

import dataclasses

import pytest

from dreaming.engine import Policy, deep, diary, light, pipeline, rem
from dreaming.engine.facts import Clock, Inputs

from .test_engine_pipeline import NOW, ep


def _phases():
    eps = [
        ep(1, 0, "Decision: use RabbitMQ for the shipment event queue"),
        ep(2, 3, "We moved from RabbitMQ to Redis Streams for the shipment event queue"),
        ep(3, 0, "The staging DB is Postgres 16."),
        ep(4, 1, "The staging DB is Postgres 15."),
    ]
    # Every fact said once is drafted, so Deep's reading of REM's contests shows.
    inp = Inputs.of(eps, (), {}, Policy(min_evidence=1, min_score=0.0), NOW)
    clock = Clock()
    lit = light.run(inp, clock)
    dreamt = rem.run(inp, lit, clock)
    scored = deep.run(inp, lit, dreamt, None, clock)
    told = diary.settle(inp, lit, dreamt, scored, {})
    return inp, lit, dreamt, scored, told


def test_every_phase_result_is_frozen():
    inp, lit, dreamt, scored, told = _phases()
    for result in (
        inp,
        lit,
        dreamt,
        scored,
        told,
        lit.units,
        *lit.facts,
        *dreamt.contests.values(),
    ):
        field = dataclasses.fields(result)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, field, None)


def test_rem_records_contests_beside_the_facts_instead_of_on_them():
    inp, lit, dreamt, scored, _ = _phases()

    def fact_of(text: str) -> int:
        return next(ci for ci, f in enumerate(lit.facts) if lit.units.text[f.units[0]] == text)

    def ids(episodes) -> set[int]:
        return {inp.eps[i].id for i in episodes}

    assert [c.kind for c in dreamt.conflicts] == ["reversal", "value"]
    old, new = fact_of("The staging DB is Postgres 16."), fact_of("The staging DB is Postgres 15.")
    # Each side is contradicted by the other's episodes …
    assert ids(dreamt.contests[old].contradict) == {4}
    assert ids(dreamt.contests[new].contradict) == {3}
    assert dreamt.contests[old].conflicts == dreamt.contests[new].conflicts == (1,)
    # … which Deep reads from REM's result, and leaves out of the support.
    value = next(c for c in scored.candidates if "Postgres 15" in c.text)
    assert [(e.episode_id, e.role) for e in value.evidence] == [(4, "support"), (3, "contradict")]


def test_the_steps_are_timed_under_the_names_the_service_sums_by_phase():
    result = pipeline.run_sweep([ep(1, 0, "The staging DB is Postgres 16.")], now=NOW)

    assert set(result.timings) == {
        "light.normalise",
        "light.dedupe",
        "light.units",
        "light.cluster",
        "rem.lifecycle",
        "rem.conflicts",
        "rem.themes",
        "deep.score",
        "deep.cap",
        "settle",
        "total",
    }
