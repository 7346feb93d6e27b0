"""Paraphrase grouping (dreaming/engine/similar.py) on restatements written for this test.

The filler blocks give the sweep a realistic spread of term frequencies: restatements share
rare names, unrelated blocks share only common words.
"""

from dreaming.engine.blocks import sentences
from dreaming.engine.pipeline import run_sweep
from dreaming.engine.similar import (
    TermIndex,
    block_terms,
    neighbours,
    similarity,
    star_groups,
    stem,
)
from dreaming.engine.text import analyse

from .test_engine_pipeline import NOW, ep

FILLER = [
    "Standup moved to half past nine because of the team lunch.",
    "Reviewed two merge requests and left comments on the naming.",
    "The printer on the second floor is out of toner again.",
    "Paired on the onboarding checklist for the new starter.",
    "Updated the sprint board and closed three stale tickets.",
    "Lunch order went in late, everyone got their food anyway.",
    "Renamed a few variables in the reporting module for clarity.",
    "Read through the quarterly planning doc and added questions.",
    "Cleaned up old branches that were merged last month.",
    "The office wifi dropped twice during the afternoon call.",
    "Wrote notes for the retro about slow code reviews.",
    "Answered questions in the support channel about login emails.",
]

SAME_FACT = [
    "invoices end up in the `ledger` schema on Postgres, one partition per month",
    "reminder: the ledger schema tables are monthly partitions, don't create them by hand",
    "**Billing storage.** Invoices are persisted in Postgres (`ledger` schema), "
    "partitioned by month.",
]
SHARED_WORDS_OTHER_FACT = "Postgres backups run every night and the team checks them monthly."


def terms(texts):
    return block_terms([[analyse(s) for s in sentences(t)] for t in texts])


def test_stemming_folds_inflections_and_keeps_identifiers_whole():
    assert stem("partitioned") == stem("partitions") == stem("partition")
    assert stem("db-staging-2") == "db-staging-2"
    assert stem("sensor_readings") == "sensor_readings"


def test_a_restatement_shares_more_information_than_a_different_fact_with_shared_words():
    sets = terms([*SAME_FACT, SHARED_WORDS_OTHER_FACT, *FILLER])
    index = TermIndex.of(sets)
    same = similarity(sets[0], sets[1], index)
    other = similarity(sets[0], sets[3], index)
    assert same >= index.threshold > other


def test_one_shared_term_is_a_topic_not_a_fact():
    sets = [frozenset({"ledger", "a"}), frozenset({"ledger", "b"})]
    assert similarity(*sets, TermIndex.of(sets)) == 0.0


def test_neighbours_find_every_restatement_and_nothing_else():
    texts = [*SAME_FACT, SHARED_WORDS_OTHER_FACT, *FILLER]
    sets = terms(texts)
    near = neighbours(sets, TermIndex.of(sets))
    assert {y for y, _ in near[0]} == {1, 2}
    assert near[3] == []
    assert all(near[4 + k] == [] for k in range(len(FILLER)))


def test_two_word_names_count_once():
    texts = [
        "Tarrow Point gateway lost power overnight.",
        "Visited Tarrow Point to swap the enclosure.",
        "Tarrow Point growers asked for a report.",
    ]
    sets = terms(texts)
    assert all("tarrow point" in s and "tarrow" not in s for s in sets)


def test_star_groups_do_not_chain_through_a_hub():
    # 0 is close to 1 and 2; 3 is close only to 2. A chain would join all four.
    near = [
        [(1, 20.0), (2, 20.0)],
        [(0, 20.0)],
        [(0, 20.0), (3, 15.0)],
        [(2, 15.0)],
    ]
    groups = star_groups(4, near, lambda a, b: True, [0.5] * 4)
    assert [0, 1, 2] in groups and [3] in groups


def test_a_block_goes_to_the_centre_it_restates_not_the_first_that_shares_its_topic():
    # 0 is a hub sharing a topic with 1, 2 and 3; 3 restates 4, which restates 5. The hub
    # is taken first and would keep 3 (it is among 3's closest), but 3 shares far more
    # with 4, which becomes a centre of its own.
    near = [
        [(1, 20.0), (2, 20.0), (3, 12.0)],
        [(0, 20.0)],
        [(0, 20.0)],
        [(4, 25.0), (0, 12.0)],
        [(3, 25.0), (5, 20.0)],
        [(4, 20.0)],
    ]
    groups = star_groups(6, near, lambda a, b: True, [0.5] * 6)
    assert [0, 1, 2] in groups and [3, 4, 5] in groups


def test_star_groups_respect_the_identity_guard():
    near = [[(1, 20.0)], [(0, 20.0)]]
    assert star_groups(2, near, lambda a, b: False, [0.5, 0.5]) == [[0], [1]]


def test_a_sweep_folds_three_wordings_into_one_candidate_with_all_their_evidence():
    eps = [ep(i + 1, i * 3, t) for i, t in enumerate(SAME_FACT)]
    eps += [ep(10 + k, k, t) for k, t in enumerate(FILLER)]
    result = run_sweep(eps, now=NOW)
    about = [c for c in result.candidates if "ledger" in c.text.lower()]
    assert len(about) == 1
    assert sorted(e.episode_id for e in about[0].evidence if e.role == "support") == [1, 2, 3]


def test_a_different_fact_with_shared_words_is_not_folded_in():
    eps = [ep(i + 1, i * 3, t) for i, t in enumerate(SAME_FACT)]
    eps.append(ep(4, 2, SHARED_WORDS_OTHER_FACT))
    eps += [ep(10 + k, k, t) for k, t in enumerate(FILLER)]
    result = run_sweep(eps, now=NOW)
    for c in result.candidates:
        ids = {e.episode_id for e in c.evidence}
        assert not (4 in ids and ids & {1, 2, 3}), c.text


def test_two_environments_stay_apart_however_alike_the_wording():
    eps = [
        ep(1, 0, "The staging ledger schema keeps one partition per month on pg-staging-1."),
        ep(2, 3, "Monthly partitions for the ledger schema live on pg-staging-1 (staging)."),
        ep(3, 5, "The prod ledger schema keeps one partition per month on pg-prod-1."),
        ep(4, 7, "Monthly partitions for the ledger schema live on pg-prod-1 (prod)."),
        *[ep(10 + k, k, t) for k, t in enumerate(FILLER)],
    ]
    result = run_sweep(eps, now=NOW)
    for c in result.candidates:
        ids = {e.episode_id for e in c.evidence if e.role == "support"}
        assert not (ids & {1, 2} and ids & {3, 4}), c.text


def test_restating_matches_a_draft_to_the_open_candidate_it_restates():
    from dreaming.engine.restate import restating

    waiting = [
        "Invoices are stored in the ledger schema on billing-db-3.",
        "The sync interval for mobile clients is 10 minutes.",
    ]
    drafts = [
        "billing-db-3 holds the invoices in its ledger schema.",  # same fact, other words
        "The sync interval for mobile clients is 5 minutes.",  # a change, not more evidence
        "Invoices are stored in the ledger schema on billing-db-7.",  # another host
        "Lunch on Friday is at the usual place.",
    ]
    assert restating(drafts, waiting) == {0: 0}
    assert restating(drafts, []) == {}
