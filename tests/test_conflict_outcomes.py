"""Issue 18: a conflict decision leaves the right state behind.

The losing side leaves the queue, a resolved dispute is not raised again by the same
evidence, sides valid in different scopes become scoped claims, OPEN_QUESTIONS keeps its
escalations and its approved questions, and a claim side counts its claim's evidence.
"""

from __future__ import annotations

import importlib
import json
from datetime import date

import pytest
from django.core.management import call_command
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence, Conflict
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import AuditEvent, Claim, Episode, Page
from llmwiki.wiki import claim_retract, page_rollback
from reviews import actions, conflicts
from reviews.errors import ReviewRefused
from reviews.models import Review
from reviews.views.queue import approval_diff
from tests.api_data import bearer, url
from tests.dreaming_data import seed

SEVENTEEN = {
    "memory/2026-11-14.md": "# 2026-11-14 — agent:builder\n\n## Notes\n"
    "- The staging database runs PostgreSQL 17 on db-staging-2.\n",
    "memory/2026-11-15.md": "# 2026-11-15 — agent:scout\n\n## Notes\n"
    "- staging DB is Postgres 17 (host db-staging-2)\n",
    "memory/2026-11-16.md": "# 2026-11-16 — agent:builder\n\n## Notes\n"
    "- Reminder: db-staging-2 is our staging database, PostgreSQL 17.\n",
}
LATER = {
    "memory/2026-11-20.md": "# 2026-11-20 — agent:scout\n\n## Notes\n"
    "- Checked again: the staging database runs PostgreSQL 17 on db-staging-2.\n",
}
NOVEMBER = (date(2026, 11, 1), date(2026, 11, 30))


def ingest(project, files: dict[str, str]) -> None:
    ingest_files(
        project=project, files=[RawFile(p, t.encode()) for p, t in files.items()], actor="system"
    )


def sweep(project, trigger: str = "manual", **extra):
    run = dreaming.dream_request(
        project=project, trigger=trigger, actor="t", enqueue=False, **extra
    )
    return dreaming.dream_execute(run_id=run.pk)


def approve(candidate, user, **extra) -> Claim:
    return actions.candidate_approve(
        candidate=candidate, reviewer=user, seen=actions.form_state(candidate), **extra
    )


def staging(project) -> Conflict:
    return Conflict.objects.get(project=project, kind="value")


def side_with(conflict, text: str):
    return next(s for s in conflict.sides.all() if text in s.text)


@pytest.fixture
def two_candidates(project) -> Conflict:
    """PostgreSQL 16 on five days, 17 on three: one sweep proposes both and disputes them."""
    seed(project)
    ingest(project, SEVENTEEN)
    sweep(project)
    return staging(project)


@pytest.fixture
def against_a_claim(project, bob) -> Conflict:
    """PostgreSQL 16 is approved memory when three days of 17 arrive."""
    seed(project)
    sweep(project)
    approve(Candidate.objects.get(project=project, text__contains="PostgreSQL 16"), bob)
    ingest(project, SEVENTEEN)
    sweep(project)
    return staging(project)


def reviews_of(candidate) -> list[tuple[str, str]]:
    return list(Review.objects.filter(candidate=candidate).values_list("action", "note"))


def audited(candidate, action: str) -> list[str]:
    events = AuditEvent.objects.filter(
        action=action, object_type="Candidate", object_id=str(candidate.pk)
    )
    return list(events.values_list("note", flat=True))


# --- Losing a conflict closes the losing side (item 9) -------------------------------------


def test_a_sweep_links_each_side_to_the_candidate_it_proposed(two_candidates):
    for version in ("16", "17"):
        side = side_with(two_candidates, f"PostgreSQL {version}")
        assert (
            side.candidate.text
            == f"The staging database runs PostgreSQL {version} on db-staging-2."
        )
        assert set(side.evidence.values_list("id", flat=True)) == set(
            side.candidate.evidence.filter(role="support").values_list("episode_id", flat=True)
        )


def test_keeping_the_existing_claim_rejects_the_losing_candidate_with_the_reason(
    against_a_claim, bob, alice
):
    conflict = against_a_claim
    loser = side_with(conflict, "PostgreSQL 17").candidate
    kept = side_with(conflict, "PostgreSQL 16").claim
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="keep-existing")
    loser.refresh_from_db()
    reason = f"resolved in conflict #{conflict.pk}: the existing memory was kept"
    assert loser.status == "rejected"
    assert reviews_of(loser) == [("reject", reason)]
    assert audited(loser, "candidate.rejected") == [reason]
    event = AuditEvent.objects.get(action="conflict.keep-existing", object_id=str(conflict.pk))
    assert event.after["closed_candidates"] == [loser.pk]
    # A second reviewer can no longer approve it beside the claim that was kept.
    with pytest.raises(ReviewRefused, match="no longer awaiting review"):
        approve(loser, alice)
    approved = Claim.objects.filter(project=conflict.project).approved()
    assert list(approved.values_list("id", flat=True)) == [kept.pk]


def test_a_reviewer_sees_what_became_of_each_side_on_the_resolved_card(
    client, against_a_claim, bob
):
    conflict = against_a_claim
    loser = side_with(conflict, "PostgreSQL 17").candidate
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="keep-existing")
    client.force_login(bob)
    page = reverse("reviews:conflicts", args=[conflict.project.slug])
    body = client.get(page, {"conflict": conflict.pk}).content.decode()
    assert f">candidate #{loser.pk}</a> (rejected)" in body


def test_a_refused_resolution_leaves_the_sides_open(against_a_claim, bob):
    conflict = against_a_claim
    side = side_with(conflict, "PostgreSQL 17")
    Episode.objects.filter(pk__in=side.evidence.all())._unchecked_update(flags=["pii:email"])
    Candidate.objects.filter(pk=side.candidate_id).update(flags=["pii:email"])
    with pytest.raises(ReviewRefused, match="needs a maintainer"):
        conflicts.conflict_resolve(
            conflict=conflict, actor=bob, resolution="merge", merged_text="Postgres 16, then 17."
        )
    side.candidate.refresh_from_db()
    assert side.candidate.status == "proposed" and reviews_of(side.candidate) == []


def test_accepting_one_side_rejects_the_other_sides_candidate(two_candidates, bob):
    conflict = two_candidates
    winner, loser = side_with(conflict, "PostgreSQL 17"), side_with(conflict, "PostgreSQL 16")
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="accept-new", winner=winner.position
    )
    conflict.refresh_from_db()
    assert conflict.accepted_candidate == winner.candidate  # its own, queued for review
    assert Candidate.objects.get(pk=winner.candidate_id).status == "proposed"
    assert reviews_of(loser.candidate) == [
        (
            "reject",
            f"resolved in conflict #{conflict.pk}: side {winner.position + 1} was accepted instead",
        )
    ]


def test_merging_closes_both_sides_as_merged_into_the_queued_text(two_candidates, bob):
    conflict = two_candidates
    sides = list(conflict.sides.all())
    merged = "The staging database moved from PostgreSQL 16 to 17 on db-staging-2."
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="merge", merged_text=merged)
    conflict.refresh_from_db()
    queued = conflict.accepted_candidate
    assert queued.text == merged and queued.status == "proposed"
    reason = f"resolved in conflict #{conflict.pk}: taken up as candidate #{queued.pk}"
    for side in sides:
        side.candidate.refresh_from_db()
        assert side.candidate.status == "merged"
        assert reviews_of(side.candidate) == [("merge", reason)]
        assert audited(side.candidate, "candidate.merged") == [reason]


def test_a_merge_over_an_approved_claim_merges_the_candidate_into_the_new_claim(
    against_a_claim, bob
):
    conflict = against_a_claim
    loser = side_with(conflict, "PostgreSQL 17").candidate
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="merge", merged_text="Postgres 16, then 17."
    )
    conflict.refresh_from_db()
    loser.refresh_from_db()
    assert (loser.status, loser.claim) == ("merged", conflict.accepted_claim)


def test_the_migration_links_sides_recorded_before_sweeps_linked_them(two_candidates, bob):
    from django.apps import apps

    conflict = two_candidates
    linked = {s.pk: s.candidate_id for s in conflict.sides.all()}
    conflict.sides.update(candidate=None)
    module = importlib.import_module("dreaming.migrations.0006_link_conflict_sides_to_candidates")
    module.link(apps, None)
    assert {s.pk: s.candidate_id for s in conflict.sides.all()} == linked
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="keep-existing")
    assert set(
        Candidate.objects.filter(pk__in=linked.values()).values_list("status", flat=True)
    ) == {"rejected"}


# --- A resolved dispute is raised again only by new evidence (item 9) ----------------------


def test_the_same_evidence_does_not_raise_a_resolved_dispute_again(two_candidates, bob):
    conflict = two_candidates
    conflicts.conflict_resolve(
        conflict=conflict,
        actor=bob,
        resolution="merge",
        merged_text="The staging database moved from PostgreSQL 16 to 17 on db-staging-2.",
    )
    conflict.refresh_from_db()
    approve(conflict.accepted_candidate, bob)
    # Reading November again meets the same episodes against the merged claim.
    run = sweep(conflict.project, trigger="backfill", backfill=NOVEMBER)
    assert run.counts["conflicts"] == 2 and run.counts["new_conflicts"] == 0
    assert Conflict.objects.filter(project=conflict.project).count() == 2


def test_new_evidence_raises_it_again_and_the_card_links_the_resolution(
    client, against_a_claim, alice, bob, carol
):
    conflict = against_a_claim
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="keep-existing")
    assert sweep(conflict.project, "backfill", backfill=NOVEMBER).counts["new_conflicts"] == 0
    ingest(conflict.project, LATER)
    assert sweep(conflict.project).counts["new_conflicts"] == 1
    again = Conflict.objects.get(project=conflict.project, reopens=conflict)
    assert again.status == "open" and again.dedupe_key != conflict.dedupe_key
    assert side_with(again, "PostgreSQL 16").claim == side_with(conflict, "PostgreSQL 16").claim
    client.force_login(carol)
    body = client.get(reverse("reviews:conflicts", args=[conflict.project.slug])).content
    link = f"?conflict={conflict.pk}#conflict-{conflict.pk}"
    assert f'{link}">conflict #{conflict.pk}</a>' in body.decode()
    listed = client.get(
        url(conflict.project, "conflicts"), {"show": "all"}, headers=bearer(conflict.project, alice)
    ).json()["items"]
    assert {c["id"]: c["reopens"] for c in listed} == {
        c.pk: c.reopens_id for c in Conflict.objects.filter(project=conflict.project)
    }
    assert {c["id"]: c["reopens"] for c in listed}[again.pk] == conflict.pk


# --- Both valid in different scopes becomes scoped claims (item 10) ------------------------


def test_sides_valid_in_different_scopes_become_claims_that_say_where(two_candidates, bob):
    conflict = two_candidates
    sixteen, seventeen = side_with(conflict, "PostgreSQL 16"), side_with(conflict, "PostgreSQL 17")
    conflicts.conflict_resolve(
        conflict=conflict,
        actor=bob,
        resolution="both-valid",
        scopes={sixteen.position: "the EU cluster", seventeen.position: "for the US cluster"},
    )
    claims = {c.text: c for c in Claim.objects.filter(project=conflict.project).approved()}
    in_eu = claims["In the EU cluster: The staging database runs PostgreSQL 16 on db-staging-2."]
    in_us = claims["For the US cluster: The staging database runs PostgreSQL 17 on db-staging-2."]
    for claim, side in ((in_eu, sixteen), (in_us, seventeen)):
        assert set(claim.evidence.all()) == set(side.evidence.all())  # provenance carried
        side.candidate.refresh_from_db()
        assert (side.candidate.status, side.candidate.claim) == ("merged", claim)
        assert f"(claim {claim.pk}; evidence" in claim.page.current_revision.markdown
    event = AuditEvent.objects.get(action="conflict.both-valid", object_id=str(conflict.pk))
    assert event.after["scoped_claims"] == sorted([in_eu.pk, in_us.pk])


def test_a_claim_side_valid_in_its_scope_is_superseded_by_its_scoped_text(against_a_claim, bob):
    conflict = against_a_claim
    old = side_with(conflict, "PostgreSQL 16").claim
    scopes = {s.position: "staging" if s.claim_id else "preview" for s in conflict.sides.all()}
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="both-valid", scopes=scopes)
    old.refresh_from_db()
    scoped = old.superseded_by
    assert old.status == "superseded"
    assert scoped.text == "In staging: " + old.text
    assert set(scoped.evidence.all()) == set(old.evidence.all())


def test_scoped_claims_are_written_together_or_not_at_all(two_candidates, bob):
    conflict = two_candidates
    side = side_with(conflict, "PostgreSQL 17")
    Episode.objects.filter(pk__in=side.evidence.all())._unchecked_update(flags=["pii:email"])
    before = Claim.objects.count()
    with pytest.raises(ReviewRefused, match="needs a maintainer"):
        conflicts.conflict_resolve(
            conflict=conflict,
            actor=bob,
            resolution="both-valid",
            scopes={s.position: f"scope {s.position}" for s in conflict.sides.all()},
        )
    conflict.refresh_from_db()
    assert conflict.status == "open" and Claim.objects.count() == before
    assert not conflict.sides.exclude(scope_note="").exists()
    assert set(
        Candidate.objects.filter(pk__in=[s.candidate_id for s in conflict.sides.all()]).values_list(
            "status", flat=True
        )
    ) == {"proposed"}


# --- OPEN_QUESTIONS has one definition (item 11) -------------------------------------------


def question(project, text: str, *, key: str, page: str = "OPEN_QUESTIONS") -> Candidate:
    candidate = Candidate.objects.create(
        project=project,
        text=text,
        page_target=page,
        section="Questions" if page == "OPEN_QUESTIONS" else "",
        memory_type="semantic-candidate",
        dedupe_key=key,
    )
    episode = project.episodes.filter(source__isnull=False).order_by("id").first()
    CandidateEvidence.objects.create(candidate=candidate, episode=episode)
    return candidate


def open_questions(project) -> str:
    return Page.objects.get(project=project, key="OPEN_QUESTIONS").current_revision.markdown


ESCALATED = "_Escalated: owner alice, due 2027-01-15._"


@pytest.fixture
def escalated(project, alice) -> Conflict:
    seed(project)
    sweep(project)
    conflict = Conflict.objects.get(project=project, kind="reversal")
    conflicts.conflict_resolve(
        conflict=conflict, actor=alice, resolution="escalate", owner=alice, due=date(2027, 1, 15)
    )
    return conflict


def test_an_unrelated_approval_keeps_the_escalated_question(escalated, bob, alice):
    project = escalated.project
    asked = question(project, "Who owns the nightly export to the warehouse?", key="q1")
    elsewhere = question(project, "The CSV export runs at 02:00.", key="q2", page="SYSTEM_OVERVIEW")
    # The approval's preview removes nothing from the page either.
    page = Page.objects.get(project=project, key="OPEN_QUESTIONS")
    assert not [r for r in approval_diff(asked, page, project) if r.kind == "del"]
    claim = approve(asked, bob)
    approve(elsewhere, bob)
    markdown = open_questions(project)
    assert ESCALATED in markdown and f"## {escalated.subject}" in markdown
    assert f"- Who owns the nightly export to the warehouse? _(claim {claim.pk};" in markdown
    # Resolving another conflict recompiles the page from the same definition.
    other = Conflict.objects.create(project=project, subject="s", kind="value", dedupe_key="x")
    conflicts.conflict_resolve(conflict=other, actor=bob, resolution="keep-existing")
    assert ESCALATED in open_questions(project) and f"(claim {claim.pk};" in open_questions(project)


def test_a_retraction_and_a_rollback_keep_the_escalated_question(escalated, bob, alice):
    project = escalated.project
    first = approve(question(project, "Who owns the nightly export?", key="q1"), bob)
    page = Page.objects.get(project=project, key="OPEN_QUESTIONS")
    with_first = page.revisions.order_by("-number").first()
    second = approve(question(project, "Is the staging DB backed up?", key="q2"), bob)
    claim_retract(claim=second, actor=bob, reason="answered")
    markdown = open_questions(project)
    assert ESCALATED in markdown and f"(claim {first.pk};" in markdown
    assert f"(claim {second.pk};" not in markdown
    page_rollback(page=page, revision=with_first.parent, actor=alice, reason="undo")
    markdown = open_questions(project)
    assert ESCALATED in markdown and f"(claim {first.pk};" not in markdown
    first.refresh_from_db()
    assert first.status == "rolled-back"


# --- A claim side counts its claim's evidence (item 17) ------------------------------------


def test_a_claim_side_shows_its_claims_evidence(client, capsys, against_a_claim, alice, carol):
    conflict = against_a_claim
    side = side_with(conflict, "PostgreSQL 16")
    cited = set(side.claim.evidence.values_list("id", flat=True))
    assert len(cited) == 5 and not side.evidence.exists()
    client.force_login(carol)
    body = client.get(reverse("reviews:conflicts", args=[conflict.project.slug])).content.decode()
    assert "approved claim" in body and "5 evidence" in body and "0 evidence" not in body
    conflicts.open_questions_publish(project=conflict.project, actor="system", reason="t")
    assert f"- {side.text} _(5 evidence)_" in open_questions(conflict.project)
    listed = client.get(
        url(conflict.project, "conflicts"), headers=bearer(conflict.project, alice)
    ).json()["items"]
    shown = next(s for c in listed for s in c["sides"] if s["claim_id"] == side.claim_id)
    assert {e["episode_id"] for e in shown["evidence"]} == cited
    call_command("conflicts", "--project", conflict.project.slug, "--json")
    documents = json.loads(capsys.readouterr().out)
    shown = next(s for c in documents for s in c["sides"] if s["claim_id"] == side.claim_id)
    assert len(shown["evidence"]) == 5


def test_a_scoped_claims_candidate_names_the_resolution_not_a_sweep(client, two_candidates, bob):
    conflict = two_candidates
    conflicts.conflict_resolve(
        conflict=conflict,
        actor=bob,
        resolution="both-valid",
        scopes={s.position: f"region {s.position}" for s in conflict.sides.all()},
    )
    scoped = Candidate.objects.get(dedupe_key=f"conflict:{conflict.pk}:0")
    client.force_login(bob)
    body = client.get(reverse("dreaming:explain", args=[conflict.project.slug, scoped.pk]))
    assert (
        f"a reviewer&#x27;s resolution of conflict #{conflict.pk} (both valid"
        in body.content.decode()
    )
