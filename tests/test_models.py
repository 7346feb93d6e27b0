from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from dreaming.models import Candidate, DreamRun
from llmwiki.models import AuditEvent, Episode, ImmutableError, Page, PageRevision, Project
from reviews.models import Review


@pytest.fixture
def episode(project):
    return Episode.objects.create(
        project=project,
        occurred_at=timezone.now(),
        actor="agent:builder",
        kind=Episode.Kind.NOTE,
        content="The staging database runs PostgreSQL 16.",
        content_hash="0" * 64,
    )


@pytest.fixture
def candidate(project):
    return Candidate.objects.create(
        project=project,
        text="The staging database runs PostgreSQL 16.",
        page_target="SYSTEM_OVERVIEW",
        memory_type=Episode.MemoryType.SEMANTIC,
        dedupe_key="k1",
    )


def test_it_refuses_to_update_an_episode(episode):
    episode.content = "rewritten"
    with pytest.raises(ImmutableError):
        episode.save()
    with pytest.raises(ImmutableError):
        Episode.objects.filter(pk=episode.pk).update(content="rewritten")
    episode.refresh_from_db()
    assert episode.content == "The staging database runs PostgreSQL 16."


def test_it_refuses_to_delete_an_episode(episode):
    with pytest.raises(ImmutableError):
        episode.delete()
    with pytest.raises(ImmutableError):
        Episode.objects.filter(pk=episode.pk).delete()
    assert Episode.objects.filter(pk=episode.pk).exists()


def test_audit_events_page_revisions_and_reviews_are_immutable(project, alice, candidate):
    page = Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    revision = PageRevision.objects.create(page=page, number=1, markdown="# x", reason="test")
    assert revision.content_hash == hashlib.sha256(b"# x").hexdigest()
    review = Review.objects.create(
        candidate=candidate, reviewer=alice, action=Review.Action.DEFER, before_text="x"
    )
    audit = AuditEvent.objects.first()
    for row in (revision, review, audit):
        with pytest.raises(ImmutableError):
            row.save()
        with pytest.raises(ImmutableError):
            row.delete()
        with pytest.raises(ImmutableError):
            type(row).objects.filter(pk=row.pk).update(pk=row.pk)


def test_a_project_has_one_page_per_key(project):
    with pytest.raises(IntegrityError), transaction.atomic():
        Page.objects.create(project=project, key="SYSTEM_OVERVIEW", title="again")


def test_a_project_has_one_open_dream_run(project):
    DreamRun.objects.create(project=project, trigger=DreamRun.Trigger.MANUAL)
    with pytest.raises(IntegrityError), transaction.atomic():
        DreamRun.objects.create(project=project, trigger=DreamRun.Trigger.SCHEDULE)
    DreamRun.objects.filter(project=project).update(status=DreamRun.Status.SUCCEEDED)
    DreamRun.objects.create(project=project, trigger=DreamRun.Trigger.SCHEDULE)


def test_a_dedupe_key_yields_one_candidate(candidate):
    with pytest.raises(IntegrityError), transaction.atomic():
        Candidate.objects.create(
            project=candidate.project,
            text="again",
            page_target="SYSTEM_OVERVIEW",
            memory_type="semantic-candidate",
            dedupe_key=candidate.dedupe_key,
        )


def test_a_candidate_transition_bumps_the_version_and_writes_an_audit_event(candidate, bob):
    candidate.transition(Candidate.Status.DEFERRED, actor=bob, note="need more evidence")
    candidate.refresh_from_db()
    assert (candidate.status, candidate.version) == ("deferred", 2)
    event = AuditEvent.objects.get(action="candidate.deferred")
    assert event.actor == "user:bob"
    assert event.before == {"status": "proposed", "version": 1}
    assert event.note == "need more evidence"


def test_a_candidate_refuses_an_illegal_transition_and_changes_nothing(candidate, bob):
    candidate.transition(Candidate.Status.REJECTED, actor=bob)
    audits = AuditEvent.objects.count()
    with pytest.raises(ValidationError, match="cannot move to approved"):
        candidate.transition(Candidate.Status.APPROVED, actor=bob)
    candidate.refresh_from_db()
    assert candidate.status == "rejected"
    assert AuditEvent.objects.count() == audits


def test_a_stale_candidate_copy_cannot_transition(candidate, bob):
    stale = Candidate.objects.get(pk=candidate.pk)
    candidate.transition(Candidate.Status.DEFERRED, actor=bob)
    with pytest.raises(ValidationError, match="version 2"):
        stale.transition(Candidate.Status.REJECTED, actor=bob)
    candidate.refresh_from_db()
    assert candidate.status == "deferred"


def test_a_project_rejects_a_bad_cron_schedule(db):
    project = Project(slug="x", name="X", dream_schedule="every night")
    with pytest.raises(ValidationError, match="dream_schedule"):
        project.full_clean()


def test_creating_a_project_makes_its_pages_and_audits_it(project):
    keys = set(project.pages.values_list("key", flat=True))
    assert {"SYSTEM_OVERVIEW", "DECISION_LOG", "OPEN_QUESTIONS", "GLOSSARY"} <= keys
    assert AuditEvent.objects.filter(project=project, action="project.create").exists()
    assert AuditEvent.objects.filter(project=project, action="membership.set").count() == 3


def test_a_candidate_is_sensitive_when_restricted_or_flagged_pii_or_secret(candidate):
    assert not candidate.is_sensitive
    candidate.flags = ["risk:injection"]
    assert not candidate.is_sensitive
    for flags, security in (
        (["pii:email"], "internal"),
        (["secret:x"], "internal"),
        ([], "restricted"),
    ):
        candidate.flags, candidate.security_class = flags, security
        assert candidate.is_sensitive


def test_a_candidate_finds_its_target_page(candidate, project):
    assert candidate.page_for() == Page.objects.get(project=project, key="SYSTEM_OVERVIEW")
    candidate.page_target = "NO_SUCH_PAGE"
    assert candidate.page_for() is None


def test_a_candidate_offers_actions_by_role_status_and_sensitivity(candidate, alice, bob, carol):
    assert candidate.get_actions(carol) == []
    assert candidate.get_actions(bob) == ["approve", "approve-edit", "reject", "defer", "merge"]
    candidate.flags = ["pii:email"]
    assert candidate.get_actions(bob) == []
    assert "approve" in candidate.get_actions(alice)
    candidate.status = Candidate.Status.DEFERRED
    assert "defer" not in candidate.get_actions(alice)
    candidate.status = Candidate.Status.REJECTED
    assert candidate.get_actions(alice) == []


def test_signal_rows_follow_the_policy_weights_in_signal_order(candidate):
    from dreaming.engine.policy import SIGNALS, Policy

    candidate.signals = {"relevance": 0.5, "relevance.w": 0.15, "evidence": 5, "days": 4}
    policy = Policy.from_dict({"weights": {"relevance": 3, **{s: 1 for s in SIGNALS[1:]}}})
    rows = candidate.signal_rows(policy)
    assert [r.name for r in rows] == list(SIGNALS)
    assert (rows[0].value, rows[0].contribution) == (0.5, 0.15)
    assert rows[0].weight == policy.weights.relevance and rows[0].weight > rows[1].weight
    assert rows[1].value == 0.0
    assert candidate.signal_counts == {"evidence": 5, "days": 4}


def test_admission_names_the_rule_that_let_a_candidate_through(candidate):
    from dreaming.engine.policy import Policy

    policy = Policy()
    candidate.signals = {"evidence": 3, "days": 2}
    candidate.score = 0.41
    assert candidate.admission(policy).startswith("independent evidence: 3 episodes on 2 day(s)")
    candidate.signals = {"evidence": 1, "days": 1, "authority": 0.8}
    said = candidate.admission(policy)
    assert said.startswith("source authority: written once in a source trusted 0.8")
    assert "authority" not in candidate.signal_counts
