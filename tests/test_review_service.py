from __future__ import annotations

import pytest
from django.utils import timezone

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki import wiki
from llmwiki.models import (
    AuditEvent,
    ChangelogEntry,
    Claim,
    Episode,
    ManifestVersion,
    Page,
    PageRevision,
)
from reviews import actions, conflicts, errors
from reviews.models import Review
from tests.dreaming_data import seed


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def staging(dreamed) -> Candidate:
    return Candidate.objects.get(project=dreamed, text__contains="db-staging-2")


def state(project) -> tuple:
    """Everything an action may change, to prove a refusal changed nothing."""
    return (
        list(Candidate.objects.filter(project=project).values_list("id", "status", "version")),
        list(Claim.objects.filter(project=project).values_list("id", "status", "text")),
        list(PageRevision.objects.filter(page__project=project).values_list("id", "content_hash")),
        Review.objects.count(),
        ManifestVersion.objects.filter(project=project).count(),
    )


def approve(candidate, user, **kwargs):
    return actions.candidate_approve(
        candidate=candidate, reviewer=user, seen=actions.form_state(candidate), **kwargs
    )


def test_approving_creates_the_claim_revision_manifest_changelog_and_audit(staging, bob):
    claim = approve(staging, bob, note="checked against the infra repo")
    staging.refresh_from_db()
    assert staging.status == "approved" and staging.claim == claim
    assert claim.evidence.count() == 5
    revision_text = Page.objects.get(pk=claim.page_id).current_revision.markdown
    assert all(f"#{e.pk}" in revision_text for e in claim.evidence.all())  # cites every episode
    assert {ref["sha256"] for ref in claim.source_refs} and len(claim.source_refs) == 5
    page = Page.objects.get(project=staging.project, key="SYSTEM_OVERVIEW")
    revision = page.current_revision
    assert revision.number == 1 and claim.pk in revision.claim_ids
    assert staging.text in revision.markdown
    assert ManifestVersion.objects.get(project=staging.project).content["claims"] == [claim.pk]
    assert ChangelogEntry.objects.filter(claim=claim).exists()
    assert Review.objects.get(candidate=staging).action == "approve"
    done = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"claim.approve", "page.revision", "candidate.approved"} <= done
    assert Episode.objects.filter(project=staging.project, kind="approval").exists()


def test_the_approval_line_skips_the_ingest_gate(staging, bob, monkeypatch, settings):
    import sys

    import llmwiki.record as record
    import llmwiki.security as security
    from llmwiki.models import Source

    classify = sys.modules["llmwiki.importers.classify"]

    def gate(*args, **kwargs):
        raise AssertionError("an approval went through the ingest gate")

    for module, name in ((security, "scan"), (classify, "classify"), (record, "blob_write")):
        monkeypatch.setattr(module, name, gate)
    sources = Source.objects.count()
    blobs = sorted(settings.BLOB_DIR.rglob("*"))
    claim = approve(staging, bob)
    line = Episode.objects.get(project=staging.project, kind="approval")
    assert line.content == f"Approved claim {claim.pk} on SYSTEM_OVERVIEW."
    assert line.actor == "user:bob" and line.locator == {"claim_id": claim.pk}
    assert line.source is None and Source.objects.count() == sources
    assert sorted(settings.BLOB_DIR.rglob("*")) == blobs


def test_only_bookkeeping_lines_may_skip_the_gate(project):
    from llmwiki.record import episode_record_system

    with pytest.raises(ValueError, match="'note' is not a bookkeeping kind"):
        episode_record_system(project=project, actor="system", kind="note", content="x")
    assert not Episode.objects.exists()


def test_approve_with_edit_keeps_both_texts(staging, bob):
    claim = approve(staging, bob, edited_text="Staging runs PostgreSQL 16 on host db-staging-2.")
    r = Review.objects.get(candidate=staging)
    assert r.action == "approve-edit"
    assert r.before_text == staging.text
    assert r.after_text == claim.text == "Staging runs PostgreSQL 16 on host db-staging-2."
    assert claim.text in Page.objects.get(pk=claim.page_id).current_revision.markdown


def test_a_viewer_is_refused_and_nothing_changes_but_a_denied_row(staging, carol):
    before = state(staging.project)
    with pytest.raises(errors.ReviewRefused) as exc:
        approve(staging, carol)
    assert exc.value.status == 403
    assert state(staging.project) == before
    assert AuditEvent.objects.filter(action="review.denied", object_id=str(staging.pk)).count() == 1


def test_a_stale_form_is_refused(staging, bob, alice):
    seen = actions.form_state(staging)
    actions.candidate_defer(candidate=staging, reviewer=alice, seen=seen)
    before = state(staging.project)
    with pytest.raises(errors.ReviewRefused, match="no longer awaiting review") as exc:
        actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen)
    assert exc.value.status == 409
    assert state(staging.project) == before


def test_a_change_in_the_section_the_claim_lands_in_makes_the_form_stale(dreamed, staging, bob):
    seen = actions.form_state(staging)
    other = Candidate.objects.create(
        project=dreamed,
        text="The API runs on tw-app-1.",
        page_target=staging.page_target,
        section=staging.section,
        memory_type="semantic-candidate",
        dedupe_key="extra",
    )
    CandidateEvidence.objects.create(candidate=other, episode=staging.evidence.first().episode)
    approve(other, bob)
    before = state(dreamed)
    with pytest.raises(errors.ReviewRefused, match="changed in section") as exc:
        actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen)
    assert exc.value.status == 409
    assert state(dreamed) == before


def test_a_double_submit_yields_one_claim_and_one_revision(staging, bob):
    seen = actions.form_state(staging)
    actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen)
    with pytest.raises(errors.ReviewRefused):
        actions.candidate_approve(candidate=staging, reviewer=bob, seen=seen)
    assert Claim.objects.filter(project=staging.project).count() == 1
    assert PageRevision.objects.filter(page__project=staging.project).count() == 1


def test_sensitive_material_needs_a_maintainer_and_a_confirmation(staging, bob, alice):
    Candidate.objects.filter(pk=staging.pk).update(flags=["pii:email"])
    staging.refresh_from_db()
    assert staging.get_actions(bob) == []
    assert "approve" in staging.get_actions(alice)
    with pytest.raises(errors.ReviewRefused, match="needs a maintainer"):
        approve(staging, bob)
    with pytest.raises(errors.ReviewRefused, match="confirm that you reviewed"):
        approve(staging, alice)
    assert not Claim.objects.exists()
    approve(staging, alice, sensitive_confirmed=True)
    assert Claim.objects.count() == 1


def test_provenance_must_be_complete(dreamed, bob):
    episode = Episode.objects.create(
        project=dreamed,
        occurred_at=timezone.now(),
        actor="agent:x",
        kind="note",
        content="An orphan fact.",
        content_hash="0" * 64,
    )
    candidate = Candidate.objects.create(
        project=dreamed,
        text="An orphan fact.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key="orphan",
    )
    CandidateEvidence.objects.create(candidate=candidate, episode=episode)
    with pytest.raises(errors.ReviewRefused, match=f"#{episode.pk} have no hashed source"):
        approve(candidate, bob)
    candidate.refresh_from_db()
    assert candidate.status == "proposed"


def test_the_four_eyes_rule_refuses_your_own_material(project, bob, alice):
    from dreaming.services import dream_execute, dream_request
    from llmwiki.ingest import RawFile, ingest_files
    from tests.dreaming_data import DAYS

    project.four_eyes = True
    project.save()
    ingest_files(
        project=project, files=[RawFile(p, t.encode()) for p, t in DAYS.items()], actor=bob
    )
    dream_execute(
        run_id=dream_request(project=project, trigger="manual", actor="t", enqueue=False).pk
    )
    candidate = Candidate.objects.get(project=project, text__contains="db-staging-2")
    with pytest.raises(errors.ReviewRefused, match="four-eyes"):
        approve(candidate, bob)
    approve(candidate, alice)


def test_reject_needs_a_reason_and_defer_works(staging, bob):
    with pytest.raises(errors.ReviewRefused, match="reason"):
        actions.candidate_reject(
            candidate=staging, reviewer=bob, seen=actions.form_state(staging), reason=" "
        )
    actions.candidate_defer(
        candidate=staging, reviewer=bob, seen=actions.form_state(staging), note="later"
    )
    staging.refresh_from_db()
    assert staging.status == "deferred"
    actions.candidate_reject(
        candidate=staging,
        reviewer=bob,
        seen=actions.form_state(staging),
        reason="duplicate of wiki",
    )
    staging.refresh_from_db()
    assert staging.status == "rejected"
    assert list(Review.objects.filter(candidate=staging).values_list("action", flat=True)) == [
        "reject",
        "defer",
    ]


def test_merge_gives_the_claim_the_candidate_evidence(dreamed, staging, bob):
    claim = approve(staging, bob)
    other = Candidate.objects.create(
        project=dreamed,
        text="db-staging-2 is staging.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key="merge-me",
    )
    extra = (
        Episode.objects.filter(project=dreamed, source__isnull=False)
        .exclude(pk__in=claim.evidence.all())
        .first()
    )
    CandidateEvidence.objects.create(candidate=other, episode=extra)
    actions.candidate_merge(
        candidate=other, reviewer=bob, seen=actions.form_state(other), claim=claim
    )
    assert claim.evidence.filter(pk=extra.pk).exists()
    assert f"#{extra.pk}" in Page.objects.get(pk=claim.page_id).current_revision.markdown
    other.refresh_from_db()
    assert other.status == "merged" and other.claim == claim


def test_rollback_and_re_rollback(dreamed, staging, bob, alice):
    first = approve(staging, bob)
    page = Page.objects.get(pk=first.page_id)
    r1 = page.current_revision
    second_candidate = Candidate.objects.create(
        project=dreamed,
        text="The API runs on tw-app-1 and tw-app-2.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key="api-hosts",
    )
    CandidateEvidence.objects.create(
        candidate=second_candidate, episode=staging.evidence.first().episode
    )
    second = approve(second_candidate, bob)
    page.refresh_from_db()
    r2 = page.current_revision
    with pytest.raises(errors.ReviewRefused):
        wiki.page_rollback(page=page, revision=r1, actor=bob, reason="x")  # reviewers may not
    r3 = wiki.page_rollback(page=page, revision=r1, actor=alice, reason="too early")
    assert r3.number == 3 and r3.markdown == r1.markdown
    second.refresh_from_db()
    assert second.status == "rolled-back"
    r4 = wiki.page_rollback(page=page, revision=r2, actor=alice, reason="it was right")
    assert r4.markdown == r2.markdown
    second.refresh_from_db()
    assert second.status == "approved"
    assert AuditEvent.objects.filter(action="page.rollback").count() == 2
    assert list(PageRevision.objects.filter(page=page).values_list("number", flat=True)) == [
        4,
        3,
        2,
        1,
    ]


def test_retracting_a_claim_republishes_the_page(staging, bob):
    claim = approve(staging, bob)
    revision = wiki.claim_retract(claim=claim, actor=bob, reason="host was renamed")
    claim.refresh_from_db()
    assert claim.status == "retracted"
    assert claim.text not in revision.markdown


def test_escalating_a_conflict_compiles_open_questions(dreamed, bob, alice):
    conflict = Conflict.objects.get(project=dreamed, kind="reversal")
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="escalate", owner=alice, note="ask Jonas"
    )
    page = Page.objects.get(project=dreamed, key="OPEN_QUESTIONS")
    assert conflict.subject in page.current_revision.markdown
    assert "owner alice" in page.current_revision.markdown
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="keep-existing", note="RabbitMQ it is"
    )
    page.refresh_from_db()
    assert conflict.subject not in page.current_revision.markdown
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.resolved_by == bob


def test_accepting_the_new_side_supersedes_the_approved_claim(dreamed, bob):
    page = Page.objects.get(project=dreamed, key="DECISION_LOG")
    old = Claim.objects.create(
        project=dreamed,
        page=page,
        text="Use RabbitMQ for the shipment event queue.",
        reviewer=bob,
    )
    conflict = Conflict.objects.create(
        project=dreamed, subject="queue", kind="reversal", dedupe_key="q"
    )
    ConflictSide.objects.create(conflict=conflict, position=0, text=old.text, claim=old)
    side = ConflictSide.objects.create(
        conflict=conflict, position=1, text="Use Redis Streams for the shipment event queue."
    )
    side.evidence.add(Episode.objects.filter(project=dreamed, content__contains="Redis").first())
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="accept-new", winner=1)
    old.refresh_from_db()
    assert old.status == "superseded"
    new = old.superseded_by
    assert new.text == "Use Redis Streams for the shipment event queue." and new.version == 2
    page.refresh_from_db()
    assert (
        new.text in page.current_revision.markdown
        and old.text not in page.current_revision.markdown
    )


def test_both_valid_needs_a_scope_per_side(dreamed, bob):
    conflict = Conflict.objects.filter(project=dreamed).first()
    with pytest.raises(errors.ReviewRefused, match="scope"):
        conflicts.conflict_resolve(
            conflict=conflict, actor=bob, resolution="both-valid", scopes={0: "prod"}
        )
    scopes = {s.position: f"scope {s.position}" for s in conflict.sides.all()}
    conflicts.conflict_resolve(conflict=conflict, actor=bob, resolution="both-valid", scopes=scopes)
    assert set(conflict.sides.values_list("scope_note", flat=True)) == set(scopes.values())


def test_a_viewer_cannot_resolve_conflicts(dreamed, carol):
    conflict = Conflict.objects.filter(project=dreamed).first()
    with pytest.raises(errors.ReviewRefused):
        conflicts.conflict_resolve(conflict=conflict, actor=carol, resolution="keep-existing")
    conflict.refresh_from_db()
    assert conflict.status == "open"


def test_an_approval_marks_the_page_reviewed(staging, bob):
    page = Page.objects.get(project=staging.project, key="SYSTEM_OVERVIEW")
    assert page.is_stale and page.last_reviewed_at is None
    approve(staging, bob)
    page.refresh_from_db()
    assert page.last_reviewed_at is not None and not page.is_stale
