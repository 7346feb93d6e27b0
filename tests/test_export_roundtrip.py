"""The round trip: a handoff bundle imported into a new project becomes its reviewed baseline."""

from __future__ import annotations

import pytest

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.errors import Refused
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import AuditEvent, Claim, Episode, Page
from llmwiki.services import membership_set, project_create
from reviews.exports import ExportOptions, bundle_accept, export_render
from tests.export_data import build_wiki


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return build_wiki(project, alice)


def claims_by_page(project) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for claim in Claim.objects.filter(project=project).approved().select_related("page"):
        out.setdefault(claim.page.key, set()).add((claim.section, claim.text))
    return out


@pytest.fixture
def imported(wiki, project, alice, bob):
    rendered = export_render(project=project, options=ExportOptions("handoff", "internal"))
    target = project_create(slug="harbour", name="Harbour", actor="system", owner=alice)
    membership_set(project=target, user=bob, role="reviewer", actor="system")
    report = ingest_files(
        project=target, files=[RawFile(rendered.zip_name, rendered.zip)], actor="system"
    )
    assert [s.status for s in report.sources] == ["new"], report.sources
    return target, rendered


def test_accepting_the_bundle_recreates_its_pages_as_reviewed_claims(imported, project, alice):
    target, rendered = imported
    assert not Claim.objects.filter(project=target).exists()  # nothing until a maintainer says so
    result = bundle_accept(project=target, actor=alice)
    original = claims_by_page(project)
    original["SYSTEM_OVERVIEW"] = {c for c in original["SYSTEM_OVERVIEW"] if "jane" not in c[1]}
    assert claims_by_page(target) == original  # the PII claim stayed behind (internal export)
    assert len(result.claims) == len(rendered.manifest["claims"])
    for page in Page.objects.filter(project=target, current_revision__isnull=False):
        assert page.current_revision.reason == "accepted bundle baseline"
    claim = Claim.objects.filter(project=target).first()
    (ref,) = claim.source_refs
    assert ref["path"] == rendered.zip_name and ref["locator"]["path"].startswith(rendered.zip_name)
    assert AuditEvent.objects.filter(action="bundle.accept", project=target).count() == 1


def test_accepting_twice_adds_nothing(imported, alice):
    target, _ = imported
    bundle_accept(project=target, actor=alice)
    with pytest.raises(Refused):
        bundle_accept(project=target, actor=alice)
    count = Claim.objects.filter(project=target).count()
    assert count and AuditEvent.objects.filter(action="bundle.accept").count() == 1


def test_only_a_maintainer_may_accept_a_bundle(imported, bob, mallory):
    target, _ = imported
    for user in (bob, mallory):
        with pytest.raises(Refused, match="maintainer role"):
            bundle_accept(project=target, actor=user)
    assert not Claim.objects.filter(project=target).exists()


def test_a_project_without_an_imported_bundle_has_nothing_to_accept(project, alice):
    with pytest.raises(Refused, match="no imported bundle"):
        bundle_accept(project=project, actor=alice)


def test_an_exported_bundle_is_never_dreamed_over_only_accepted(imported, alice):
    target, _ = imported
    episodes = Episode.objects.filter(project=target)
    assert episodes.exists()
    assert set(episodes.values_list("memory_type", flat=True)) == {"handoff-only"}
    run = dreaming.dream_request(project=target, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    assert not Candidate.objects.filter(project=target).exists()
    bundle_accept(project=target, actor=alice)
    assert Claim.objects.filter(project=target).exists()
