"""The erasure confirmation page, through the test client."""

from __future__ import annotations

import pytest
from django.urls import reverse

from llmwiki.blobs import blob_path
from llmwiki.models import AuditEvent, Episode, Source
from tests.dreaming_data import seed

ERASED_PATH = "memory/2026-11-02.md"


def audit_url(project) -> str:
    return reverse("audit_log", args=[project.slug])


def erase_url(project, source) -> str:
    return reverse("erase_source", args=[project.slug, source.pk])


@pytest.fixture
def source(project) -> Source:
    seed(project, [ERASED_PATH])
    return Source.objects.get(project=project, path=ERASED_PATH)


def test_the_confirmation_page_says_what_will_happen(client, alice, project, source):
    client.force_login(alice)
    response = client.get(erase_url(project, source))
    assert response.status_code == 200
    body = response.content.decode()
    assert source.path in body and source.sha256 in body
    assert response.context["impact"]["episodes"] == 3
    assert "lose their content" in body and 'name="confirm"' in body
    assert 'action="/p/tidewater/sources/' in body


def test_erasing_redirects_to_the_audit_log(
    client, alice, project, source, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            erase_url(project, source),
            {"note": "subject access request", "confirm": source.original_name},
        )
    assert response.status_code == 302 and response.url == audit_url(project)
    source.refresh_from_db()
    assert source.status == "erased"
    assert not blob_path(source.sha256).exists()
    assert set(Episode.objects.filter(source=source).values_list("content", flat=True)) == {""}
    page = client.get(response.url)
    assert b"Erased memory/2026-11-02.md: 3 episode(s)" in page.content
    event = page.context["rows"][0]["event"]
    assert event.action == "source.erase" and event.note == "subject access request"
    # Afterwards the confirmation page says it is done and offers no form.
    again = client.get(erase_url(project, source))
    assert b"Already erased" in again.content and b'name="confirm"' not in again.content


def test_a_wrong_confirmation_changes_nothing(client, alice, project, source):
    client.force_login(alice)
    before = list(Episode.objects.filter(source=source).values_list("content", "status"))
    for data in (
        {"note": "subject access request", "confirm": "2026-11-03.md"},
        {"note": "subject access request", "confirm": ""},
        {"note": "   ", "confirm": source.original_name},
    ):
        response = client.post(erase_url(project, source), data)
        assert response.status_code == 400
        assert response.context["form"].errors
    assert (
        b"That is not the file name"
        in client.post(erase_url(project, source), {"note": "x", "confirm": "nope.md"}).content
    )
    source.refresh_from_db()
    assert source.status == "active" and blob_path(source.sha256).exists()
    assert list(Episode.objects.filter(source=source).values_list("content", "status")) == before
    assert not AuditEvent.objects.filter(action="source.erase").exists()


def test_posting_to_an_erased_source_is_refused(client, alice, project, source):
    client.force_login(alice)
    data = {"note": "subject access request", "confirm": source.original_name}
    client.post(erase_url(project, source), data)
    response = client.post(erase_url(project, source), data)
    assert response.status_code == 400
    assert AuditEvent.objects.filter(action="source.erase").count() == 1


def test_only_maintainers_may_erase(client, bob, carol, mallory, project, source):
    data = {"note": "please", "confirm": source.original_name}
    for user, status in ((bob, 403), (carol, 403), (mallory, 404)):
        client.force_login(user)
        assert client.get(erase_url(project, source)).status_code == status
        assert client.post(erase_url(project, source), data).status_code == status
    source.refresh_from_db()
    assert source.status == "active"


def test_another_projects_source_is_404(client, alice, project, other_project):
    seed(other_project, [ERASED_PATH])
    theirs = Source.objects.get(project=other_project)
    client.force_login(alice)
    assert client.get(erase_url(project, theirs)).status_code == 404
    assert client.get(erase_url(other_project, theirs)).status_code == 404


def test_erase_accepts_only_get_and_post(client, alice, project, source):
    client.force_login(alice)
    assert client.put(erase_url(project, source)).status_code == 405
    assert client.delete(erase_url(project, source)).status_code == 405


def test_anonymous_users_cannot_reach_the_erase_page(client, project, source):
    response = client.get(erase_url(project, source))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
