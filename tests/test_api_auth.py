"""Who gets into the JSON API: tokens, scopes, projects; JSON errors; body and write limits."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.http import FileResponse, HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from api.middleware import ApiLimitsMiddleware
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
    ("method", "path", "body", "scope", "others"),
    [
        # Review includes read, so only write-events is without it.
        ("get", "pages", None, "read", ["write-events"]),
        ("post", "events", {"content": "x"}, "write-events", ["read", "review"]),
        ("post", "dream", {}, "review", ["read", "write-events"]),
    ],
)
def test_each_scope_guards_its_endpoints(client, project, alice, method, path, body, scope, others):
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
    # The window opened 45 s ago: the header and the message both say about 15 s.
    ApiToken.objects.update(window_started_at=timezone.now() - timedelta(seconds=45))
    response = post(client, url(project, "events"), {"content": "two"}, headers)
    assert response.status_code == 429
    message = response.json()["message"]
    assert "1 writes a minute" in message
    wait = int(re.search(r"retry in (\d+) s", message).group(1))
    assert 10 <= wait <= 16
    assert response["Retry-After"] == str(wait)


def test_api_answers_are_not_cached(client, project, alice):
    response = client.get(url(project, "pages"), headers=bearer(project, alice, "read"))
    assert "no-store" in response["Cache-Control"]


def test_a_wrong_method_is_405_in_json(client, project, alice):
    response = client.get(url(project, "events"), headers=bearer(project, alice, "write-events"))
    assert response.status_code == 405
    assert response.json()["message"] == "GET is not allowed here; use POST"
    assert response["Allow"] == "POST"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{bad", "body: is not valid JSON: Expecting property name enclosed in double quotes"),
        (
            b'{"content": "x",}',
            "body: is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 17",
        ),
        (b'{"content": "\xff"}', "body: is not UTF-8 text"),
    ],
)
def test_a_body_that_is_not_json_is_400_naming_the_problem(client, project, alice, body, problem):
    headers = bearer(project, alice, "write-events")
    response = client.post(
        url(project, "events"), body, content_type="application/json", headers=headers
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith(problem), response.json()
    assert response.json()["field"] == "body"
    assert not Episode.objects.exists()


def test_an_unexpected_failure_is_500_in_json(client, project, alice, monkeypatch):
    from api import reading

    def broken(caller):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(reading, "page_list", broken)
    client.raise_request_exception = False
    response = client.get(url(project, "pages"), headers=bearer(project, alice))
    assert response.status_code == 500
    assert response.json() == {"message": "internal error; the server log has the details"}


@pytest.mark.parametrize(
    "path",
    ["pages", "candidates?limit=5", "retrieve?q=staging", "startup-packet", None],
)
def test_head_answers_wherever_get_does_with_the_same_headers(client, project, alice, path):
    headers = bearer(project, alice, "read")
    address = url(project, path) if path else "/api/openapi.json"
    got = client.get(address, headers=headers)
    head = client.head(address, headers=headers)
    assert got.status_code == head.status_code == 200, head.content
    assert head.content == b""
    for name in ("Content-Type", "Content-Length", "Cache-Control"):
        assert head.get(name) == got.get(name), name


def test_head_to_a_post_only_route_is_405_naming_the_method_to_use(client, project, alice):
    response = client.head(url(project, "events"), headers=bearer(project, alice, "write-events"))
    assert response.status_code == 405
    assert response["Allow"] == "POST"


@pytest.mark.parametrize(
    "answer",
    [
        lambda: HttpResponse(b'{"items": []}', content_type="application/json"),
        lambda: FileResponse(iter([b"# Startup packet"]), content_type="text/markdown"),
    ],
)
def test_head_sends_no_body_of_an_answer_or_a_file(answer):
    seen: list[str] = []

    def view(request):
        seen.append(request.method)
        response = answer()
        response["Content-Length"] = "16"
        return response

    response = ApiLimitsMiddleware(view)(RequestFactory().head("/api/projects/x/pages"))
    assert seen == ["GET"]
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert body == b""
    assert response["Content-Length"] == "16"
