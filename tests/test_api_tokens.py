"""API tokens: maintainers create them (shown once, stored hashed) and revoke them."""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse

from api.models import ApiToken
from api.services import Unauthorized, token_authenticate, token_create, token_revoke
from llmwiki.errors import InputError, Refused
from llmwiki.models import AuditEvent


def tokens_url(project):
    return reverse("api_tokens:list", args=[project.slug])


def test_it_stores_only_the_hash_and_the_token_authenticates(project, alice):
    token, text = token_create(project=project, name="ci-agent", scopes=["read"], actor=alice)
    assert text.startswith(f"lw_{token.prefix}_")
    assert token.key_hash == hashlib.sha256(text.encode()).hexdigest()
    assert text not in str(list(ApiToken.objects.values_list()))
    assert token_authenticate(text).pk == token.pk
    assert AuditEvent.objects.filter(action="api_token.create", object_id=str(token.pk)).exists()


@pytest.mark.parametrize(
    ("name", "scopes", "field"),
    [("", ["read"], "name"), ("x", [], "scopes"), ("x", ["read", "admin"], "scopes")],
)
def test_it_refuses_a_bad_name_or_scope(project, alice, name, scopes, field):
    with pytest.raises(InputError) as exc:
        token_create(project=project, name=name, scopes=scopes, actor=alice)
    assert exc.value.name == field
    assert not ApiToken.objects.exists()


def test_only_a_maintainer_creates_tokens(project, bob):
    with pytest.raises(Refused):
        token_create(project=project, name="x", scopes=["read"], actor=bob)
    assert not ApiToken.objects.exists()


def test_a_revoked_token_no_longer_authenticates(project, alice):
    token, text = token_create(project=project, name="x", scopes=["read"], actor=alice)
    token_revoke(token=token, actor=alice)
    with pytest.raises(Unauthorized, match="revoked"):
        token_authenticate(text)
    with pytest.raises(Unauthorized, match="unknown"):
        token_authenticate(text[:-2] + "zz")
    assert AuditEvent.objects.filter(action="api_token.revoke").count() == 1


def test_the_settings_page_creates_a_token_and_shows_it_once(client, project, alice):
    client.force_login(alice)
    response = client.post(
        tokens_url(project), {"name": "claude-code", "scopes": ["read", "write-events"]}
    )
    assert response.status_code == 200
    token = ApiToken.objects.get()
    assert token.scopes == ["read", "write-events"]
    assert token.created_by == alice
    body = response.content.decode()
    shown = body.split(f"lw_{token.prefix}_")[1].split("<")[0]
    assert token_authenticate(f"lw_{token.prefix}_{shown}").pk == token.pk
    again = client.get(tokens_url(project)).content.decode()
    assert shown not in again
    assert f"lw_{token.prefix}_…" in again
    assert "no-store" in response["Cache-Control"]


def test_the_settings_page_says_what_was_wrong(client, project, alice):
    client.force_login(alice)
    response = client.post(tokens_url(project), {"name": "", "scopes": []})
    assert response.status_code == 200
    assert response.content.decode().count('role="alert"') == 2
    assert not ApiToken.objects.exists()


def test_the_settings_page_revokes(client, project, alice):
    token, _ = token_create(project=project, name="x", scopes=["read"], actor=alice)
    client.force_login(alice)
    response = client.post(reverse("api_tokens:revoke", args=[project.slug, token.pk]))
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None and token.revoked_by == alice
    assert "revoked" in client.get(tokens_url(project)).content.decode()


def test_the_settings_page_is_for_maintainers(client, project, bob, mallory, alice):
    token, _ = token_create(project=project, name="x", scopes=["read"], actor=alice)
    revoke = reverse("api_tokens:revoke", args=[project.slug, token.pk])
    assert client.get(tokens_url(project)).status_code == 302  # anonymous: to the login
    client.force_login(bob)
    assert client.get(tokens_url(project)).status_code == 403
    assert client.post(revoke).status_code == 403
    client.force_login(mallory)
    assert client.get(tokens_url(project)).status_code == 404
    assert client.post(revoke).status_code == 404
    client.force_login(alice)
    assert client.get(revoke).status_code == 405
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_token_list_is_a_fixed_number_of_queries(
    client, project, alice, bob, django_assert_num_queries
):
    client.force_login(alice)
    token_create(project=project, name="first", scopes=["read"], actor=alice)
    client.get(tokens_url(project))  # warm the session
    with django_assert_num_queries(5):
        one = client.get(tokens_url(project))
    for i in range(5):
        more, _ = token_create(project=project, name=f"t{i}", scopes=["read"], actor=alice)
        token_revoke(token=more, actor=alice)
    with django_assert_num_queries(5):
        many = client.get(tokens_url(project))
    assert one.content.decode().count('id="token-') == 1
    assert many.content.decode().count('id="token-') == 6
