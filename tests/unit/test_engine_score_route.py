"""Deep: signal formulas, weighting, and page routing with named rules."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from dreaming.engine import Policy, RecallStats
from dreaming.engine.consolidate import choose, text_key
from dreaming.engine.route import route
from dreaming.engine.score import EvidenceView, signals, weighted
from dreaming.engine.text import analyse

NOW = datetime(2026, 3, 10, tzinfo=UTC)


def view(**kw) -> EvidenceView:
    base = {
        "n_support": 3,
        "days": 3,
        "newest": NOW,
        "trust": [0.6, 0.8],
        "recall": [],
        "key_terms": 3,
    }
    base.update(kw)
    return EvidenceView(**base)


def test_it_computes_each_signal_as_documented():
    raw = signals(
        view(recall=[RecallStats(2, 4, 2, 0.9), RecallStats(1, 1, 1, 0.6)]), NOW, Policy()
    )

    assert raw["relevance"] == pytest.approx((0.9 * 2 + 0.6) / 3)
    assert raw["frequency"] == pytest.approx(math.log1p(3) / math.log1p(10))
    assert raw["query_diversity"] == pytest.approx(1.0)  # 5 distinct queries
    assert raw["recency"] == pytest.approx(1.0)
    assert raw["recurrence"] == pytest.approx(1.0)
    assert raw["source_trust"] == pytest.approx(0.7)
    assert raw["richness"] == pytest.approx(0.5)


def test_it_halves_recency_every_half_life():
    raw = signals(view(newest=NOW - timedelta(days=14)), NOW, Policy())
    assert raw["recency"] == pytest.approx(0.5)


def test_it_caps_frequency_and_diversity_at_one():
    raw = signals(view(n_support=50, days=9), NOW, Policy())
    assert raw["frequency"] == 1.0 and raw["query_diversity"] == 1.0


def test_it_weights_signals_and_keeps_the_breakdown():
    raw = dict.fromkeys(
        [
            "relevance",
            "frequency",
            "query_diversity",
            "recency",
            "recurrence",
            "source_trust",
            "richness",
        ],
        1.0,
    )
    score, breakdown = weighted(raw, Policy())

    assert score == pytest.approx(1.0)
    assert breakdown["relevance.w"] == pytest.approx(0.30)
    assert breakdown["richness"] == 1.0


def r(text: str, contested: str | None = None, procedural: float = 0.0):
    return route(
        text, contested=contested, procedural_votes=procedural, subject_label="s", day_label="d"
    )


def test_it_routes_by_named_rules():
    assert r("The worker runs on tw-app-1.").page == "SYSTEM_OVERVIEW"
    assert r("We decided to use Caddy.").page == "DECISION_LOG"
    assert r("Only Grace may approve production deploys.").page == "GOVERNANCE"
    assert r("Never deploy on Fridays.").page == "GOVERNANCE"
    assert r("Run `make deploy` then check the dashboard.").page == "RUNBOOKS"
    assert r("Is cache-3 still in use?").page == "OPEN_QUESTIONS"
    assert r("SLO means service level objective.").page == "GLOSSARY"
    assert "decided" in r("We decided to use Caddy.").reason


def test_it_sends_contested_values_to_open_questions_and_reversals_to_the_decision_log():
    assert r("The staging DB is Postgres 16.", contested="value").page == "OPEN_QUESTIONS"
    assert r("Redis Streams carries the shipment queue.", contested="reversal").page == (
        "DECISION_LOG"
    )


def test_it_follows_procedural_evidence():
    assert r("The worker drains slowly.", procedural=0.8).page == "RUNBOOKS"


def test_it_chooses_the_most_representative_clean_sentence():
    texts = [
        "staging DB is Postgres 16 (host db-staging-2)",
        "The staging database runs PostgreSQL 16 on db-staging-2.",
        "The deploy key is [REDACTED:ssh_key] on db-staging-2 for Postgres 16 staging.",
        "$ psql -h db-staging-2",
    ]
    feats = [analyse(t) for t in texts]
    junk = [None, None, None, "shell_command"]
    core = {"staging", "database", "postgres", "db-staging-2"}
    got = choose([0, 1, 2, 3], texts, feats, junk, [0.6] * 4, [1] * 4, core, 640)

    assert got.unit == 1  # full coverage, same trust, well-formed beats shorter
    only_bad = choose([2, 3], texts, feats, junk, [0.6] * 4, [1] * 4, core, 640)
    assert only_bad.unit is None and "redacted" in only_bad.reason


def test_it_keys_candidates_by_their_normalised_text():
    assert text_key("The worker runs.") == text_key("the  worker runs")
    assert text_key("a").startswith("cand:")


def test_restatements_vote_for_the_page_the_chosen_sentence_does_not_name():
    shown = "The ledger agent asked how reconciliation counts a settled invoice."
    told = ['Glossary: "settled invoice" = an invoice whose payment cleared the bank.']
    assert r(shown).page == "SYSTEM_OVERVIEW"
    got = route(
        shown,
        contested=None,
        procedural_votes=0.0,
        subject_label="s",
        day_label="d",
        restatements=told,
    )
    assert got.page == "GLOSSARY"
    assert "2 texts" in got.reason


def test_a_code_span_is_a_command_only_when_it_reads_as_one():
    assert r("Invoices live in the `ledger_entries` table, one partition per month.").page == (
        "SYSTEM_OVERVIEW"
    )
    assert r("Stuck queue: `queuectl purge orders-dlq`, then restart the consumer.").page == (
        "RUNBOOKS"
    )


def test_definition_forms_name_their_term():
    got = r("**Settled invoice** — an invoice whose payment cleared the bank.")
    assert (got.page, got.section) == ("GLOSSARY", "Settled invoice")
    assert r("A settled invoice is any invoice whose payment cleared.").page == "GLOSSARY"


def test_a_passing_word_in_one_restatement_does_not_move_a_fact():
    kw = {"contested": None, "procedural_votes": 0.0, "subject_label": "s", "day_label": "d"}
    told = ["Reruns were never needed, as a rule."]
    assert route("The export job writes one file per tenant.", restatements=told, **kw).page == (
        "SYSTEM_OVERVIEW"
    )
    assert r("Exports never leave the EU region, as a rule.").page == "GOVERNANCE"
    assert r("The outbox table never deletes sent rows.").page == "SYSTEM_OVERVIEW"
    assert r("Maya wants a decision on the queue by Friday.").page == "OPEN_QUESTIONS"


def test_consent_and_conditional_permission_are_rules():
    assert r("Exports to partners need the customer's consent on file.").page == "GOVERNANCE"
    assert r("Refunds are allowed for support staff, but only against a ticket.").page == (
        "GOVERNANCE"
    )


def test_approval_a_change_needs_and_sharing_with_no_one_else_are_rules():
    assert r("A manual refund above 150 needs four-eyes before it is sent.").page == "GOVERNANCE"
    assert r("Every schema change requires a second person's sign-off.").page == "GOVERNANCE"
    assert r("Crew lists go to the harbour office on request and to nobody else.").page == (
        "GOVERNANCE"
    )


def test_one_option_weighed_against_another_is_a_decision():
    assert r("Nothing to do with picking Payco over Cardly; its minimum ruled it out.").page == (
        "DECISION_LOG"
    )
    assert r("Kestrel was evaluated in the ADR and lost to Harrier.").page == "DECISION_LOG"


def test_what_counts_as_a_term_is_a_definition_and_data_that_goes_only_to_one_party_a_rule():
    assert r("What counts as a no-show: a rider whose ticket was never scanned.").page == (
        "GLOSSARY"
    )
    assert r("Crew lists go only to the harbour office when it asks.").page == "GOVERNANCE"


def test_a_term_said_to_be_a_thing_is_a_definition_and_access_granted_by_a_rule_is_a_rule():
    assert r("Learned a word today: a quadrat is the square frame surveyors drop.").page == (
        "GLOSSARY"
    )
    assert r("Ann asked what a tombstone is; it marks a deleted record.").page == "GLOSSARY"
    assert r("Commit access is granted by lazy consensus after a week.").page == "GOVERNANCE"
    assert r("Every commit needs a Signed-off-by trailer with a real name.").page == "GOVERNANCE"
    assert r("The relay is a Go service on app-3.").page == "SYSTEM_OVERVIEW"


def test_a_bold_term_followed_by_how_or_what_it_is_is_a_definition():
    got = r("**Turnaround**: how long a van waits at the depot between two runs.")
    assert (got.page, got.section) == ("GLOSSARY", "Turnaround")


def test_a_condition_followed_by_a_command_beats_the_word_agreed_among_restatements():
    shown = "Agreed fallback: if the queue is silent for ten minutes, on-call runs `qctl drain`."
    kw = {"contested": None, "procedural_votes": 0.0, "subject_label": "s", "day_label": "d"}
    told = ["Drained first, debugged afterwards."]
    assert route(shown, restatements=told, **kw).page == "RUNBOOKS"


def test_sections_are_named_in_the_facts_own_words():
    from dreaming.engine.route import section_name
    from dreaming.engine.text import key_terms

    def name(text: str) -> str | None:
        return section_name(text, key_terms(text))

    assert name("The ledger database runs Engine 16 on ledger-db-2.") == "Ledger database"
    assert name("**Storage.** Invoices live in the ledger schema.") == "Storage"
    assert name("Billing storage: invoices live in the ledger schema.") == "Billing storage"
    # A speaker, a past form and a negation name nothing.
    assert name("Ann: closed the invoice-sync spike.") != "Ann"
    assert name("OPS-12 raised for node-4; the electrician is booked.") != "Raised"
    assert name("Never restart more than three nodes at once.") != "Never"


def test_a_bold_term_and_a_dash_is_a_glossary_entry_however_the_definition_opens():
    assert r("**LOA** — length overall of a vessel, in metres.").page == "GLOSSARY"
    assert r("**Loading window** — 05:30–07:30, when the morning sailings load.").page == (
        "GLOSSARY"
    )
    assert r("**Lint:** Fixed the new rule failures.").page != "GLOSSARY"  # a label


def test_plain_restatements_do_not_outvote_the_form_of_the_text_shown():
    entry = "**Manifest** — the list of all units loaded on one sailing."
    passing = [
        "checked the manifest for the morning sailing",
        "the manifest export was late again",
        "manifest totals match the tally",
        "manifest count was off by one",
        "printed the manifest for the quay",
    ]
    got = route(
        entry,
        contested=None,
        procedural_votes=0.0,
        subject_label="s",
        day_label="d",
        restatements=passing,
    )
    assert got.page == "GLOSSARY"


def test_never_or_always_opening_a_clause_states_a_rule():
    assert r("Secrets live in the vault; never in the repo or in logs.").page == "GOVERNANCE"
    assert r("The job never deletes rows.").page == "SYSTEM_OVERVIEW"  # describes
