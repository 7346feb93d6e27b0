"""Who gets into the JSON API: tokens, scopes, projects; JSON errors; body and write limits."""

from __future__ import annotations

import pytest

from api.models import ApiToken
from api.services import token_create, token_revoke
from llmwiki.models import Episode, Membership
from tests.api_data import bearer, post, url

READ_ENDPOINTS = ["candidates", "conflicts", "open-questions", "pages"]


@pytest.mark.parametrize("path", READ_ENDPOINTS)
def test_it_answers_401_in_json_without_a_token(client, project, path):
    response = client.get(url(project, path))
    assert response.status_code == 401
    assert response.json() == {"message": "an API token is required: Authorization: Bearer <token>"}
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("Bearer nonsense", "malformed"),
        ("Bearer lw_000000000000_abc", "unknown"),
        # A 500 on PostgreSQL, which refuses U+0000 even in the prefix lookup.
        ("Bearer lw_0000\x000000_abc", "malformed"),
    ],
)
def test_it_answers_401_for_a_bad_token(client, project, header, reason):
    response = client.get(url(project, "pages"), headers={"Authorization": header})
    assert response.status_code == 401
    assert reason in response.json()["message"]


def test_a_revoked_token_gets_401(client, project, alice):
    token, text = token_create(project=project, name="x", scopes=["read"], actor=alice)
    headers = {"Authorization": f"Bearer {text}"}
    assert client.get(url(project, "pages"), headers=headers).status_code == 200
    token_revoke(token=token, actor=alice)
    response = client.get(url(project, "pages"), headers=headers)
    assert response.status_code == 401
    assert response.json()["message"] == f"API token {token.prefix} was revoked"


def test_a_token_stops_working_when_its_creator_leaves(client, project, alice, bob):
    headers = bearer(project, alice, "read")
    Membership.objects.filter(user=alice, project=project).delete()
    response = client.get(url(project, "pages"), headers=headers)
    assert response.status_code == 401
    assert "no longer on the project" in response.json()["message"]


def test_another_projects_slug_is_404(client, project, other_project, alice):
    headers = bearer(project, alice, "read")
    response = client.get(url(other_project, "pages"), headers=headers)
    assert response.status_code == 404
    assert response.json() == {"message": "No such project"}


@pytest.mark.parametrize(
    ("method", "path", "body", "scope"),
    [
        ("get", "pages", None, "read"),
        ("post", "events", {"content": "x"}, "write-events"),
        ("post", "dream", {}, "review"),
    ],
)
def test_each_scope_guards_its_endpoints(client, project, alice, method, path, body, scope):
    others = [s for s in ApiToken.Scope.values if s != scope]
    headers = bearer(project, alice, *others)
    if method == "get":
        response = client.get(url(project, path), headers=headers)
    else:
        response = post(client, url(project, path), body, headers)
    assert response.status_code == 403
    assert f"the {scope} scope" in response.json()["message"]
    assert not Episode.objects.filter(project=project).exists()


def test_an_unknown_api_address_is_json_404(client):
    response = client.get("/api/projects/x/nothing/here")
    assert response.status_code == 404
    assert "no API endpoint" in response.json()["message"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(client, project, alice, settings):
    settings.LLMWIKI_API_MAX_BODY_BYTES = 2048
    headers = bearer(project, alice, "write-events")
    response = post(client, url(project, "events"), {"content": "x" * 4096}, headers)
    assert response.status_code == 413
    assert "over the" in response.json()["message"]
    assert not Episode.objects.filter(project=project).exists()


def test_writes_are_bounded_per_token(client, project, alice, settings):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 3
    headers = bearer(project, alice, "write-events")
    codes = [
        post(client, url(project, "events"), {"content": f"deploy {i} done"}, headers).status_code
        for i in range(5)
    ]
    assert codes == [201, 201, 201, 429, 429]
    assert Episode.objects.filter(project=project).count() == 3
    # Another token has its own window.
    fresh = bearer(project, alice, "write-events", name="other")
    assert post(client, url(project, "events"), {"content": "more"}, fresh).status_code == 201


def test_a_rate_limited_answer_says_when_to_retry(client, project, alice, settings):
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 1
    headers = bearer(project, alice, "write-events")
    post(client, url(project, "events"), {"content": "one"}, headers)
    response = post(client, url(project, "events"), {"content": "two"}, headers)
    assert response.status_code == 429
    assert "Retry-After" in response
    assert "1 writes a minute" in response.json()["message"]


def test_api_answers_are_not_cached(client, project, alice):
    response = client.get(url(project, "pages"), headers=bearer(project, alice, "read"))
    assert "no-store" in response["Cache-Control"]


def test_a_wrong_method_is_405_in_json(client, project, alice):
    response = client.get(url(project, "events"), headers=bearer(project, alice, "write-events"))
    assert response.status_code == 405
    assert response.json()["message"] == "GET is not allowed here; use POST"
    assert response["Allow"] == "POST"


def test_a_body_that_is_not_json_is_400(client, project, alice):
    headers = bearer(project, alice, "write-events")
    response = client.post(
        url(project, "events"), "{bad", content_type="application/json", headers=headers
    )
    assert response.status_code == 400
    assert response.json() == {"message": "Cannot parse request body"}


def test_an_unexpected_failure_is_500_in_json(client, project, alice, monkeypatch):
    from api import reading

    def broken(caller):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(reading, "page_list", broken)
    client.raise_request_exception = False
    response = client.get(url(project, "pages"), headers=bearer(project, alice))
    assert response.status_code == 500
    assert response.json() == {"message": "internal error; the server log has the details"}
