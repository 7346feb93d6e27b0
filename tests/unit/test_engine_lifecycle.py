"""Open work closed by a later report of the same work ("Cleaned …" after "clean …")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine import Ep, run_sweep
from dreaming.engine.reflect import done_report, item_actions, past_forms

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def ep(i: int, day: float, text: str, source: int | None = None) -> Ep:
    return Ep(
        id=i,
        occurred_at=T0 + timedelta(days=day, minutes=i),
        content=text,
        kind="note",
        memory_type="episodic",
        actor="alice",
        source_id=i if source is None else source,
        source_trust=0.6,
    )


def lifecycle_of(result, word: str) -> set[str]:
    return {c.lifecycle for c in result.candidates if word in c.text}


def test_a_report_opens_on_a_past_form_and_an_item_on_bare_verbs():
    assert done_report("**Cache:** Pruned stale keys; the job now reports 0 misses.") == (
        "pruned",
        frozenset({"cache", "stale", "keys"}),
    )
    assert done_report("Prune stale keys.") is None
    assert item_actions("Decide whether to prune stale cache keys.") == ["decide", "prune"]
    assert "pruned" in past_forms("prune") and "copied" in past_forms("copy")


def test_an_open_item_reported_done_later_is_done():
    result = run_sweep(
        [
            ep(1, 0, "Decide whether to prune stale cache keys in the ledger module."),
            ep(2, 0, "Decide whether to prune stale cache keys in the ledger module.", 9),
            ep(3, 2, "**Cache:** Pruned stale keys; the ledger job now reports 0 misses."),
        ]
    )
    assert lifecycle_of(result, "Decide whether") == {"done"}


def test_a_report_before_the_item_or_about_other_work_leaves_it_open():
    result = run_sweep(
        [
            ep(1, 0, "**Cache:** Pruned stale keys; the ledger job now reports 0 misses."),
            ep(2, 2, "Decide whether to prune stale cache keys in the ledger module."),
            ep(3, 2, "Decide whether to prune stale cache keys in the ledger module.", 9),
            ep(4, 3, "**Logs:** Pruned old log files on the build host."),  # other work
        ]
    )
    assert lifecycle_of(result, "Decide whether") == {"active"}


def test_a_step_of_a_numbered_procedure_is_never_closed_by_following_it():
    runbook = (
        "Restoring the ledger cache:\n"
        "1. Stop the ledger worker on the cache host.\n"
        "2. Prune stale cache keys in the ledger module.\n"
        "3. Start the ledger worker again and watch the misses."
    )
    result = run_sweep(
        [
            ep(1, 0, runbook),
            ep(2, 1, runbook, 9),
            ep(3, 2, "**Cache:** Pruned stale keys after the outage."),
        ]
    )
    assert lifecycle_of(result, "Prune stale") == {"active"}


def test_code_an_item_names_must_be_named_by_the_report_that_closes_it():
    item = "Add unit tests around `useLedger` and `usePager` to lock in paging behavior."

    def sweep(report: str):
        return run_sweep([ep(1, 0, item), ep(2, 0, item, 9), ep(3, 2, report)])

    other = sweep("**Tests:** Added unit tests for `renderGrid` paging behavior.")
    assert lifecycle_of(other, "Add unit tests") == {"active"}
    same = sweep("**Tests:** Added unit tests for `useLedger` paging behavior.")
    assert lifecycle_of(same, "Add unit tests") == {"done"}
