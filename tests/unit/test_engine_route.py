"""Routing reads the structure a writer gave a fact: the heading it stands under, the record
it is written in, and the form of the sentence (a condition then an order, a term and its
appositive), not only the words it uses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dreaming.engine import Ep, Policy, run_sweep
from dreaming.engine.route import count_cues, route, section_page

KW = {"contested": None, "procedural_votes": 0.0, "subject_label": "s", "day_label": "d"}


def page(text: str, **kw) -> str:
    return route(text, **KW, **kw).page


def test_a_decision_records_title_files_every_line_under_it_as_a_decision():
    assert section_page("ADR-0012: Queue for billing events > Context")[0] == "DECISION_LOG"
    assert section_page("RFC 7 — Shard the ledger > Alternatives")[0] == "DECISION_LOG"
    assert section_page("DESIGN042 - Warm cache on boot > Verification plan")[0] == ("DECISION_LOG")
    # A release number is not a record number, and a dated log heading names no kind.
    assert section_page("Release 2.4.1 notes") is None
    assert section_page("2026-03-05 Thursday > 09:10") is None


def test_the_nearest_heading_that_names_a_kind_of_page_wins():
    assert section_page("Ledger service — architecture > Glossary (short)") == (
        "GLOSSARY",
        "Glossary (short)",
    )
    assert section_page("Ops runbook > Queue stuck")[0] == "RUNBOOKS"
    assert section_page("Project governance > Licensing")[0] == "GOVERNANCE"
    assert section_page("Contributing > Repository layout")[0] == "SYSTEM_OVERVIEW"
    # "Next steps" is a plan, not a procedure.
    assert section_page("Active context > Next steps") is None


def test_a_plain_statement_goes_where_its_heading_says():
    plain = "The ledger writes one row per settled invoice."
    assert page(plain) == "SYSTEM_OVERVIEW"
    assert page(plain, sections=["ADR-0003: Ledger storage > Decision"]) == "DECISION_LOG"
    got = route(plain, **KW, sections=["Ledger notes > Glossary"])
    assert got.page == "GLOSSARY" and "Glossary" in got.reason
    # An imperative under a decision record's plan is the decision, not a runbook step.
    assert (
        page(
            "Confirm the ledger rows still reconcile after the cut-over.",
            sections=["DESIGN009 — Ledger cut-over > Verification plan"],
        )
        == "DECISION_LOG"
    )


def test_plain_restatements_do_not_outvote_the_heading_of_the_text_shown():
    shown = "The billing app is built once for both phone platforms."
    told = [
        "billing app build went out today",
        "billing app is on both stores now",
        "the billing app build was slow",
    ]
    assert page(shown, restatements=told) == "SYSTEM_OVERVIEW"
    assert page(shown, restatements=told, sections=["ADR-0004: Billing app > Decision"]) == (
        "DECISION_LOG"
    )


def test_a_heading_only_the_other_evidence_stands_under_weighs_less_than_the_form_shown():
    definition = "Backfill, the replay of missed rows from the archive, runs every night."
    assert page(definition) == "GLOSSARY"
    assert page(definition, restated_sections=["Ops runbook > Replays"]) == "GLOSSARY"
    # A form the text shows beats the heading it stands under.
    assert page(definition, sections=["RFC-0009: Archive replays > Design"]) == "GLOSSARY"
    choice = "The team picked Caddy over Nginx for its automatic certificates."
    assert page(choice, sections=["Project governance > Web servers policy"]) == "DECISION_LOG"


def test_a_condition_then_an_order_is_a_step_whatever_the_verb():
    assert page("When the cache is cold, warm it with the loader before traffic.") == "RUNBOOKS"
    assert page("If a release turns out broken, withdraw it from the registry.") == "RUNBOOKS"
    # A condition followed by a statement is no step.
    assert page("When the cache is cold, the loader takes a minute.") == "SYSTEM_OVERVIEW"


def test_a_term_set_off_by_an_appositive_is_a_definition():
    assert page("Heard it twice today: dwell time, the minutes a van waits at the dock.") == (
        "GLOSSARY"
    )
    # An adverb or a date opening the sentence is not a term.
    assert page("Yesterday, the build failed, again.") == "SYSTEM_OVERVIEW"
    assert page("On Monday, the team shipped, finally.") == "SYSTEM_OVERVIEW"


def test_where_a_thing_is_defined_is_not_a_definition_and_a_record_number_is_a_decision():
    assert page("Tile sizes are defined in `src/layout.ts` next to the map list.") == (
        "SYSTEM_OVERVIEW"
    )
    assert page("RFC-0031 accepted: writes are ordered by a logical clock.") == "DECISION_LOG"


T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_a_sweep_routes_by_the_heading_its_episodes_were_imported_under():
    def ep(i: int, text: str, section: str) -> Ep:
        return Ep(
            id=i,
            occurred_at=T0 + timedelta(days=i),
            content=text,
            kind="note",
            memory_type="episodic",
            actor="alice",
            source_id=i,
            source_trust=0.6,
            section=section,
        )

    text = "The invoice archive keeps every settled invoice for ten years on s3-archive-2."
    eps = [ep(1, text, "ADR-0002: Invoice retention > Decision"), ep(2, text, "")]
    result = run_sweep(eps, policy=Policy(min_evidence=1, min_score=0.0), now=T0 + timedelta(9))
    (cand,) = [c for c in result.candidates if "archive" in c.text]
    assert cand.page_target == "DECISION_LOG"
    assert "ADR-0002" in cand.route_reason


def test_a_never_or_always_order_is_a_rule_even_as_a_line_of_a_runbook():
    runbook = ["Deploy runbook — api to prod > Before you start"]
    assert page("Never restart both workers at once.", sections=runbook) == "GOVERNANCE"
    assert page("Always take a dump before migrating.", sections=runbook) == "GOVERNANCE"
    # Any other line of the runbook is a step.
    assert page("The previous version number is written down.", sections=runbook) == "RUNBOOKS"


def test_an_order_drawn_from_a_lesson_stated_before_it_is_a_rule():
    lesson = (
        "**Finding:** Parsing the config on every request doubles the p95 latency. "
        "**Response:** Parse it once at start-up and pass the parsed object down."
    )
    assert page(lesson) == "GOVERNANCE"
    assert page("Cause: the cache fills up overnight. Fix: Clear the cache before the batch.") == (
        "GOVERNANCE"
    )
    # Labelled orders in a row are steps of a how-to, and one label over orders is a
    # heading of its own, not a lesson.
    assert page("Step 1: Drain the node. Step 2: Restart the worker on it.") != "GOVERNANCE"
    assert page("**Plugins:** Define new plugins in the registry. Add tests next to them.") != (
        "GOVERNANCE"
    )
    # A statement after a statement orders nothing.
    assert page("**Finding:** Parsing is slow. **Impact:** The p95 latency doubles.") != (
        "GOVERNANCE"
    )


def test_a_reversal_votes_for_the_decision_log_but_the_forms_of_a_procedure_outvote_it():
    step = (
        "If the refund still shows pending, run `purse refund retry` for it, then close the ticket."
    )
    runbook = ["Ops runbook > Refunds stuck"]
    # A reversal with nothing else to say about its kind is a decision.
    plain = "The nightly export now writes one file per tenant."
    got = route(plain, **{**KW, "contested": "reversal"})
    assert got.page == "DECISION_LOG" and "reversal" in got.reason
    # A step of a procedure that changed is still a step: it belongs in the runbook.
    kw = {**KW, "contested": "reversal"}
    assert route(step, **kw, sections=runbook).page == "RUNBOOKS"
    told = ["1. Run `purse refund retry` on the refund."]
    assert route(step, **kw, restatements=told).page == "RUNBOOKS"


def test_one_choice_announced_as_replacing_another_is_a_decision_however_it_is_worded():
    assert page("Until last spring the rota was a spreadsheet; the scheduler replaced it.") == (
        "DECISION_LOG"
    )
    assert page("We moved off the hosted queue and run our own broker now.") == "DECISION_LOG"
    # Asking for a switch decides nothing.
    assert page("Maybe we should switch the rota to the scheduler.") == "SYSTEM_OVERVIEW"


def test_a_sentence_of_the_shown_text_read_again_on_its_own_is_not_another_telling():
    shown = "A hotel asked for the guest list again. Same answer as last time, we keep it."
    parts = ["A hotel asked for the guest list again.", "Same answer as last time, we keep it."]
    rule = "Guest lists go to the coast guard on request and to nobody else."
    told = [shown, *parts, rule]
    tally = count_cues(shown, restatements=told)
    assert tally.counts["SYSTEM_OVERVIEW"]["plain_restated"] == 0
    assert tally.told == 2
    # The shown text's silence counts once; the one telling that states the rule wins.
    assert page(shown, restatements=told) == "GOVERNANCE"
