"""A token can do the smaller of its scopes and its creator's current role, and nothing
once its creator's account is deactivated: on every API route and every MCP tool."""

from __future__ import annotations

import pytest

from api.mcp_server import ToolRefused, _checked
from api.models import ApiToken
from api.services import token_create
from llmwiki import access
from llmwiki.models import Episode, Export, Role
from reviews.exports import ExportOptions, export_create
from tests.api_data import post, url

EVENT = {"kind": "note", "content": "The tide gauge reads every ten minutes."}


def token(project, user, *scopes):
    _, text = token_create(project=project, name="agent", scopes=scopes, actor=user)
    return {"Authorization": f"Bearer {text}"}, text


def demote(project, user, role):
    project.memberships.filter(user=user).update(role=role)


@pytest.fixture
def restricted_export(project, alice):
    export_create(
        project=project,
        options=ExportOptions(kind="startup-packet", audience="restricted"),
        actor=alice,
    )
    return Export.objects.get(project=project, audience="restricted")


ROUTES = [
    ("get", "pages", None),
    ("post", "events", EVENT),
    ("post", "dream", {"preview": True}),
    ("post", "dream", {"backfill_from": "2026-01-01", "backfill_to": "2026-01-02"}),
    ("post", "dream", {}),
    ("get", "exports", None),
]


def call(client, project, method, path, body, headers):
    if method == "get":
        return client.get(url(project, path), headers=headers)
    return post(client, url(project, path), body, headers)


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_a_deactivated_creators_token_gets_401_everywhere(
    client, project, alice, method, path, body
):
    headers, _ = token(project, alice, *ApiToken.Scope.values)
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    response = call(client, project, method, path, body, headers)
    assert response.status_code == 401, response.content
    assert "deactivated" in response.json()["message"]
    assert not Episode.objects.filter(project=project).exists()


def test_a_deactivated_superuser_is_no_maintainer(project, alice):
    alice.is_superuser = True
    alice.is_active = False
    alice.save()
    assert access.role_in(alice, project) is None
    assert not access.projects_for(alice).exists()


def test_a_deactivated_creators_token_is_refused_by_the_mcp_server(project, alice):
    _, text = token(project, alice, "read", "write-events")
    assert _checked(project.slug, text, "read", lambda caller: "ok") == "ok"
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    with pytest.raises(ToolRefused, match=r"401 unauthorized: .*deactivated"):
        _checked(project.slug, text, "read", lambda caller: "ok")


@pytest.mark.parametrize(
    ("method", "path", "body", "role", "status"),
    [
        ("post", "dream", {"preview": True}, Role.VIEWER, 403),
        (
            "post",
            "dream",
            {"backfill_from": "2026-01-01", "backfill_to": "2026-01-02"},
            Role.VIEWER,
            403,
        ),
        ("post", "dream", {}, Role.CONTRIBUTOR, 403),
        ("get", "exports", None, Role.VIEWER, 403),
        ("post", "events", EVENT, Role.VIEWER, 403),
        ("post", "events", EVENT, Role.CONTRIBUTOR, 201),
        ("get", "pages", None, Role.VIEWER, 200),
        ("post", "dream", {"preview": True}, Role.REVIEWER, 202),
    ],
)
def test_a_demoted_creators_token_does_only_what_the_role_allows(
    client, project, alice, bob, method, path, body, role, status
):
    # Bob made the token as a maintainer and was demoted since.
    demote(project, bob, Role.MAINTAINER)
    headers, _ = token(project, bob, *ApiToken.Scope.values)
    demote(project, bob, role)
    response = call(client, project, method, path, body, headers)
    assert response.status_code == status, response.content
    if status == 403:
        assert f"is now {role}" in response.json()["message"]


def test_a_demoted_creator_cannot_read_a_restricted_exports_files(
    client, project, alice, bob, restricted_export
):
    demote(project, bob, Role.MAINTAINER)
    headers, _ = token(project, bob, "read", "review")
    path = f"exports/{restricted_export.pk}/files/STARTUP_PACKET.md"
    assert client.get(url(project, path), headers=headers).status_code == 200
    demote(project, bob, Role.VIEWER)
    assert client.get(url(project, path), headers=headers).status_code == 403
