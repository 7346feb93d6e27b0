"""The OpenAPI schema describes every endpoint and answer of the JSON API; the docs load
nothing remote."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.staticfiles import finders
from django.core.serializers.json import DjangoJSONEncoder
from jsonschema import Draft202012Validator
from ninja import Status
from ninja.operation import Operation
from schemathesis.specs.openapi.definitions import OPENAPI_31

from dreaming import services as dreaming
from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.models import Claim, Episode, SecurityClass
from reviews import actions
from reviews.exports import ExportOptions, export_create
from reviews.exports.documents import MIN_BUDGET
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed

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


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_every_answer_is_typed_and_a_busy_database_documented(schema):
    for (path, method), _ in ENDPOINTS.items():
        responses = schema["paths"][path][method]["responses"]
        success = next(r for code, r in responses.items() if code.startswith("2"))
        if path.endswith("/files/{name}"):
            continue  # a file download: its bytes, not JSON
        answer = success["content"]["application/json"]["schema"]
        documents = [resolve(schema, a) for a in answer.get("oneOf", [answer])]
        for document in documents:
            assert document["type"] == "object" and document["properties"], (path, answer)
        busy = responses["503"]
        assert "busy" in busy["description"] and "Retry-After" in busy["headers"], path
        if "429" in responses:
            assert "Retry-After" in responses["429"]["headers"], path


def test_enumerations_are_enums_and_limits_are_bounds(schema):
    components = schema["components"]["schemas"]
    assert components["CandidateOut"]["properties"]["status"]["enum"] == Candidate.Status.values
    assert components["EpisodeOut"]["properties"]["kind"]["enum"] == Episode.Kind.values
    assert components["ExportIn"]["properties"]["audience"]["enum"] == SecurityClass.values
    assert components["ConflictOut"]["properties"]["status"]["enum"] == Conflict.Status.values
    hits = components["ContextPack"]["properties"]["items"]["items"]["discriminator"]
    assert set(hits["mapping"]) == {"claim", "page", "conflict", "episode"}

    def parameter(path: str, name: str) -> dict:
        operation = schema["paths"][f"{P}/{path}"]["get"]
        return next(p for p in operation["parameters"] if p["name"] == name)["schema"]

    provenance = parameter("provenance/{kind}/{object_id}", "kind")
    assert provenance["enum"] == ["claim", "candidate", "episode"]
    for path in ("candidates", "conflicts", "open-questions"):
        assert (parameter(path, "limit")["minimum"], parameter(path, "limit")["maximum"]) == (
            1,
            200,
        )
        assert parameter(path, "offset")["minimum"] == 0
    assert (parameter("retrieve", "k")["minimum"], parameter("retrieve", "k")["maximum"]) == (
        1,
        100,
    )
    budget = parameter("retrieve", "budget")["anyOf"][0]
    assert budget["minimum"] == 1
    packet = parameter("startup-packet", "budget")["anyOf"][0]
    assert packet["minimum"] == MIN_BUDGET


@pytest.fixture
def swept(project, alice):
    seed(project)
    # A preview first: after the sweep there would be nothing new to preview.
    for trigger in ("preview", "manual"):
        run = dreaming.dream_request(project=project, trigger=trigger, actor="t", enqueue=False)
        dreaming.dream_execute(run_id=run.pk)
    staging = Candidate.objects.get(project=project, text__contains="db-staging-2")
    actions.candidate_approve(candidate=staging, reviewer=alice, seen=actions.form_state(staging))
    export_create(project=project, options=ExportOptions("startup-packet", "internal"), actor=alice)
    return project


def shape(value):
    """The keys of every object in `value`, recursively; lists by position."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return None


def test_the_typed_answers_keep_every_field_the_operations_build(client, swept, alice, monkeypatch):
    # What the operations returned, before the response schema validated it: a field the
    # schema lacks would be dropped from the answer without a word.
    built: list = []
    original = Operation._result_to_response

    def spy(self, request, result, temporal_response):
        built.append(result.value if isinstance(result, Status) else result)
        return original(self, request, result, temporal_response)

    monkeypatch.setattr(Operation, "_result_to_response", spy)
    headers = bearer(swept, alice, "read", "write-events", "review")
    claim = Claim.objects.filter(project=swept).first()
    candidate = Candidate.objects.filter(project=swept).first()
    episode = claim.evidence.first()
    conflict = Conflict.objects.filter(project=swept).first()
    assert conflict is not None
    reads = [
        "candidates",
        f"candidates/{candidate.pk}",
        *(f"dream/runs/{run.pk}" for run in DreamRun.objects.filter(project=swept)),
        "pages",
        f"pages/{claim.page.key}",
        f"provenance/claim/{claim.pk}",
        f"provenance/candidate/{candidate.pk}",
        f"provenance/episode/{episode.pk}",
        "conflicts?show=all",
        "open-questions",
        "retrieve?q=staging+database+host+broker",
        "startup-packet",
        "exports",
    ]
    answers = [client.get(url(swept, path), headers=headers) for path in reads]
    answers.append(post(client, url(swept, "events"), {"content": "Deployed v2"}, headers))
    answers.append(post(client, url(swept, "exports"), {"kind": "receiver-brief"}, headers))
    assert all(a.status_code < 300 for a in answers), [a.content for a in answers]
    assert len(built) == len(answers)
    for answer, document in zip(answers, built, strict=True):
        assert shape(answer.json()) == shape(
            json.loads(json.dumps(document, cls=DjangoJSONEncoder))
        )
    found = answers[reads.index("retrieve?q=staging+database+host+broker")].json()
    assert "claim" in {item["kind"] for item in found["items"]}
    preview = [a.json() for a in answers if "preview" in a.json() and a.json()["preview"]]
    assert preview and preview[0]["preview"]["candidates"]


def test_the_schema_is_valid_openapi_3_1(schema):
    # The OpenAPI 3.1 meta-schema (as schemathesis ships it), and every schema object in
    # it valid JSON Schema 2020-12, the dialect 3.1 uses.
    assert schema["openapi"].startswith("3.1")
    errors = sorted(Draft202012Validator(OPENAPI_31).iter_errors(schema), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]
    for component in schema["components"]["schemas"].values():
        Draft202012Validator.check_schema(component)
    broken = {**schema, "paths": {"/api/x": {"get": {"responses": {"200": {}}}}}}
    assert list(Draft202012Validator(OPENAPI_31).iter_errors(broken))
