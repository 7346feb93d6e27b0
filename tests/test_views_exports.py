"""The export list page: build, download, verify and stale marks; accepting a bundle."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Claim, Export
from llmwiki.services import membership_set, project_create
from llmwiki.wiki import claim_retract
from reviews.exports import ExportOptions, export_create, export_folder, export_render
from tests.export_data import build_wiki


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return build_wiki(project, alice)


def url(project, name="exports", *args):
    return reverse(f"reviews:{name}", args=[project.slug, *args])


def build(project, user, kind="handoff", audience="internal") -> Export:
    return export_create(project=project, options=ExportOptions(kind, audience), actor=user)


def test_it_lists_exports_with_verify_status_stale_marks_and_provenance_links(
    client, wiki, project, bob
):
    brief = build(project, bob, "system-profile")
    client.force_login(bob)
    response = client.get(url(project))
    body = response.content.decode()
    assert response.status_code == 200 and 'data-testid="verify">verified' in body
    assert 'data-testid="stale"' not in body
    assert reverse("reviews:claim", args=[project.slug, wiki["stack"].pk]) in body
    assert url(project, "export_download", brief.pk, "SYSTEM_PROFILE.md") in body
    claim_retract(claim=wiki["queue"], actor=bob, reason="moved on")
    (export_folder(brief) / "SYSTEM_PROFILE.md").write_text("tampered\n")
    body = client.get(url(project)).content.decode()
    assert 'data-testid="stale"' in body and "SYSTEM_PROFILE.md differs" in body


def test_a_reviewer_builds_an_export_with_a_plain_form(client, wiki, project, bob):
    client.force_login(bob)
    response = client.post(
        url(project), {"kind": "receiver-brief", "audience": "public", "budget": "12000"}
    )
    assert response.status_code == 302
    export = Export.objects.get()
    assert (export.kind, export.audience, export.generated_by) == ("receiver-brief", "public", bob)


def test_a_bad_budget_re_renders_the_form_with_what_was_typed(client, wiki, project, bob):
    client.force_login(bob)
    response = client.post(
        url(project), {"kind": "startup-packet", "audience": "internal", "budget": "10"}
    )
    assert response.status_code == 200 and b'value="10"' in response.content
    assert b"greater than or equal to 1000" in response.content
    assert not Export.objects.exists()


def test_a_reviewer_may_not_build_a_restricted_export_when_maintainers_only(
    client, wiki, project, bob
):
    project.restricted_clearance = "maintainer"
    project.save()
    client.force_login(bob)
    response = client.post(
        url(project), {"kind": "handoff", "audience": "restricted", "budget": "12000"}, follow=True
    )
    assert b"restricted export needs the maintainer role" in response.content
    assert not Export.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("carol", 403), ("mallory", 404)])
def test_viewers_and_outsiders_get_no_exports(client, wiki, project, request, who, status):
    export = build(project, request.getfixturevalue("alice"))
    client.force_login(request.getfixturevalue(who))
    assert client.get(url(project)).status_code == status
    assert client.get(url(project, "export_download", export.pk, "README.md")).status_code == status


def test_anonymous_is_sent_to_log_in_and_put_is_refused(client, wiki, project, bob):
    assert client.get(url(project)).status_code == 302
    client.force_login(bob)
    assert client.put(url(project)).status_code == 405


def test_downloading_serves_the_stored_bytes_and_nothing_else(client, wiki, project, bob):
    export = build(project, bob)
    rendered = export_render(project=project, options=ExportOptions("handoff"))
    client.force_login(bob)
    response = client.get(url(project, "export_download", export.pk, rendered.zip_name))
    assert response.status_code == 200 and b"".join(response.streaming_content) == rendered.zip
    assert "attachment" in response["Content-Disposition"]
    assert client.get(url(project, "export_download", export.pk, "..%2Fsecret")).status_code == 404
    Export.objects.filter(pk=export.pk).update(files=[])  # as erasure leaves it
    assert client.get(url(project, "export_download", export.pk, "README.md")).status_code == 404
    assert b"files erased" in client.get(url(project)).content


def test_a_restricted_export_downloads_only_with_clearance(client, wiki, project, alice, bob):
    export = build(project, alice, audience="restricted")
    project.restricted_clearance = "maintainer"
    project.save()
    client.force_login(bob)
    assert client.get(url(project, "export_download", export.pk, "README.md")).status_code == 403
    assert b"restricted: needs the maintainer role" in client.get(url(project)).content
    client.force_login(alice)
    assert client.get(url(project, "export_download", export.pk, "README.md")).status_code == 200


def test_the_list_runs_a_constant_number_of_queries(
    client, wiki, project, bob, django_assert_num_queries
):
    build(project, bob)
    client.force_login(bob)
    # 8, and what the stale mark reads: the claims and revisions used, the open questions.
    with django_assert_num_queries(13) as few:
        client.get(url(project))
    for kind in ("system-profile", "receiver-brief", "startup-packet") * 3:
        build(project, bob, kind)
    claim_retract(claim=wiki["queue"], actor=bob, reason="moved on")
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(url(project))
    assert len(re.findall(rb'data-testid="export-\d', response.content)) == 10


def test_a_maintainer_accepts_an_imported_bundle_from_the_page(client, wiki, project, alice, bob):
    rendered = export_render(project=project, options=ExportOptions("handoff"))
    target = project_create(slug="harbour", name="Harbour", actor="system", owner=alice)
    membership_set(project=target, user=bob, role="reviewer", actor="system")
    ingest_files(project=target, files=[RawFile(rendered.zip_name, rendered.zip)], actor="system")
    client.force_login(bob)
    assert b"accept-bundle" not in client.get(url(target)).content
    assert client.post(url(target, "accept_bundle")).status_code == 403
    client.force_login(alice)
    assert b'data-testid="accept-bundle"' in client.get(url(target)).content
    response = client.post(url(target, "accept_bundle"), follow=True)
    assert b"as the reviewed baseline" in response.content
    assert Claim.objects.filter(project=target).count() == len(rendered.manifest["claims"])
    assert b'data-testid="accept-bundle"' not in response.content
