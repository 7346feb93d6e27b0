"""Exports: each kind's content, audience filtering, determinism, verify, stale marking."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from dreaming.models import Conflict
from llmwiki.errors import InputError, Refused
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import AuditEvent, Episode, Export, Page
from llmwiki.wiki import claim_retract
from reviews.exports import (
    ExportOptions,
    export_create,
    export_folder,
    export_render,
    export_verify,
    exports_for_list,
)
from reviews.exports.pack import MANIFEST
from reviews.exports.service import stale_export_ids
from tests.export_data import PII_TEXT, build_wiki, episode


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return build_wiki(project, alice)


def render(project, kind, audience="internal", **kw):
    return export_render(project=project, options=ExportOptions(kind, audience, **kw))


def text_of(rendered) -> str:
    return "\n".join(v.decode() for k, v in rendered.files.items() if k.endswith(".md"))


def test_the_pii_claim_is_flagged_by_the_gate(wiki, project):
    assert any(f.startswith("pii:") for f in episode(project, "jane.doe").flags)


def test_the_system_profile_holds_architecture_and_constraints(wiki, project):
    rendered = render(project, "system-profile")
    doc = rendered.files["SYSTEM_PROFILE.md"].decode()
    assert "## Architecture and components" in doc and "### Stack" in doc
    assert "Redis Streams with consumer groups" in doc
    assert "two evidence episodes" in doc.split("## Constraints")[1]
    assert f"([why?](/p/tidewater/claims/{wiki['stack'].pk}/))" in doc
    assert "jane.doe" not in doc  # PII needs the restricted audience
    assert set(rendered.files) == {"SYSTEM_PROFILE.md", "EVIDENCE_LEDGER.json", MANIFEST}


def test_the_receiver_brief_holds_decisions_open_questions_governance_and_risks(wiki, project):
    doc = render(project, "receiver-brief").files["RECEIVER_BRIEF.md"].decode()
    decisions, rest = doc.split("## Open questions")
    assert "RabbitMQ to Redis Streams" in decisions
    assert "### staging database host" in rest and "db-staging-3" in rest
    conflict = Conflict.objects.get(project=project)
    assert f"([why?](/p/tidewater/conflicts/?conflict={conflict.pk}))" in rest
    assert "## Governance" in rest and "## Risks" in rest
    assert "1 open question(s) are undecided." in rest


def test_a_pii_flagged_claim_is_absent_from_the_public_brief_and_counted(wiki, project):
    for kind in ("receiver-brief", "handoff", "system-profile", "startup-packet"):
        rendered = render(project, kind, "public")
        everything = b"".join(rendered.files.values()).decode()
        assert "jane.doe" not in everything and "harbour master" not in everything
        assert wiki["pii"].pk not in rendered.manifest["claims"]
    manifest = render(project, "receiver-brief", "public").manifest
    assert manifest["withheld"]["claim:pii-flagged"] == 1
    assert manifest["withheld"]["claim:internal-class"] == 3  # queue, runbook, agents
    # The open question's sides rest on nothing public: withheld, and counted.
    assert manifest["withheld"]["open-question-side:internal-class"] == 2 or (
        "open-question:all-sides-withheld" in manifest["withheld"]
    )


def test_the_restricted_audience_gets_the_pii_claim(wiki, project):
    rendered = render(project, "handoff", "restricted")
    assert PII_TEXT in rendered.files["SYSTEM_OVERVIEW.md"].decode()
    assert rendered.manifest["withheld"] == {}


def test_the_startup_packet_keeps_to_its_budget_and_says_what_it_left_out(wiki, project):
    full = render(project, "startup-packet")
    doc = full.files["STARTUP_PACKET.md"].decode()
    assert doc.index("## Agent instructions") < doc.index("## Runbooks") < doc.index("## Index")
    assert "Left out" not in doc and len(doc) <= 12_000
    tight = render(project, "startup-packet", budget=len(doc) - 60)
    small = tight.files["STARTUP_PACKET.md"].decode()
    assert len(small) <= len(doc) - 60
    assert "## Left out (budget" in small
    left = tight.manifest["left_out"]["claims"]
    assert left and all(str(ids[0]) in small for ids in left.values())
    assert set(tight.manifest["claims"]).isdisjoint(i for ids in left.values() for i in ids)


def test_a_budget_below_the_minimum_is_refused(wiki, project):
    with pytest.raises(InputError, match="below the minimum"):
        render(project, "startup-packet", budget=100)


def test_the_handoff_bundle_holds_the_starter_files_and_a_ledger(wiki, project):
    rendered = render(project, "handoff")
    expected = {
        "README.md",
        "INDEX.md",
        "SYSTEM_OVERVIEW.md",
        "AGENT_INSTRUCTIONS.md",
        "DECISION_LOG.md",
        "OPEN_QUESTIONS.md",
        "GOVERNANCE.md",
        "RUNBOOKS.md",
        "TRUST_MODEL.md",
        "GLOSSARY.md",
        "CHANGELOG.md",
        "EVIDENCE_LEDGER.json",
        MANIFEST,
    }
    assert set(rendered.files) == expected
    with zipfile.ZipFile(io.BytesIO(rendered.zip)) as archive:
        assert archive.namelist() == sorted(expected)
    manifest = json.loads(rendered.files[MANIFEST])
    listed = {e["name"]: e for e in manifest["files"]}
    assert set(listed) == expected - {MANIFEST}
    assert all(e["size"] == len(rendered.files[n]) for n, e in listed.items())
    approved = sorted(c.pk for k, c in wiki.items() if k != "pii")
    assert manifest["claims"] == approved
    pages = Page.objects.filter(project=project, current_revision__isnull=False)
    assert manifest["revisions"] == sorted(p.current_revision_id for p in pages)
    assert {t["page"] for t in manifest["rollback_targets"]} == {p.key for p in pages}
    assert manifest["audience"] == "internal" and manifest["generator"]
    assert manifest["generated_at"].endswith("Z")


def test_the_ledger_maps_every_claim_line_to_its_claim_evidence_and_source(wiki, project):
    rendered = render(project, "handoff")
    ledger = json.loads(rendered.files["EVIDENCE_LEDGER.json"])
    claims = [s for s in ledger["statements"] if s["kind"] == "claim"]
    assert sorted(s["claim_id"] for s in claims) == rendered.manifest["claims"]
    for s in claims:
        line = rendered.files[s["file"]].decode().splitlines()[s["line"] - 1]
        assert f"/claims/{s['claim_id']}/" in line
        (evidence,) = s["evidence"]
        assert evidence["source_sha256"] and evidence["path"] == "notes/architecture.md"
    public = json.loads(render(project, "handoff", "public").files["EVIDENCE_LEDGER.json"])
    assert all(e["path"] == "" for s in public["statements"] for e in s.get("evidence", []))


def test_scoped_episodes_come_in_labelled_unreviewed_and_chat_never(wiki, project):
    ingest_files(
        project=project,
        files=[RawFile("chat.jsonl", b'{"role": "user", "content": "secret plan for Friday"}\n')],
        actor="system",
    )
    chat = Episode.objects.get(project=project, kind="chat_turn")
    note = episode(project, "Deploys drain")
    rendered = render(project, "system-profile", episode_ids=(chat.pk, note.pk))
    doc = rendered.files["SYSTEM_PROFILE.md"].decode()
    assert "## Episodic context (not reviewed)" in doc and f"episode {note.pk}" in doc
    assert f"([why?](/p/tidewater/episodes/{note.pk}/))" in doc
    assert "secret plan" not in doc
    assert rendered.manifest["withheld"]["episode:raw-chat"] == 1
    assert rendered.manifest["episodes"] == [note.pk]
    with pytest.raises(InputError, match="not episodes of project"):
        render(project, "system-profile", episode_ids=(999999,))


def test_exporting_twice_gives_identical_bytes(wiki, project, alice, tmp_path):
    first = export_create(
        project=project, options=ExportOptions("handoff"), actor=alice, out=tmp_path / "one"
    )
    second = export_create(
        project=project, options=ExportOptions("handoff"), actor=alice, out=tmp_path / "two"
    )
    assert first.files == second.files and first.path != second.path
    for path in (tmp_path / "one").iterdir():
        assert path.read_bytes() == (tmp_path / "two" / path.name).read_bytes()


def test_verify_passes_then_names_the_file_with_a_flipped_byte(wiki, project, alice, tmp_path):
    export_create(project=project, options=ExportOptions("handoff"), actor=alice, out=tmp_path)
    assert export_verify(tmp_path).ok
    target = tmp_path / "RUNBOOKS.md"
    data = bytearray(target.read_bytes())
    data[10] ^= 0x01
    target.write_bytes(bytes(data))
    result = export_verify(tmp_path)
    assert not result.ok and result.differs == ["RUNBOOKS.md"]
    zipped = next(tmp_path.glob("*.zip"))
    data = bytearray(zipped.read_bytes())
    data[len(data) // 3] ^= 0x01
    zipped.write_bytes(bytes(data))
    assert zipped.name in " ".join(export_verify(tmp_path).differs)


def test_an_export_is_recorded_with_what_it_used_and_audited(wiki, project, alice):
    export = export_create(
        project=project, options=ExportOptions("receiver-brief", "public"), actor=alice
    )
    assert export.kind == "receiver-brief" and export.generated_by == alice
    assert set(export.claims.values_list("id", flat=True)) == {
        wiki["decision"].pk,
        wiki["governance"].pk,
    }
    assert AuditEvent.objects.filter(action="export.create", object_id=str(export.pk)).exists()
    assert exports_for_list(project)[0].status == "ok"


def test_a_viewer_may_not_export_and_a_reviewer_not_for_restricted(wiki, project, bob, carol):
    project.restricted_clearance = "maintainer"
    project.save()
    with pytest.raises(Refused, match="reviewer role"):
        export_create(project=project, options=ExportOptions("handoff"), actor=carol)
    with pytest.raises(Refused, match="restricted export"):
        export_create(project=project, options=ExportOptions("handoff", "restricted"), actor=bob)
    assert not Export.objects.exists()


def test_an_export_goes_stale_when_a_claim_it_used_is_retracted(wiki, project, alice, bob):
    brief = export_create(project=project, options=ExportOptions("receiver-brief"), actor=alice)
    profile = export_create(project=project, options=ExportOptions("system-profile"), actor=alice)
    assert not any(e.stale for e in exports_for_list(project))
    claim_retract(claim=wiki["runbook"], actor=bob, reason="outdated")
    # The brief does not show RUNBOOKS, the profile neither: only a used page or claim counts.
    assert not any(e.stale for e in exports_for_list(project))
    claim_retract(claim=wiki["queue"], actor=bob, reason="moved on")
    stale = {e.pk: e.stale for e in exports_for_list(project)}
    assert stale == {brief.pk: False, profile.pk: True}
    assert stale_export_ids([profile.pk, brief.pk]) == {profile.pk}


def test_unknown_kind_and_audience_are_bad_input(project):
    with pytest.raises(InputError, match="unknown kind"):
        ExportOptions("poster")
    with pytest.raises(InputError, match="unknown audience"):
        ExportOptions("handoff", "everyone")
    assert ExportOptions("bundle").kind == "handoff"


def test_the_export_document_reads_the_stored_manifest_and_status(wiki, project, alice, bob):
    from reviews.exports import export_document

    export = export_create(project=project, options=ExportOptions("handoff"), actor=alice)
    stored = Export.objects.get(pk=export.pk)  # no rendered files in memory
    document = export_document(stored)
    assert document["claims"] == export.rendered.manifest["claims"]
    assert document["withheld"] == {"claim:pii-flagged": 1}
    assert (document["verify"], document["stale"]) == ("ok", False)
    claim_retract(claim=wiki["queue"], actor=bob, reason="moved on")
    assert export_document(stored)["stale"] is True


def test_erasing_a_scoped_episodes_source_removes_the_exports_quoting_it(
    wiki, project, alice, django_capture_on_commit_callbacks
):
    from llmwiki.erasure import erasure_scope, source_erase

    ingest_files(
        project=project,
        files=[RawFile("notes/berths.md", b"# Berths\n\nBerth 4 closes for dredging in May.\n")],
        actor="system",
    )
    scoped = episode(project, "Berth 4 closes")
    quoting = export_create(
        project=project,
        options=ExportOptions("system-profile", episode_ids=(scoped.pk,)),
        actor=alice,
    )
    other = export_create(project=project, options=ExportOptions("system-profile"), actor=alice)
    assert "Berth 4 closes" in (export_folder(quoting) / "SYSTEM_PROFILE.md").read_text()
    assert erasure_scope(scoped.source).export_ids == {quoting.pk}
    with django_capture_on_commit_callbacks(execute=True):
        counts = source_erase(source=scoped.source, actor=alice, note="request")
    assert counts["exports"] == 1
    quoting.refresh_from_db()
    other.refresh_from_db()
    assert quoting.files == [] and not export_folder(quoting).exists()
    assert other.files and export_folder(other).exists()


def test_why_links_are_absolute_under_the_public_url(wiki, project, settings):
    settings.PUBLIC_URL = "https://wiki.example.org"
    doc = render(project, "system-profile").files["SYSTEM_PROFILE.md"].decode()
    assert f"([why?](https://wiki.example.org/p/tidewater/claims/{wiki['stack'].pk}/))" in doc
    assert "([why?](/p/" not in doc
