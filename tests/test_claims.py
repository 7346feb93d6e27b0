"""Claims have one owner: one constructor, one transition table, one status writer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, Conflict
from llmwiki import wiki
from llmwiki.models import AuditEvent, Claim, Page
from llmwiki.wiki import claim_create
from reviews import actions
from tests.dreaming_data import seed

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


@pytest.fixture
def claim(dreamed, bob) -> Claim:
    staging = Candidate.objects.get(project=dreamed, text__contains="db-staging-2")
    return actions.candidate_approve(
        candidate=staging, reviewer=bob, seen=actions.form_state(staging)
    )


def audit(claim: Claim) -> list[str]:
    return list(
        AuditEvent.objects.filter(object_type="Claim", object_id=str(claim.pk))
        .order_by("id")
        .values_list("action", flat=True)
    )


def test_it_moves_a_claim_and_writes_one_audit_row(claim, alice):
    claim.transition(Claim.Status.RETRACTED, actor=alice, note="host renamed")
    claim.refresh_from_db()
    assert claim.status == Claim.Status.RETRACTED
    event = AuditEvent.objects.get(action="claim.retracted", object_id=str(claim.pk))
    assert (event.actor, event.before, event.after, event.note) == (
        "user:alice",
        {"status": "approved"},
        {"status": "retracted"},
        "host renamed",
    )


def test_it_refuses_a_transition_the_table_forbids_and_changes_nothing(claim, alice):
    claim.transition(Claim.Status.ERASED, actor=alice, text="[erased]")
    before = audit(claim)
    with pytest.raises(ValidationError, match="is erased; cannot move to approved"):
        claim.transition(Claim.Status.APPROVED, actor=alice)
    claim.refresh_from_db()
    assert claim.status == Claim.Status.ERASED and audit(claim) == before


def test_claim_create_cites_its_evidence_with_hashed_sources(claim):
    assert claim.source_refs and {r["episode_id"] for r in claim.source_refs} == set(
        claim.evidence.values_list("id", flat=True)
    )
    assert all(len(r["sha256"]) == 64 for r in claim.source_refs)
    assert audit(claim) == ["claim.approve"]


def test_claim_create_with_supersedes_retires_the_old_claim(claim, alice):
    new = claim_create(
        page=claim.page,
        text="Staging runs PostgreSQL 17 on db-staging-2.",
        evidence=claim.evidence.values_list("id", flat=True),
        reviewer=alice,
        supersedes=claim,
    )
    claim.refresh_from_db()
    assert claim.status == Claim.Status.SUPERSEDED and claim.superseded_by == new
    assert (new.version, new.section, new.subject_key) == (2, claim.section, claim.subject_key)
    assert new.is_approved and new.evidence.count() == claim.evidence.count()
    superseded = AuditEvent.objects.get(action="claim.superseded", object_id=str(claim.pk))
    assert superseded.after == {"status": "superseded", "superseded_by": new.pk}


def test_claim_create_refuses_to_supersede_a_claim_that_is_not_approved(claim, alice):
    claim.transition(Claim.Status.RETRACTED, actor=alice)
    with pytest.raises(ValidationError):
        claim_create(page=claim.page, text="x", evidence=[], reviewer=alice, supersedes=claim)
    assert Claim.objects.count() == 1  # the new claim went with the transaction


def test_the_querysets_name_current_memory_and_open_conflicts(dreamed, claim, alice):
    retracted = claim_create(page=claim.page, text="gone", evidence=[], reviewer=alice)
    retracted.transition(Claim.Status.RETRACTED, actor=alice)
    assert list(Claim.objects.approved()) == [claim]
    found = Conflict.objects.filter(project=dreamed)
    first = found.first()
    Conflict.objects.filter(pk=first.pk).update(status=Conflict.Status.RESOLVED)
    escalated = found.exclude(pk=first.pk).first()
    if escalated is not None:
        Conflict.objects.filter(pk=escalated.pk).update(status=Conflict.Status.ESCALATED)
    assert set(found.unresolved()) == set(found.exclude(pk=first.pk))
    assert first not in found.unresolved()


def test_a_rolled_back_claim_says_so_on_its_page(client, dreamed, claim, bob, alice, carol):
    page = Page.objects.get(pk=claim.page_id)
    first = page.current_revision
    later = claim_create(page=page, text="The API runs on tw-app-1.", evidence=[], reviewer=bob)
    from llmwiki.wiki import page_recompile

    page_recompile(page=page, actor=bob, reason="test")
    wiki.page_rollback(page=page, revision=first, actor=alice, reason="too early")
    later.refresh_from_db()
    assert later.status == Claim.Status.ROLLED_BACK
    assert audit(later)[-1] == "claim.rolled-back"
    client.force_login(carol)
    body = client.get(reverse("reviews:claim", args=[dreamed.slug, later.pk])).content.decode()
    assert "Rolled back</span>" in body
    assert "by alice — rollback of SYSTEM_OVERVIEW to r1" in body
    assert "nothing replaces it" in body and "Was approved" in body


def test_no_claim_status_is_written_outside_claim_transition():
    """The plain check of issue 9: `grep -rn ".update(status" reviews/ llmwiki/`."""
    hits = []
    for folder in ("reviews", "llmwiki"):
        for path in (ROOT / folder).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\.update\(status", line) and not re.search(
                    r"(Source|Episode)\.Status", line
                ):
                    hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_erased_and_rolled_back_claims_their_states(project, bob):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("llmwiki", "0003_restricted_clearance")], [("llmwiki", "0004_claim_states")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("llmwiki", "Claim")
    page = Page.objects.get(project=project, key="RUNBOOKS")
    make = {"project_id": project.pk, "page_id": page.pk, "reviewer_id": bob.pk}
    erased = old.objects.create(text="[erased]", status="retracted", **make)
    retracted = old.objects.create(text="host renamed", status="retracted", **make)
    dropped = old.objects.create(text="dropped by a rollback", status="superseded", **make)
    replaced = old.objects.create(text="old", status="superseded", **make)
    old.objects.create(text="new", supersedes=replaced, **make)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    # Migrating back unapplied whatever came after in other apps; bring everything back.
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    states = dict(Claim.objects.values_list("id", "status"))
    assert states[erased.pk] == "erased" and states[retracted.pk] == "retracted"
    assert states[dropped.pk] == "rolled-back" and states[replaced.pk] == "superseded"
