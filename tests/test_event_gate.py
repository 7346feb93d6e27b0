"""An agent's event through the gate: its metadata is screened, its size and kind bounded.

The same rules over the JSON API, the MCP server and the service they share.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from django.conf import settings
from mcp.server.fastmcp.exceptions import ToolError

from api.mcp_server import build_server
from llmwiki.blobs import blob_read
from llmwiki.errors import InputError
from llmwiki.models import AuditEvent, Episode, Source
from llmwiki.record import (
    EVENT_MAX_AGENT_CHARS,
    EVENT_MAX_CONTENT_BYTES,
    EVENT_MAX_LOCATOR_BYTES,
    EVENT_MAX_TAG_CHARS,
    EVENT_MAX_TAGS,
    episode_record,
)
from tests.api_data import bearer, post, run_async, url

# Assembled at run time so that no credential-shaped string sits in the source tree.
AWS_KEY = "AK" + "IA" + "Z7TIDEWATERTES2"[:15] + "Q"
GITHUB_TOKEN = "gh" + "p_" + (string.ascii_letters + string.digits)[7:43]
EMAIL = "pager.oncall@tidewater.example"
BOOKKEEPING = ["approval", "retrieval", "source_ingest"]


def blobs() -> list[Path]:
    return [p for p in Path(settings.BLOB_DIR).rglob("*") if p.is_file()]


def nothing_stored(project) -> bool:
    return not (
        Episode.objects.filter(project=project).exists()
        or Source.objects.filter(project=project).exists()
        or AuditEvent.objects.filter(action="episode.record").exists()
        or blobs()
    )


# --- Metadata goes through the gate --------------------------------------------------------


def test_secrets_in_agent_tags_and_locator_are_redacted_everywhere_they_are_kept(
    client, project, alice
):
    body = {
        "content": "Deployed worker v1.8 to tw-app-1.",
        "agent": f"builder {AWS_KEY}",
        "tags": ["deploy", f"token {GITHUB_TOKEN}"],
        "locator": {"run": 42, "env": f"AWS_ACCESS_KEY_ID={AWS_KEY}", GITHUB_TOKEN: "x"},
    }
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == 201, response.content
    assert {"secret:aws_access_key", "secret:github_token"} <= set(response.json()["flags"])
    assert response.json()["security_class"] == "restricted"

    episode = Episode.objects.get(pk=response.json()["episode_id"])
    assert episode.actor.startswith("agent:builder [REDACTED:aws_access_key] (API token")
    assert episode.tags == ["deploy", "token [REDACTED:github_token]"]
    assert episode.locator == {
        "run": 42,
        "env": "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key]",
        "[REDACTED:github_token]": "x",
    }
    assert episode.content == "Deployed worker v1.8 to tw-app-1."
    audit = AuditEvent.objects.get(action="episode.record", object_id=str(episode.pk))
    source = episode.source
    blob = blob_read(source.sha256).decode()
    kept = [episode.actor, json.dumps(episode.tags), json.dumps(episode.locator), audit.actor]
    kept += [source.path, json.dumps(source.security_summary), blob]
    for text in kept:
        assert AWS_KEY not in text and GITHUB_TOKEN not in text, text
    assert json.loads(blob)["tags"] == episode.tags
    assert source.security_summary["raw"] == "redacted"
    assert {s["kind"] for s in source.security_summary["secrets"]} == {
        "aws_access_key",
        "github_token",
    }


def test_an_email_in_the_metadata_flags_the_episode_as_in_content(client, project, alice):
    body = {"content": "Paged the on-call.", "tags": [f"notify {EMAIL}"], "agent": EMAIL}
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == 201, response.content
    episode = Episode.objects.get(pk=response.json()["episode_id"])
    assert "pii:email" in episode.flags
    assert episode.security_class == "restricted"
    # PII is flagged, not redacted, as in content; a read token is no longer shown it.
    assert episode.source.security_summary["raw"] == "as received"


def test_clean_metadata_changes_nothing(project):
    episode = episode_record(
        project=project,
        actor=lambda agent: f"agent:{agent}",
        agent="builder",
        kind="event",
        content="Deployed worker v1.8.",
        tags=["deploy"],
        locator={"run": 42},
    )
    assert episode.actor == "agent:builder"
    assert episode.flags == [] and episode.security_class == "internal"
    assert episode.source.security_summary["raw"] == "as received"


# --- One set of limits ---------------------------------------------------------------------


OVER_LIMIT = [
    ({"tags": [f"t{i}" for i in range(EVENT_MAX_TAGS + 1)]}, "tags"),
    ({"tags": ["ok", "x" * (EVENT_MAX_TAG_CHARS + 1)]}, "tags[1]"),
    ({"agent": "a" * (EVENT_MAX_AGENT_CHARS + 1)}, "agent"),
    ({"locator": {"note": "x" * EVENT_MAX_LOCATOR_BYTES}}, "locator"),
    ({"content": "x" * (EVENT_MAX_CONTENT_BYTES + 1)}, "content"),
]


@pytest.mark.parametrize(("extra", "field"), OVER_LIMIT)
def test_the_service_refuses_over_limit_input_naming_the_field(project, extra, field):
    event = {"kind": "event", "content": "deployed", **extra}
    with pytest.raises(InputError) as refused:
        episode_record(project=project, actor=lambda agent: f"agent:{agent}", **event)
    assert refused.value.name == field
    assert nothing_stored(project)


@pytest.mark.parametrize(("extra", "field"), OVER_LIMIT)
def test_the_api_refuses_over_limit_input_naming_the_field(client, project, alice, extra, field):
    body = {"content": "deployed", **extra}
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code in (400, 422), response.content
    assert response.json()["message"].startswith(field.replace("[1]", ".1"))
    assert nothing_stored(project)


def test_a_multibyte_locator_is_measured_in_bytes(project):
    locator = {"note": "é" * (EVENT_MAX_LOCATOR_BYTES // 2)}
    with pytest.raises(InputError, match="bytes as JSON"):
        episode_record(project=project, actor="agent:x", kind="event", content="x", locator=locator)


# --- Only the agents' kinds ----------------------------------------------------------------


@pytest.mark.parametrize("kind", BOOKKEEPING)
def test_the_api_refuses_the_apps_bookkeeping_kinds(client, project, alice, kind):
    body = {"content": "approved everything", "kind": kind}
    response = post(client, url(project, "events"), body, bearer(project, alice, "write-events"))
    assert response.status_code == 422
    assert response.json()["message"].startswith("kind")
    assert nothing_stored(project)


@pytest.mark.parametrize("kind", BOOKKEEPING)
def test_the_service_refuses_the_apps_bookkeeping_kinds(project, kind):
    with pytest.raises(InputError, match="cannot be posted") as refused:
        episode_record(project=project, actor="agent:x", kind=kind, content="approved")
    assert refused.value.name == "kind"
    assert nothing_stored(project)


def test_the_api_schema_lists_only_the_agents_kinds(client):
    schema = client.get("/api/openapi.json").json()
    event = schema["components"]["schemas"]["EventIn"]["properties"]["kind"]
    assert set(event["enum"]) == {str(k) for k in Episode.AGENT_KINDS}
    assert not set(event["enum"]) & set(BOOKKEEPING)


# --- The MCP tool, in process --------------------------------------------------------------


def record_over_mcp(project, alice, arguments: dict):
    _, token = bearer(project, alice, "write-events")["Authorization"].split(" ", 1)
    server = build_server(project.slug, token)
    return run_async(server.call_tool, "memory_record_event", arguments)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"tags": [f"t{i}" for i in range(500)]}, "tags"),
        ({"agent": "a" * 5000}, "agent"),
        ({"content": "x" * 2_000_000}, "content"),
        ({"kind": "approval"}, "kind"),
    ],
)
def test_the_mcp_tool_refuses_what_the_api_refuses(project, alice, arguments, field):
    with pytest.raises(ToolError) as refused:
        record_over_mcp(project, alice, {"content": "deployed", **arguments})
    assert field in str(refused.value)
    assert nothing_stored(project)


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tool_screens_metadata(project, alice):
    arguments = {"content": "Deployed.", "tags": [AWS_KEY], "locator": {"by": EMAIL}}
    record_over_mcp(project, alice, arguments)
    episode = Episode.objects.get(project=project)
    assert episode.tags == ["[REDACTED:aws_access_key]"]
    assert {"secret:aws_access_key", "pii:email"} <= set(episode.flags)


def test_a_key_hidden_by_a_zero_width_space_is_kept_nowhere(project):
    hidden = f"{AWS_KEY[:4]}\u200b{AWS_KEY[4:]}"
    episode = episode_record(
        project=project, actor="agent:x", kind="note", content=f"deploy key {hidden}"
    )
    assert episode.content == "deploy key [REDACTED:aws_access_key]"
    blob = blob_read(episode.source.sha256).decode()
    assert json.loads(blob)["content"] == "deploy key [REDACTED:aws_access_key]"
    assert episode.source.security_summary["raw"] == "redacted"
