"""Conflicts across wordings (disputes.py), on statement pairs written for the purpose."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dreaming.engine import disputes
from dreaming.engine.blocks import sentences
from dreaming.engine.morph import term
from dreaming.engine.text import analyse

T0 = datetime(2026, 5, 4, tzinfo=UTC)


def block(text: str, day: int) -> disputes.Said:
    parts = sentences(text)
    return disputes.said(parts, [analyse(s) for s in parts], T0 + timedelta(days=day))


def found(*texts: str) -> list[disputes.Dispute]:
    """Run every block against every other (the pipeline only offers neighbours)."""
    blocks = {x: block(t, x) for x, t in enumerate(texts)}
    ops = []
    for x, a in blocks.items():
        others = [(y, b) for y, b in blocks.items() if y != x]
        ops.extend(disputes.oppositions(x, a, others, lambda t: 3.0, 5.0))
    return disputes.disputes(ops, blocks)


def test_the_same_fact_in_other_words_is_no_conflict():
    assert not found(
        "Invoices end up in the Ledger schema on Postgres, one partition per month.",
        "Reminder: the Ledger tables are monthly partitions, don't create them by hand.",
    )


def test_a_different_fact_with_shared_words_is_no_conflict():
    assert not found(
        "The Billing worker retries failed Stripe charges every 6 hours.",
        "The Billing worker sends the Stripe receipts to the finance mailbox.",
    )


def test_a_changed_setting_is_a_value_conflict_with_each_side_its_own_evidence():
    (d,) = found(
        "The export job timeout is 30 minutes on the nightly run.",
        "Nightly run: export job timeout is 30 minutes, as agreed.",
        "From today the export job timeout is 45 minutes for the nightly run.",
    )
    assert d.kind == "value"
    assert [sorted(blocks) for blocks, _ in d.sides] == [[0, 1], [2]]


def test_a_value_is_compared_with_the_one_in_its_own_slot():
    # The first block also holds a fare; the fee is what changed, restated on both sides.
    (d,) = found(
        "Fares today: a day pass costs £7.40, and every online order carries a service fee of "
        "£1.20.",
        "The service fee stays at £1.20 per order until the review.",
        "The service fee comes down to £0.85 per order from 30 March.",
    )
    assert d.kind == "value"
    assert [sorted(blocks) for blocks, _ in d.sides] == [[0, 1], [2]]


def test_a_setting_that_moves_is_changed_not_measured():
    (d,) = found(
        "Refund rule: the cancellation cutoff is 24 hours before departure.",
        "Reminder: the cancellation cutoff is 24 hours before departure for refunds.",
        "The cancellation cutoff drops to 6 hours before departure for refunds.",
    )
    assert d.kind == "value"
    assert not found(
        "The export job's run time dropped to 40 minutes after the index fix.",
        "The export job's run time is 55 minutes on the nightly run.",
        "The export job's run time is 55 minutes, as usual.",
    )


def test_a_changing_reading_is_not_a_conflict():
    assert not found(
        "Export job took about 31 minutes on the nightly run.",
        "Export job took about 44 minutes on the nightly run.",
        "Export job peaked at 52 minutes on the nightly run.",
    )


def test_a_reversal_is_found_whatever_the_verbs():
    (d,) = found(
        "Order emails for the web shop go through Mailgun, templates in the repo.",
        "Order emails for the web shop now go through Postmark; the old templates were ported.",
    )
    assert d.kind == "reversal"
    (old, _), (new, _) = d.sides
    assert old == [0] and new == [1]


def test_a_new_choice_opening_a_clause_is_a_name_the_sweep_knows():
    old = "Feature flags live in Flagmaster; the refund screen sits behind a flag there."
    new = "Feature flags have moved: Togglebox, self-hosted, replaced the hosted service."
    known = frozenset({"flagmaster", "togglebox"})  # both seen mid-sentence elsewhere
    blocks = {
        0: disputes.said(sentences(old), [analyse(x) for x in sentences(old)], T0),
        1: disputes.said(
            sentences(new),
            [analyse(x) for x in sentences(new)],
            T0 + timedelta(days=9),
            known=known,
        ),
    }
    ops = disputes.oppositions(1, blocks[1], [(0, blocks[0])], lambda t: 3.0, 5.0)
    ops += disputes.oppositions(0, blocks[0], [(1, blocks[1])], lambda t: 3.0, 5.0)
    (d,) = disputes.disputes(ops, blocks)
    assert d.kind == "reversal"
    # Without knowing the name, a capital after a colon is no evidence of one.
    blocks[1] = disputes.said(sentences(new), [analyse(x) for x in sentences(new)], blocks[1].when)
    ops = disputes.oppositions(0, blocks[0], [(1, blocks[1])], lambda t: 3.0, 5.0)
    assert not disputes.disputes(ops, blocks)


def test_a_now_about_something_else_is_no_reversal():
    assert not found(
        "Order emails for the web shop go through Mailgun, templates in the repo.",
        "The Grafana board now has a latency panel for the shop.",
    )


def test_a_change_under_another_label_is_no_reversal_of_it():
    old = block("Refactor: the session logic lives in SessionHooks and the settings modal.", 0)
    new = block("Lint: the session logic rules now pass and ConstObjects replaced the enums.", 3)
    assert disputes.reversal(0, 1, old, new, lambda t: 3.0, 1.0) is None
    same = block("Refactor: the session logic now lives in ConstObjects instead.", 3)
    assert disputes.reversal(0, 1, old, same, lambda t: 3.0, 1.0) is not None


def test_a_question_asked_is_no_choice_a_change_reverses():
    asked = block("Ann asked whether the shop app could read Mailgun directly for the badge.", 0)
    now = block("The shop app now reads the badge from Postmark by default.", 3)
    assert disputes.reversal(0, 1, asked, now, lambda t: 3.0, 1.0) is None
    said = block("The shop app reads Mailgun directly for the badge.", 0)
    assert disputes.reversal(0, 1, said, now, lambda t: 3.0, 1.0) is not None


def test_a_denial_sharing_one_common_word_with_a_statement_is_no_conflict():
    assert not found(
        "Clearing (clearCart) sets cartStatus to empty and clears the order fields.",
        "displayMode is a sticky setting (it is not cleared by openCart or clearCart in the reducer).",
    )


def test_a_denied_possession_is_a_negation_conflict():
    (d,) = found(
        "Edge routers: Model-7 units, each with a UPS module that covers an hour without power.",
        "Checked the parts list: the Model-7 units have no UPS module; only old units carry one.",
    )
    assert d.kind == "negation"


def test_a_denial_of_something_else_is_no_conflict():
    assert not found(
        "Edge routers: Model-7 units, each with a UPS module that covers an hour without power.",
        "The Model-7 units are not an exception to the patch window.",
    )


@pytest.mark.parametrize(
    "texts",
    [
        # a tense's auxiliary is no possession
        (
            "37 tickets have been stuck in the Helpdesk queue since Monday's outage.",
            "The Helpdesk queue has 37 tickets with no owner assigned since Monday's outage.",
        ),
        # a question reported, not a claim
        (
            "Asked Sam why the Kiosk app isn't React Native like the rest of the code.",
            "Sam said React Native was evaluated for the Kiosk app and lost to Flutter.",
        ),
        # a restrictive clause defines a kind
        (
            "The Pier gates now scan Quickpass codes on every boarding.",
            "A no-show is a passenger whose Quickpass code wasn't scanned at the Pier gates.",
        ),
        # a state in progress at one moment
        (
            "The Notifier service sends outage alerts through Textly to riders.",
            "Outage alerts weren't going through Textly last night: the Notifier service got 401.",
        ),
        # a change foretold, then made: one piece of news
        (
            "Sync bridge: down to the fare sync only; Ann can move that onto the Importer job "
            "next week.",
            "The fare sync moved onto the Importer job yesterday; the Bridge feed was switched "
            "off this morning.",
        ),
        # a switch someone only asks for has not happened
        (
            "Dispatch lets the Skua taxis out whatever the Beaufort reading says.",
            "Skua taxis stay in port above Beaufort 6; Ann wants Dispatch to block them "
            "automatically instead of the Harbourmaster phoning round.",
        ),
        # one shared word is a topic
        (
            "Seat-hold expiry fix merged; holds now lapse after 12 minutes instead of hanging "
            "around.",
            "Positions now come from the Beacon receivers; a fix every 10 s instead of once a "
            "minute.",
        ),
    ],
)
def test_what_only_looks_like_a_disagreement_is_none(texts):
    assert not found(*texts)


def test_a_support_window_in_months_changes_and_the_slot_is_read_from_its_clause():
    (d,) = found(
        "Each minor line gets security fixes for a support window of 18 months.",
        "Pointed them to the 18 months support window for each minor line.",
        "Vote closed: the support window per minor release line shrinks to 12 months.",
        "Backports follow the shorter support window of 12 months for every minor line.",
    )
    assert d.kind == "value"
    assert [sorted(blocks) for blocks, _ in d.sides] == [[0, 1], [2, 3]]


def test_the_upper_end_of_a_range_is_a_reading():
    (limit, upper) = disputes.quantities(
        "The attachment limit is now 100 MB; files run to 40–80 MB."
    )
    assert (limit.reading, upper.reading) == (False, True)


def test_blocks_naming_one_setting_in_few_other_words_are_paired_through_its_slot():
    texts = [
        "Per-record attachment limit is 25 MB today; bigger files are refused with E0413.",
        "The attachment limit of 25 MB doesn't come into it, the file was 9 MB.",
        "PR merged: the attachment limit per record is now 100 MB for the recorders.",
        "The attachment limit is raised to 100 MB per record.",
    ]
    blocks = [(x, block(t, x)) for x, t in enumerate(texts)]
    ops = disputes.same_slot_changes(blocks)
    assert {(op.old, op.new) for op in ops} >= {(0, 2), (0, 3)}
    (d,) = disputes.disputes(ops, dict(blocks))
    assert [sorted(b) for b, _ in d.sides] == [[0, 1], [2, 3]]


def test_a_move_naming_what_moved_before_where_it_went_is_a_reversal():
    (d,) = found(
        "Support chat is the Chatly server, where most bug reports start.",
        "Moved support chat to Talkhub today; the old server is read-only.",
    )
    assert d.kind == "reversal"
    assert [blocks for blocks, _ in d.sides] == [[0], [1]]


def test_a_reversal_is_against_the_statement_about_its_subject_not_a_passing_mention():
    (d,) = found(
        "The manuals build on Pagehost from `manuals/` on every push to main, with preview "
        "builds on pull requests.",
        # shares more words with the move below, but only mentions the manuals in passing
        "What the ledger is, for the manuals glossary: a Lite file at `.pollen/ledger.db` in "
        "every checkout, holding the hash and version of each record as last synced; `pollen "
        "sync` diffs against it and uploads only what moved.",
        "Manuals moved: they are now built by a workflow in the main repo and served from "
        "Sitebox Pages at example.github.io/pollen; the old hosted project keeps a redirect.",
    )
    assert d.kind == "reversal"
    assert [blocks for blocks, _ in d.sides] == [[0], [2]]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Nightly images build on Quayside.", "Images are now built on Forgeworks instead."),
        (
            "The backups are taken by Snapvault every week.",
            "Backups: we now take them with Copymate.",
        ),
        ("Site plans are drawn in Mapkit.", "Plans: the crew now draw them in Sketchly."),
    ],
)
def test_a_reversal_told_with_an_irregular_past_shares_its_verb(old, new):
    # Only the thing and its verb are shared; "built" is "build" as "moved" is "move".
    (d,) = found(old, new)
    assert d.kind == "reversal"
    assert [blocks for blocks, _ in d.sides] == [[0], [1]]


def test_only_irregular_past_forms_that_are_rarely_another_word_are_read_as_their_verb():
    assert term("built") == term("builds") == "build"
    assert term("chosen") == term("chose") == term("choosing")
    assert term("ran") == term("run") and term("overridden") == term("override")
    # "upper bound", "ground truth", "a bit": read as themselves
    assert [term(w) for w in ("bound", "ground", "bit", "moved")] == [
        "bound",
        "ground",
        "bit",
        "move",
    ]
