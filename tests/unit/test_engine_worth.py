"""The claim-worthiness model: its place codes, its shipped weights, and its use in Deep."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from dreaming.engine import Ep, Policy, run_sweep
from dreaming.engine.text import analyse
from dreaming.engine.worth import (
    BOX_OPEN,
    FEATURES,
    HEADING_AHEAD,
    ITEM,
    NUMBERED,
    WEIGHTS_PATH,
    Model,
    features,
    imperative,
    place_code,
    plan_episodes,
    shipped,
)

T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def ep(i: int, day: float, text: str, kind: str = "note", trust: float = 0.8) -> Ep:
    return Ep(i, T0 + timedelta(days=day, minutes=i), text, kind, "episodic", "user:a", i, trust)


def test_a_place_code_records_the_list_item_and_its_checkbox():
    code = place_code(
        kind="log_entry",
        item=True,
        number=3,
        checkbox=" ",
        heading=None,
        first_sentence=True,
        first_block=False,
        one_block=False,
    )
    assert code & ITEM and code & NUMBERED and code & BOX_OPEN


def test_the_shipped_weights_cover_every_feature_and_name_their_threshold():
    doc = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    assert set(doc["weights"]) == set(FEATURES)
    assert 0.0 < shipped().threshold < 1.0


def test_weights_missing_a_feature_are_refused_by_name():
    doc = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    del doc["weights"]["question"]
    with pytest.raises(ValueError, match="question"):
        Model.from_json(doc)


def test_repeated_chat_fragments_are_gated_and_note_statements_proposed():
    eps = [
        ep(1, 0, "The production database runs PostgreSQL 16 on db-prod-1."),
        ep(2, 0, "Never run migrations from both hosts at the same time."),
    ]
    chat = ["CI red on my branch: test_berth_allocation again.", "plenty for us (~2k msgs/hour)"]
    for k, text in enumerate(chat):
        eps += [ep(10 + 10 * k + d, d, text, kind="chat_turn", trust=0.5) for d in range(3)]

    result = run_sweep(eps)

    texts = {c.text for c in result.candidates}
    assert texts == {
        "The production database runs PostgreSQL 16 on db-prod-1.",
        "Never run migrations from both hosts at the same time.",
    }
    assert all(0.0 < c.signals["worth"] <= 1.0 for c in result.candidates)
    gated = {s.reason: s.episode_ids for s in result.stays_episodic}
    assert set(gated["not_claim_worthy"]) == {10, 11, 12, 20, 21, 22}
    assert "not worded as a claim" in result.diary


def test_within_the_cap_a_clean_statement_leads_better_supported_log_narration():
    # Said on three days, "Paired with …" scores higher on support than the statement
    # written once; the cap of one must still propose the statement, and the narration
    # is gated as not worded as a claim (or at most deferred behind it).
    eps = [ep(1, 0, "Never run migrations from both hosts at the same time.")]
    eps += [
        ep(10 + d, d, "Paired with Bo on the invoice export job, mostly reading logs.", "log_entry")
        for d in range(3)
    ]
    result = run_sweep(eps, policy=Policy(max_proposals=1))

    proposed = [c.text for c in result.candidates if c.status == "proposed"]
    assert proposed == ["Never run migrations from both hosts at the same time."]


def test_a_fact_is_proposed_in_its_most_claim_like_wording():
    # The wording covering most of the fact's terms is the day's narration; another wording
    # of the same fact, in a note, reads as a plain statement, and that one is what a
    # reviewer sees.
    eps = [
        ep(
            1,
            0,
            "- Checked that billing-db-3 holds invoices in its ledger schema.",
            "log_entry",
            0.6,
        ),
        ep(2, 1, "- The invoices live in the ledger schema (billing-db-3)."),
    ]
    result = run_sweep(eps)

    (candidate,) = result.candidates
    assert candidate.text == "The invoices live in the ledger schema (billing-db-3)."
    assert candidate.signals["worth"] >= shipped().threshold


def _x(text: str, kind: str = "note") -> dict[str, float]:
    place = place_code(
        kind=kind,
        item=False,
        number=0,
        checkbox=None,
        heading=None,
        first_sentence=True,
        first_block=True,
        one_block=True,
    )
    return dict(zip(FEATURES, features(text, analyse(text), place, 1, 0.8), strict=True))


def test_hosts_versions_and_ports_are_typed_values_not_loose_digits():
    assert _x("The staging Postgres (v16) lives on db-staging-2.")["loose_digits"] == 0
    assert _x("The gateway listens on port 8443.")["loose_digits"] == 0
    assert _x("Deployed at 09:10 on 2026-03-02, all green.")["loose_digits"] > 0


def test_first_person_or_subjectless_past_in_a_log_is_narration_not_in_a_note():
    said = "Paired with Bo on the invoice export job, mostly reading logs."
    assert _x(said, "log_entry")["narration"] == 1.0
    assert _x("I restarted the exporter after lunch.", "log_entry")["narration"] == 1.0
    assert _x(said, "note")["narration"] == 0.0
    assert _x("The exporter restarted cleanly.", "log_entry")["narration"] == 0.0


def test_under_a_dated_heading_a_note_keeps_a_log_and_its_past_tense_is_narration():
    said = "Fixed typecheck errors in the exporter and reran the tests."
    place = place_code(
        kind="note",
        item=True,
        number=0,
        checkbox=None,
        heading="2026-01-05",
        first_sentence=True,
        first_block=False,
        one_block=False,
    )
    got = dict(zip(FEATURES, features(said, analyse(said), place, 1, 0.8), strict=True))
    assert got["narration"] == 1.0
    assert _x(said, "note")["narration"] == 0.0


def test_an_order_is_told_from_a_subject_and_its_past_tense_verb():
    assert imperative("Add focused unit tests around the wave manager.")
    assert not imperative("Postgres crashed at 3am on the primary.")
    assert not imperative("Redis runs on db-cache-1.")


def test_items_of_a_note_section_that_are_mostly_orders_are_a_plan_but_numbered_steps_are_not():
    def item(i: int, text: str, section: str) -> Ep:
        return replace(ep(i, 0, text), source_id=7, section=section)

    eps = [
        item(1, "- Add Zustand store modules for runtime state.", "Task > Plan"),
        item(2, "- Remove the unused dependency.", "Task > Plan"),
        item(3, "- The store is created once per provider.", "Task > Plan"),
        item(4, "1. Drain the gateway.", "Runbook > Steps"),
        item(5, "2. Restart the forwarder.", "Runbook > Steps"),
        item(6, "- Add a retry to the uploader.", "Task > Other"),
    ]
    assert plan_episodes(eps) == {0, 1, 2}


def test_a_hedge_or_a_text_about_itself_is_marked_and_counts_against_a_claim():
    assert _x("Consider moving the search index to cache-3 if load grows.")["hedged"] == 1.0
    assert _x("The search index lives on cache-3.")["hedged"] == 0.0
    assert _x("File created at: docs/workflows.md (this file).")["self_reference"] == 1.0
    assert _x("The workflow file lists every deploy step.")["self_reference"] == 0.0
    weights = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))["weights"]
    assert weights["hedged"] < 0 and weights["self_reference"] < 0


def test_a_reference_statement_said_again_in_a_log_keeps_its_authority():
    # Alone the note clears the evidence gate on authority; the same line copied into a
    # log the same day is one more episode but no more occurrences, so the pair scores
    # under min_score. Saying it again must not lose what the note alone would propose.
    said = "The billing service stores invoices in the ledger schema on billing-db-3."
    eps = [ep(1, 0, said), ep(2, 0, f"- {said}", "log_entry", 0.6)]
    result = run_sweep(eps)

    (candidate,) = result.candidates
    assert candidate.text == said
    assert candidate.score < Policy().min_score
    assert candidate.signals["authority"] == 0.8


RULE = "Never run migrations from both hosts at the same time."
TODO = "- Add retries to the invoice export job on tw-app-2."


def test_within_the_cap_a_clean_statement_leads_a_to_do_copied_forward_for_days():
    # The to-do is said on four days and outscores the rule written once on support;
    # ranked by how claim-like the text reads first, the rule is the one proposed.
    eps = [ep(1, 0, RULE)] + [ep(10 + d, d, TODO, "log_entry", 0.6) for d in range(4)]
    roomy = {c.text: c for c in run_sweep(eps, policy=Policy(max_proposals=2)).candidates}
    assert roomy[TODO[2:]].score > roomy[RULE].score

    result = run_sweep(eps, policy=Policy(max_proposals=1))

    assert [c.text for c in result.candidates if c.status == "proposed"] == [RULE]


def test_past_the_proposals_only_a_likely_claim_waits_in_the_deferred_band(monkeypatch):
    # News said in chat on four days clears a gate below even odds (proposed when there is
    # room) but the model rates it less likely a claim than not: over the cap it is gated,
    # where a clean note statement waits. (The shipped gate asks the same even odds, so
    # the band matters under a lower gate.)
    monkeypatch.setattr(shipped(), "threshold", 0.4)
    note = "Backups of the production database are kept for 30 days in the eu-west bucket."
    news = "The north pier turnstiles are waiting on the contractor."
    eps = [ep(1, 0, RULE), ep(2, 0, note)]
    eps += [ep(10 + d, d, news, "chat_turn", 0.6) for d in range(4)]
    roomy = {c.text: c for c in run_sweep(eps, policy=Policy(max_proposals=3)).candidates}
    assert roomy[news].status == "proposed"
    assert shipped().threshold <= roomy[news].signals["worth"] < 0.5 <= roomy[note].signals["worth"]

    result = run_sweep(eps, policy=Policy(max_proposals=1))

    assert {c.text: c.status for c in result.candidates} == {RULE: "proposed", note: "deferred"}
    gated = {s.reason: s.episode_ids for s in result.stays_episodic}
    assert set(gated["not_claim_worthy"]) == {10, 11, 12, 13}


def test_a_reference_fact_is_proposed_in_a_wording_that_reads_on_its_own(monkeypatch):
    # Three notes name the command; the choice by term coverage falls on a label line that
    # leans on its list. Under a project's higher score bar the fact passes on the notes'
    # authority alone, and is not lost for the label: the wording that says what the
    # command does, on its own, is shown.
    from dreaming.engine import deep
    from dreaming.engine.consolidate import Choice

    def by_coverage(units, texts, *args):
        (label,) = [u for u in units if texts[u].startswith("**Unit Tests:**")]
        return Choice(label, texts[label])

    monkeypatch.setattr(deep, "choose", by_coverage)
    eps = [
        ep(1, 0, "- **Unit Tests:** `npm run test`."),
        ep(2, 0, "- **Tests:** `npm run test`"),
        ep(3, 0, "- `npm run test` — run unit tests (Vitest)"),
    ]
    result = run_sweep(eps, policy=Policy(min_score=0.4))

    assert [c.text for c in result.candidates] == ["`npm run test` — run unit tests (Vitest)"]


def test_a_heading_over_work_to_come_marks_what_stands_under_it():
    def under(heading: str) -> int:
        return place_code(
            kind="note",
            item=True,
            number=0,
            checkbox=None,
            heading=heading,
            first_sentence=True,
            first_block=False,
            one_block=False,
        )

    assert under("Next steps") & HEADING_AHEAD
    assert under("Implementation Plan") & HEADING_AHEAD
    assert under("What's left / recommended follow-ups") & HEADING_AHEAD
    assert not under("Architecture") & HEADING_AHEAD
    assert not under("Planets and their moons") & HEADING_AHEAD
    weights = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))["weights"]
    assert weights["heading_ahead"] < 0


def test_a_status_said_again_in_chat_is_gated_and_proposed_once_a_note_says_it():
    # Said in chat on two days, a line is as often the day's news as a fact; written into
    # a note too, it is a fact someone meant to keep.
    said = "The staging deploy is green again after the fix."
    chat = [ep(10 + d, d, said, "chat_turn", 0.5) for d in range(2)]

    alone = run_sweep(chat)

    assert alone.candidates == []
    gated = {s.reason: s.episode_ids for s in alone.stays_episodic}
    assert set(gated["not_claim_worthy"]) == {10, 11}
    (candidate,) = run_sweep([ep(1, 0, said), *chat]).candidates
    assert candidate.text == said


def test_a_fact_is_noted_when_a_note_says_it_and_not_by_narration_in_a_note():
    said = "The invoice exporter runs nightly on billing-app-2."
    assert _x(said)["noted"] == 1.0
    assert _x(said, "chat_turn")["noted"] == 0.0
    place = place_code(
        kind="chat_turn",
        item=False,
        number=0,
        checkbox=None,
        heading=None,
        first_sentence=True,
        first_block=True,
        one_block=True,
    )
    restated = features(said, analyse(said), place, 3, 0.5, days=3, wordings=2, in_note=True)
    assert dict(zip(FEATURES, restated, strict=True))["noted"] == 1.0
    assert _x("Fixed the exporter and reran the nightly job.", "log_entry")["noted"] == 0.0
    weights = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))["weights"]
    assert weights["noted"] > 0
