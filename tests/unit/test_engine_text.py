"""Text analysis: cleaning, tokens, key terms, entities, junk, snippets."""

from __future__ import annotations

import pytest

from dreaming.engine.blocks import blocks, normalise, sentences
from dreaming.engine.text import analyse, entities, key_terms, tokenize
from dreaming.engine.wording import (
    asks_the_listener,
    dated,
    display_text,
    junk_reason,
    not_a_claim,
    standalone,
    trim_snippet,
)


def test_it_reads_hosts_versions_and_environments():
    ents = entities("The staging Postgres (v16) lives on db-staging-2, next to api.example.com.")

    assert ents["host"] == {"db-staging-2", "api.example.com"}
    assert ents["value"] == {"16"}
    assert ents["env"] == {"staging"}


def test_it_spells_one_version_one_way():
    assert entities("worker v1.5")["value"] == entities("worker 1.5")["value"] == {"1.5"}
    assert entities("PostgreSQL 16")["value"] == entities("Postgres v16")["value"]


def test_it_reads_identifiers_and_names():
    ents = entities("The billing_export job is Alice's; `make deploy` is in ops/run.sh, ask @bob")

    assert {"billing_export", "make deploy", "run.sh"} <= ents["ident"]
    assert {"alice", "bob"} <= ents["name"]


def test_it_does_not_take_a_sentence_opening_word_for_a_name():
    assert entities("Deployed worker to tw-app-1.")["name"] == frozenset()
    assert "grace" in entities("Deployed worker after Grace approved.")["name"]
    assert entities("Decision: Use RabbitMQ.")["name"] == {"rabbit"}


def test_it_normalises_synonyms_into_key_terms():
    assert key_terms("staging DB is Postgres 16") == key_terms("staging database is PostgreSQL 16")
    assert "prod" not in key_terms("prod database") and "production" in key_terms("prod database")


def test_it_tokenises_to_lowercase_words_without_stopwords():
    assert tokenize("The Worker is on tw-app-1.") == ["worker", "tw-app-1"]


def test_it_ignores_clock_times():
    assert analyse("09:14 deployed worker at 16:45").values == frozenset()


def test_it_marks_negated_sentences():
    assert analyse("We do not use MongoDB.").negated
    assert not analyse("We use MongoDB.").negated


def test_it_strips_log_noise_and_joins_wrapped_lines():
    got = blocks(
        "## Notes\n"
        "09:14 - deployed the worker\n"
        "- [x] migrate billing-export\n\n"
        "A wrapped paragraph\ncontinues here.\n\n"
        "[2026-03-01 10:00] tail line"
    )

    assert [(b.text, b.heading, b.checkbox) for b in got] == [
        ("Notes", True, None),
        ("deployed the worker", False, None),
        ("migrate billing-export", False, "x"),
        ("A wrapped paragraph continues here.", False, None),
        ("tail line", False, None),
    ]


def test_it_splits_sentences_but_not_versions():
    assert sentences("Deployed v1.5 to tw-app-1. It works! Does it?") == [
        "Deployed v1.5 to tw-app-1.",
        "It works!",
        "Does it?",
    ]


def test_it_normalises_for_exact_duplicates():
    assert normalise("09:14  Deployed the   worker.") == normalise("- deployed the worker")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("$ kubectl get pods -n staging", "shell_command"),
        ("kubectl rollout restart deploy/worker -n staging", "shell_command"),
        ("git push origin main", "shell_command"),
        ("https://grafana.internal/d/abc123", "bare_url"),
        ("`make deploy`", "code_only"),
        ("| host | role | | --- | --- | | app-1 | api + worker |", "table"),
        ("ok sounds good", "too_short"),
        ("   ", "empty"),
    ],
)
def test_it_names_why_a_sentence_is_junk(text, reason):
    assert junk_reason(text, analyse(text)) == reason


def test_it_calls_an_empty_heading_junk():
    (block,) = blocks("## ")
    assert junk_reason(block.text, analyse(block.text), block.heading) == "empty"
    assert junk_reason("Notes", analyse("Notes"), heading=True) == "heading"


def test_it_keeps_a_procedure_that_quotes_a_command():
    text = "Run `systemctl restart worker` on tw-app-1 when the queue stalls."
    assert junk_reason(text, analyse(text)) is None


def test_it_strips_filler_labels_but_nothing_else():
    assert display_text("Reminder: db-staging-2 is our staging database.") == (
        "db-staging-2 is our staging database."
    )
    assert display_text("Decision: use Caddy.") == "Decision: use Caddy."


def test_it_trims_snippets_at_a_sentence_boundary():
    text = "First sentence is here. " * 40
    out = trim_snippet(text, 640)

    assert len(out) <= 642
    assert out.endswith("here. …")
    assert trim_snippet("short", 640) == "short"


def test_it_keeps_unpunctuated_log_lines_apart_but_joins_wrapped_paragraphs():
    got = blocks(
        "uploader serves on :6379\n"
        "Only Dan may approve prod deploys.\n"
        "A wrapped paragraph that goes on and\n"
        "continues here, and\n"
        "Alice approved it."
    )
    assert [b.text for b in got] == [
        "uploader serves on :6379",
        "Only Dan may approve prod deploys.",
        "A wrapped paragraph that goes on and continues here, and Alice approved it.",
    ]


def test_it_splits_sentences_that_start_in_lower_case_but_not_abbreviations():
    text = "Erin owns report-builder. owner: Ivan for it. e.g. this stays whole. J. Smith agreed."
    assert sentences(text) == [
        "Erin owns report-builder.",
        "owner: Ivan for it.",
        "e.g. this stays whole.",
        "J. Smith agreed.",
    ]


def test_it_ends_a_log_entry_at_the_next_unindented_line():
    got = blocks("- [x] ledger rotation\nBob is out until Monday.\n- note\n  wrapped under it")
    assert [(b.text, b.checkbox) for b in got] == [
        ("ledger rotation", "x"),
        ("Bob is out until Monday.", None),
        ("note wrapped under it", None),
    ]


def test_it_marks_fenced_and_prompted_tool_output_as_code():
    got = blocks(
        "- ran the cleanup\n"
        "$ make migrate ENV=qa\n"
        "```\n"
        "Operations to perform:\n"
        "  Apply all migrations: billing, auth\n"
        "```\n"
        "$ kubectl get pods\n"
        "worker-1 Running\n"
        "\n"
        "The cleanup is done."
    )
    assert [(b.text, b.code) for b in got] == [
        ("ran the cleanup", False),
        ("$ make migrate ENV=qa", False),
        ("Operations to perform: Apply all migrations: billing, auth", True),
        ("$ kubectl get pods", False),
        ("worker-1 Running", True),
        ("The cleanup is done.", False),
    ]
    assert junk_reason(got[2].text, analyse(got[2].text), code=True) == "tool_output"


def test_it_numbers_the_items_of_a_numbered_list():
    got = blocks("1. Drain edge-1.\n2. Deploy to edge-1.\n- a bullet")
    assert [b.number for b in got] == [1, 2, 0]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Grace, Heidi, Ivan, ops, me.", "name_list"),
        ("that's not what the billing-export job does yet", "fragment"),
        ("It was a real race in the ledger scheduler, not CI noise.", "fragment"),
    ],
)
def test_it_calls_name_lists_and_leaning_fragments_junk(text, reason):
    assert junk_reason(text, analyse(text)) == reason


def test_it_keeps_lists_with_a_predicate_and_lists_of_things():
    for text in (
        "Grace, Heidi and Ivan own the ledger rotation.",
        "Apps: `billing`, `ledger`, `search`, `auth`.",
    ):
        assert junk_reason(text, analyse(text)) is None


def test_it_strips_a_leading_clock_time_from_display_text():
    assert display_text("10:50 We moved the queue to cache-3.") == "We moved the queue to cache-3."
    assert display_text("14:00–14:25 design review notes") == "design review notes"


def test_it_strips_a_lead_in_addressed_to_the_reader():
    said = "noting for whoever runs the upgrade next: ledger-db-2 is our ledger Engine, v16"
    assert display_text(said) == "ledger-db-2 is our ledger Engine, v16"
    assert display_text("side question before I forget, for the upgrade: ledger runs v16") == (
        "ledger runs v16"
    )
    assert display_text("Storage: invoices live in the ledger schema.") == (
        "Storage: invoices live in the ledger schema."
    )


@pytest.mark.parametrize(
    ("text", "alone"),
    [
        ("Every invoice export is signed with the billing key.", True),
        ("This is signed with the billing key before upload.", False),
        ("Restart it remotely with the forwarder tool.", False),
        ("Devices on mains power may revisit this.", False),
        ("Is every invoice export signed with the key?", False),
        ("Exports are signed.", False),
        ("Written by Ann for new joiners of the ledger team.", False),
        ("If something here disagrees with the box, the box wins.", False),
    ],
)
def test_standalone_tells_a_claim_from_a_sentence_that_leans_on_its_neighbours(text, alone):
    assert standalone(text) is alone


@pytest.mark.parametrize(
    ("text", "is_dated"),
    [
        ("Restore test into a scratch DB some evening next week.", True),
        ("I'll write the numbers down tomorrow.", True),
        ("Fixed the exporter overnight; will roll the keys today.", True),
        ("We'll use the ledger schema for invoices.", False),
        ("The nightly export is signed with the billing key.", False),
        ("Invoices older than a week are archived.", False),
        ("OPS-228 raised for node-4; the electrician is booked as well.", True),
        ("MR !421 merged: alert templates now lead with the block name.", True),
        ("OPS-228 tracks the flaky export of the ledger.", False),
        # a weekday without a date is a day near the writer's now; a habit is not
        ("The fee review is booked for Thursday.", True),
        ("Rollout to half the dispatchers on Friday.", True),
        ("Reports go out on Monday mornings.", False),
        ("Deploys happen on Tuesdays.", False),
        ("The backup runs every Sunday.", False),
    ],
)
def test_dated_tells_a_log_entry_or_plan_from_a_durable_statement(text, is_dated):
    assert dated(text) is is_dated


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("What gave you the idea?", True),
        ("You’re on call Friday, aren’t you?", True),
        ("Should we keep the old endpoint?", False),
        ("Ann asked whether you can reboot the relay remotely.", False),
        ("You can reboot the relay remotely.", False),
    ],
)
def test_a_question_put_to_the_listener_is_told_apart(text, asks):
    assert asks_the_listener(text) is asks


@pytest.mark.parametrize(
    ("text", "claim"),
    [
        ("Deciders: Ann Lee, Bo Chan and Cy Diaz", False),
        ("Attendees: Ann Lee, Bo Chan", False),
        ("Two rules were restated for the summer briefing:", False),
        ("Owner: the platform team runs the relay on tw-app-1.", True),
        ("Storage: ClickHouse keeps every reading for two years.", True),
    ],
)
def test_a_lead_in_or_a_field_of_names_is_not_a_claim(text, claim):
    assert not_a_claim(text) is not claim


def test_display_text_is_plain_text_whatever_the_markup():
    assert display_text("See [the runbook](https://x.example/run) for steps.") == (
        "See the runbook for steps."
    )
    assert display_text("Read link:https://a.example/c[the guide] and <<ops,ops notes>>.") == (
        "Read the guide and ops notes."
    )
    assert display_text("The <b>API</b> runs on <code>tw-app-1</code>.") == (
        "The API runs on tw-app-1."
    )
    assert display_text("| 2 | Refactor the store | Complete |") == (
        "2; Refactor the store; Complete"
    )
    assert display_text("- [x] 1. Announce the deploy in the ops channel.") == (
        "Announce the deploy in the ops channel."
    )
    assert display_text("== Storage engines") == "Storage engines"


def test_display_text_drops_a_speaker_only_when_they_are_one_of_the_people():
    people = frozenset({"priya", "ann", "lee"})
    said = "09:10 Priya: the export job runs nightly."
    assert display_text(said, people) == "the export job runs nightly."
    assert display_text("Ann Lee (SRE): backups are kept 30 days.", people) == (
        "backups are kept 30 days."
    )
    assert display_text(said) == "Priya: the export job runs nightly."
    assert display_text("Storage: invoices live in the schema.", people) == (
        "Storage: invoices live in the schema."
    )
    assert display_text("Decision: use the queue.", people) == "Decision: use the queue."
