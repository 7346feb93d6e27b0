"""The OpenAPI schema describes every endpoint of the JSON API; the docs load nothing remote."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders

P = "/api/projects/{slug}"
ENDPOINTS = {
    (f"{P}/events", "post"): "write-events",
    (f"{P}/candidates", "get"): "read",
    (f"{P}/candidates/{{candidate_id}}", "get"): "read",
    (f"{P}/candidates/{{candidate_id}}/{{action}}", "post"): "review",
    (f"{P}/dream", "post"): "review",
    (f"{P}/dream/runs/{{run_id}}", "get"): "read",
    (f"{P}/pages", "get"): "read",
    (f"{P}/pages/{{key}}", "get"): "read",
    (f"{P}/provenance/{{kind}}/{{object_id}}", "get"): "read",
    (f"{P}/conflicts", "get"): "read",
    (f"{P}/open-questions", "get"): "read",
    (f"{P}/retrieve", "get"): "read",
    (f"{P}/startup-packet", "get"): "read",
    (f"{P}/exports", "post"): "review",
    (f"{P}/exports", "get"): "review",
    (f"{P}/exports/{{export_id}}/files/{{name}}", "get"): "review",
}


@pytest.fixture
def schema(client, db):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_endpoint_is_described_with_its_scope_auth_and_errors(schema):
    described = {
        (path, method)
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert set(ENDPOINTS) <= described
    for (path, method), scope in ENDPOINTS.items():
        operation = schema["paths"][path][method]
        assert operation["security"] == [{"TokenAuth": []}], path
        assert f"({scope})" in operation["description"], path
        assert {"401", "403", "404"} <= set(operation["responses"]), path
    assert schema["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"


def test_the_request_bodies_are_typed(schema):
    event = schema["paths"][f"{P}/events"]["post"]["requestBody"]["content"]["application/json"]
    ref = event["schema"]["$ref"].rsplit("/", 1)[1]
    body = schema["components"]["schemas"][ref]
    assert body["required"] == ["content"]
    review = schema["paths"][f"{P}/candidates/{{candidate_id}}/{{action}}"]["post"]
    action = next(p for p in review["parameters"] if p["name"] == "action")
    assert action["schema"]["enum"] == ["approve", "reject", "defer", "merge"]


def test_the_docs_page_loads_only_our_own_static_files(client, db):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets, html
    for asset in assets:
        assert asset.startswith("/static/"), asset
        assert finders.find(asset.removeprefix("/static/")), asset
    assert "cdn" not in html.lower()
    # Served under our Content-Security-Policy: no inline script runs.
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert not re.search(r"<script(?![^>]*(src=|application/json))", html)
