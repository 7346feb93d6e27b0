"""Erasure (right to be forgotten): content goes everywhere it propagated; tombstones stay."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dreaming import services as dreaming
from dreaming import sweep_persist
from dreaming.models import (
    Candidate,
    CandidateEvidence,
    CandidateTerm,
    Conflict,
    ConflictSide,
    DreamRun,
)
from llmwiki import wiki
from llmwiki.blobs import blob_path
from llmwiki.erasure import ERASED, erasure_scope, source_erase
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import (
    AuditEvent,
    ChangelogEntry,
    Claim,
    Episode,
    Export,
    Page,
    PageRevision,
    Source,
    sha256_hex,
)
from llmwiki.record import episode_record
from reviews import actions, conflicts, errors
from reviews.exports.service import stale_export_ids
from reviews.models import Review
from tests.dreaming_data import DAYS, seed
from tests.test_ingest import all_database_text

ERASED_PATH = "memory/2026-11-02.md"
# Each line of the erased file reached a different layer: the candidate, claim, page and
# diary; a conflict side and OPEN_QUESTIONS; an episode only.
SENTENCES = [
    "The staging database runs PostgreSQL 16 on db-staging-2",
    "use RabbitMQ for the shipment event queue",
    "The CSV export workstream started; Priya owns it",
]


def approve(candidate, user, **kwargs):
    return actions.candidate_approve(
        candidate=candidate, reviewer=user, seen=actions.form_state(candidate), **kwargs
    )


def dream(project, trigger: str = "manual") -> DreamRun:
    run = dreaming.dream_request(project=project, trigger=trigger, actor="t", enqueue=False)
    return dreaming.dream_execute(run_id=run.pk)


@pytest.fixture
def world(project, alice, bob, settings, tmp_path):
    """Ingested, previewed, dreamed, approved, escalated and exported, all for real."""
    settings.EXPORT_DIR = tmp_path / "exports"
    seed(project)
    dream(project, "preview")
    dream(project)
    staging = Candidate.objects.get(project=project, text__contains="db-staging-2")
    claim = approve(staging, bob, note="checked against the infra repo")
    conflict = Conflict.objects.get(project=project, kind="reversal")
    conflicts.conflict_resolve(
        conflict=conflict, actor=bob, resolution="escalate", owner=alice, note="ask ops"
    )
    page = Page.objects.get(pk=claim.page_id)
    export_dir = settings.EXPORT_DIR / "handoff-1"
    export_dir.mkdir(parents=True)
    (export_dir / "SYSTEM_OVERVIEW.md").write_text(page.current_revision.markdown)
    export = Export.objects.create(
        project=project,
        kind=Export.Kind.HANDOFF,
        audience="internal",
        generator_version="test",
        files=[{"name": "SYSTEM_OVERVIEW.md", "sha256": page.current_revision.content_hash}],
        manifest_sha256="0" * 64,
        path="handoff-1",
    )
    export.claims.add(claim)
    export.revisions.add(page.current_revision)
    source = Source.objects.get(project=project, path=ERASED_PATH)
    assert source.pk in {ref["source_id"] for ref in claim.source_refs}
    return SimpleNamespace(
        project=project,
        source=source,
        claim=claim,
        candidate=staging,
        conflict=conflict,
        page=page,
        export=export,
        export_dir=export_dir,
    )


def state(project) -> tuple:
    """Everything erasure may change, to prove a refusal changed nothing."""
    return (
        list(Episode.objects.filter(project=project).values_list("id", "content", "status")),
        list(Candidate.objects.filter(project=project).values_list("id", "text", "status")),
        list(Review.objects.values_list("id", "before_text", "after_text")),
        list(Claim.objects.filter(project=project).values_list("id", "text", "status")),
        list(PageRevision.objects.values_list("id", "markdown", "content_hash")),
        list(ConflictSide.objects.values_list("id", "text")),
        list(DreamRun.objects.values_list("id", "diary")),
        list(Source.objects.values_list("id", "status", "security_summary")),
        list(Export.objects.values_list("id", "files")),
        AuditEvent.objects.count(),
    )


def test_the_erased_text_is_nowhere_and_tombstones_remain(
    world, alice, django_capture_on_commit_callbacks
):
    before = all_database_text()
    assert all(s in before for s in SENTENCES)  # the test would prove nothing otherwise
    hashes = dict(Episode.objects.filter(source=world.source).values_list("id", "content_hash"))
    assert blob_path(world.source.sha256).exists()

    with django_capture_on_commit_callbacks(execute=True):
        counts = source_erase(source=world.source, actor=alice, note="subject access request")

    text = all_database_text()
    for sentence in SENTENCES:
        assert sentence not in text
    assert "Priya" not in text
    assert not blob_path(world.source.sha256).exists()
    episodes = list(Episode.objects.filter(source=world.source))
    assert len(episodes) == 3 == counts["episodes"]
    for e in episodes:
        assert e.content == "" and e.status == Episode.Status.ERASED
        assert e.flags == [] and e.tags == [] and e.memory_type_reason == ""
        assert e.locator == {"path": ERASED_PATH, "erased": True}
        assert e.content_hash == hashes[e.pk]  # a hash, not content
    world.source.refresh_from_db()
    assert world.source.status == Source.Status.ERASED and world.source.security_summary == {}
    assert counts == {
        "episodes": 3,
        "candidates": 1,
        "claims": 1,
        "revisions_scrubbed": 2,
        "pages_republished": 2,
        "conflict_sides": 1,
        "dream_runs_scrubbed": 2,
        "exports": 1,
    }


def test_every_layer_is_scrubbed(world, alice):
    section = world.claim.section  # a label distilled from the claim's own words
    assert section and f"## {section}\n" in world.page.current_revision.markdown
    source_erase(source=world.source, actor=alice, note="subject access request")
    world.candidate.refresh_from_db()
    assert world.candidate.text == ERASED and world.candidate.status == "rejected"
    assert world.candidate.section == "" and world.candidate.route_reason == ""
    assert world.candidate.version > 2  # a form opened before the erasure is stale
    r = Review.objects.get(candidate=world.candidate)
    assert r.before_text == ERASED and r.after_text == ERASED
    assert r.note == "checked against the infra repo"  # the reviewer's words stay
    world.claim.refresh_from_db()
    assert world.claim.status == Claim.Status.ERASED and world.claim.text == ERASED
    assert world.source.pk not in {ref["source_id"] for ref in world.claim.source_refs}
    assert len(world.claim.source_refs) == 4

    world.page.refresh_from_db()
    current = world.page.current_revision
    assert current.number == 2 and world.claim.pk not in current.claim_ids
    assert "_No reviewed claims yet._" in current.markdown
    first = PageRevision.objects.get(page=world.page, number=1)
    assert f"- {ERASED} _(claim {world.claim.pk}; evidence #" in first.markdown
    assert f"## {section}\n" not in first.markdown and f"## {ERASED}\n" in first.markdown
    assert world.claim.section == ""
    assert first.content_hash == sha256_hex(first.markdown)

    sides = {s.position: s.text for s in world.conflict.sides.all()}
    assert sides[0] == ERASED and "Redis Streams" in sides[1]  # the other side stays
    questions = Page.objects.get(project=world.project, key="OPEN_QUESTIONS").current_revision
    assert "Redis Streams" in questions.markdown and f"- {ERASED} _(" in questions.markdown

    world.export.refresh_from_db()
    assert world.export.files == [] and world.export.pk in stale_export_ids([world.export.pk])
    assert ChangelogEntry.objects.filter(summary__startswith="erasure of source").exists()
    # Material from other sources is untouched.
    assert Episode.objects.filter(content__contains="Redis Streams", status="active").exists()


def test_export_files_are_deleted_after_commit(world, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        source_erase(source=world.source, actor=alice, note="subject access request")
    assert world.export_dir.exists()  # nothing on disk goes before the commit
    for callback in callbacks:
        callback()
    assert not world.export_dir.exists()
    assert world.export_dir.parent.exists()  # only that export, never the export root


def test_the_audit_row_holds_counts_and_the_note_only(world, alice):
    counts = source_erase(source=world.source, actor=alice, note="GDPR request from the author")
    event = AuditEvent.objects.get(action="source.erase")
    assert event.actor == "user:alice" and event.object_id == str(world.source.pk)
    assert event.note == "GDPR request from the author"
    assert event.after == {"status": "erased", **counts}
    assert all(isinstance(v, int) for k, v in event.after.items() if k != "status")


def test_a_reviewer_is_refused_and_nothing_changes(world, bob, django_capture_on_commit_callbacks):
    before = state(world.project)
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(errors.ReviewRefused, match="maintainer") as exc,
    ):
        source_erase(source=world.source, actor=bob, note="please")
    assert exc.value.status == 403
    assert callbacks == []
    assert state(world.project) == before
    assert blob_path(world.source.sha256).exists() and world.export_dir.exists()


def test_erasing_twice_or_without_a_note_is_refused(world, alice):
    with pytest.raises(errors.ReviewRefused, match="note is required") as exc:
        source_erase(source=world.source, actor=alice, note="  ")
    assert exc.value.status == 400
    source_erase(source=world.source, actor=alice, note="subject access request")
    before = state(world.project)
    with pytest.raises(errors.ReviewRefused, match="already erased") as exc:
        source_erase(source=world.source, actor=alice, note="again")
    assert exc.value.status == 400
    assert state(world.project) == before
    assert AuditEvent.objects.filter(action="source.erase").count() == 1


def test_the_scope_previews_what_erasure_will_touch(world):
    scope = erasure_scope(world.source)
    assert scope.counts() == {
        "episodes": 3,
        "candidates": 1,
        "claims": 1,
        "conflicts": 1,
        "pages": 2,
        "exports": 1,
    }


def test_a_blob_shared_with_another_project_is_kept(
    project, other_project, alice, mallory, django_capture_on_commit_callbacks
):
    data = DAYS[ERASED_PATH].encode()
    for p in (project, other_project):
        ingest_files(project=p, files=[RawFile(ERASED_PATH, data)], actor="system")
    mine = Source.objects.get(project=project)
    theirs = Source.objects.get(project=other_project)
    assert mine.sha256 == theirs.sha256
    with django_capture_on_commit_callbacks(execute=True):
        counts = source_erase(source=mine, actor=alice, note="erase in Tidewater only")
    assert counts["episodes"] == 3 and counts["claims"] == 0 and counts["pages_republished"] == 0
    assert blob_path(mine.sha256).exists()
    assert Episode.objects.filter(source=theirs, content__contains="Priya").exists()
    with django_capture_on_commit_callbacks(execute=True):
        source_erase(source=theirs, actor=mallory, note="and in Elsewhere too")
    assert not blob_path(mine.sha256).exists()


def test_an_outsider_cannot_erase_another_projects_source(project, other_project, mallory):
    seed(project, [ERASED_PATH])
    source = Source.objects.get(project=project)
    with pytest.raises(errors.ReviewRefused) as exc:
        source_erase(source=source, actor=mallory, note="not mine")
    assert exc.value.status == 403
    source.refresh_from_db()
    assert source.status == Source.Status.ACTIVE


def test_claims_from_other_sources_and_their_shared_heading_stay(world, alice, bob):
    section = world.claim.section
    other_episode = Episode.objects.get(
        project=world.project, content__contains="Redis Streams", source__isnull=False
    )
    candidate = Candidate.objects.create(
        project=world.project,
        text="Shipment events flow through Redis Streams.",
        page_target=world.page.key,
        section=section,
        memory_type="semantic-candidate",
        dedupe_key="redis-streams",
    )
    CandidateEvidence.objects.create(candidate=candidate, episode=other_episode)
    kept = approve(candidate, bob)
    counts = source_erase(source=world.source, actor=alice, note="subject access request")
    assert counts["claims"] == 1
    kept.refresh_from_db()
    assert kept.status == Claim.Status.APPROVED and kept.section == section
    world.page.refresh_from_db()
    current = world.page.current_revision.markdown
    assert kept.text in current and f"## {section}\n" in current
    for revision in PageRevision.objects.filter(page=world.page):
        assert f"## {section}\n" in revision.markdown  # shared by a live claim: kept


def test_an_event_posted_by_an_agent_can_be_erased(
    project, alice, django_capture_on_commit_callbacks
):
    sentence = "The harbour gate spare key hangs in the blue cabinet, says Priya"
    episode = episode_record(project=project, actor="agent:scout", kind="note", content=sentence)
    source = episode.source
    with django_capture_on_commit_callbacks(execute=True):
        counts = source_erase(source=source, actor=alice, note="posted by mistake")
    assert counts["episodes"] == 1
    assert sentence not in all_database_text()
    assert not blob_path(source.sha256).exists()
    episode = Episode.objects.get(pk=episode.pk)
    assert episode.content == "" and episode.locator == {"path": source.path, "erased": True}


def test_a_rollback_never_resurrects_an_erased_claim(world, alice):
    first = PageRevision.objects.get(page=world.page, number=1)
    source_erase(source=world.source, actor=alice, note="subject access request")
    wiki.page_rollback(page=world.page, revision=first, actor=alice, reason="wrong turn")
    world.claim.refresh_from_db()
    assert world.claim.status == Claim.Status.ERASED
    assert world.claim.text == "[erased]"


def test_erasure_marks_each_claim_erased_through_its_transition(world, alice):
    source_erase(source=world.source, actor=alice, note="subject access request")
    event = AuditEvent.objects.get(action="claim.erased", object_id=str(world.claim.pk))
    assert event.actor == "user:alice" and event.before == {"status": "approved"}
    assert event.note == f"erasure of source #{world.source.pk}: subject access request"
    assert world.claim.text not in str(event.before) + str(event.after) + event.note


def test_the_term_index_of_an_erased_candidate_goes_with_its_text(world, alice):
    Candidate.objects.create(
        project=world.project,
        text="The nightly report lands in bucket cold-store-2.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="fact",
        dedupe_key="unrelated",
    )
    # Index every candidate, the decided ones too, so the erased ones are among them.
    everything = Candidate.objects.filter(project=world.project)
    sweep_persist._index_terms(world.project, everything)
    erased = set(
        everything.filter(evidence__episode__source=world.source).values_list("id", flat=True)
    )
    assert erased and CandidateTerm.objects.filter(candidate__in=erased).exists()
    kept = CandidateTerm.objects.exclude(candidate__in=erased).count()
    assert kept

    source_erase(source=world.source, actor=alice, note="subject access request")

    assert not CandidateTerm.objects.filter(candidate__in=erased).exists()
    assert CandidateTerm.objects.count() == kept
