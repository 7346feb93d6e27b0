"""The MCP server, driven by the official SDK's client over stdio, as an agent would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.api_data import run_async
from tests.dreaming_data import DAYS

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {
    "memory_retrieve",
    "memory_record_event",
    "memory_open_questions",
    "memory_provenance",
    "memory_startup_packet",
}

# Builds the project through the real services, approves one candidate, and prints the
# tokens; run in the server's own data directory.
SETUP = """
import json
from django.contrib.auth import get_user_model
from api.services import token_create
from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.services import project_create
from reviews import actions

days = json.loads(open(%(days)r).read())
alice = get_user_model().objects.create_user("alice", password="x")
project = project_create(slug="tw", name="Tidewater", actor="system", owner=alice)
ingest_files(project=project, files=[RawFile(p, t.encode()) for p, t in days.items()], actor="system")
run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
dreaming.dream_execute(run_id=run.pk)
staging = Candidate.objects.get(project=project, text__contains="db-staging-2")
claim = actions.candidate_approve(candidate=staging, reviewer=alice, seen=actions.form_state(staging))
from llmwiki.models import Episode, Page
from llmwiki.wiki import claim_create
ingest_files(project=project, files=[RawFile("contacts.md", b"# Contacts\\n\\nBerth changes go to jane.doe@example.com first.\\n")], actor="system")
contact = Episode.objects.get(project=project, content__contains="jane.doe")
pii = claim_create(page=Page.objects.get(project=project, key="SYSTEM_OVERVIEW"), text="Berth changes go to the harbour office first.", evidence=[contact.pk], reviewer=alice)
_, agent = token_create(project=project, name="agent", scopes=["read", "write-events"], actor=alice)
_, reader = token_create(project=project, name="reader", scopes=["read"], actor=alice)
print(json.dumps({"agent": agent, "reader": reader, "claim": claim.pk, "pii": pii.pk}))
"""

REVOKE = """
from api.models import ApiToken
from api.services import token_revoke
token = ApiToken.objects.get(name="agent")
token_revoke(token=token, actor=token.created_by)
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A fresh data directory, migrated and seeded by real processes."""
    tmp = tmp_path_factory.mktemp("mcp")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_")
        and k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}
    }
    env.update(LLMWIKI_DATA_DIR=str(tmp / "data"), LLMWIKI_DEBUG="1")
    (tmp / "days.json").write_text(json.dumps(DAYS))

    def manage(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    manage("migrate", "-v0")
    printed = manage("shell", "--no-imports", "-c", SETUP % {"days": str(tmp / "days.json")})
    made = json.loads(printed.strip().splitlines()[-1])
    return {"env": env, "manage": manage, **made}


def server(world, token: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--project", "tw", "--token", token],
        cwd=str(ROOT),
        env=world["env"],
    )


def payload(result) -> dict:
    assert not result.isError, result.content
    return json.loads(result.content[0].text)


def run_client(session) -> None:
    run_async(session)


def test_an_agent_retrieves_records_and_follows_provenance_over_stdio(world):
    async def session() -> None:
        async with (
            stdio_client(server(world, world["agent"])) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOLS

            found = payload(
                await client.call_tool("memory_retrieve", {"query": "staging database host"})
            )
            first = found["items"][0]
            assert first["kind"] == "claim" and first["id"] == world["claim"]
            assert first["citations"]["episode_ids"]

            recorded = payload(
                await client.call_tool(
                    "memory_record_event",
                    {"content": "Deployed worker v1.7 to tw-app-1", "agent": "builder"},
                )
            )
            assert recorded["episode_id"] and recorded["status"] == "active"

            where = payload(
                await client.call_tool(
                    "memory_provenance",
                    {"kind": "episode", "object_id": recorded["episode_id"]},
                )
            )
            assert where["text"] == "Deployed worker v1.7 to tw-app-1"
            assert where["actor"].startswith("agent:builder")

            claim = payload(
                await client.call_tool(
                    "memory_provenance", {"kind": "claim", "object_id": world["claim"]}
                )
            )
            assert claim["evidence"] and claim["reviewer"] == "alice"

            questions = payload(await client.call_tool("memory_open_questions", {}))
            assert questions["count"] >= 1  # the RabbitMQ → Redis Streams reversal

            packet = payload(await client.call_tool("memory_startup_packet", {}))
            assert "db-staging-2" in packet["markdown"]

            missing = await client.call_tool(
                "memory_provenance", {"kind": "claim", "object_id": 999999}
            )
            assert missing.isError and "404" in missing.content[0].text

            # Revoked while the session is open: the next call is refused.
            world["manage"]("shell", "-c", REVOKE)
            refused = await client.call_tool("memory_retrieve", {"query": "staging"})
            assert refused.isError and "401" in refused.content[0].text
            assert "revoked" in refused.content[0].text

    run_client(session)


def test_a_read_token_cannot_record_events(world):
    async def session() -> None:
        async with (
            stdio_client(server(world, world["reader"])) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            refused = await client.call_tool("memory_record_event", {"content": "x"})
            assert refused.isError
            assert "403" in refused.content[0].text
            assert "write-events scope" in refused.content[0].text

            # A claim resting on PII is withheld from a read token, with the reason.
            pii = payload(
                await client.call_tool(
                    "memory_provenance", {"kind": "claim", "object_id": world["pii"]}
                )
            )
            assert pii["text"] is None and "Text withheld" in pii["withheld"]
            assert "harbour office" not in json.dumps(pii)
            assert "jane.doe" not in json.dumps(pii)

    run_client(session)


def test_the_server_will_not_start_with_a_bad_token(world):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp_server", "--project", "tw", "--token", "lw_x_y"],
        cwd=ROOT,
        env=world["env"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "unknown API token" in done.stderr
    assert done.stdout == ""


def test_tools_declare_their_output_and_open_questions_come_a_page_at_a_time(world):
    async def session() -> None:
        async with (
            stdio_client(server(world, world["reader"])) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            listed = {t.name: t for t in (await client.list_tools()).tools}
            for tool in listed.values():
                assert tool.outputSchema["type"] == "object", tool.name
                assert tool.outputSchema["properties"], tool.name
            packet = listed["memory_startup_packet"].outputSchema["properties"]
            assert {"markdown", "claim_ids", "withheld", "left_out"} <= set(packet)
            paging = listed["memory_open_questions"].inputSchema["properties"]
            assert paging["offset"]["minimum"] == 0 and paging["limit"]["maximum"] == 200

            found = await client.call_tool("memory_retrieve", {"query": "staging database"})
            assert found.structuredContent["items"] == payload(found)["items"]
            assert found.structuredContent["items"][0]["kind"] == "claim"

            first = await client.call_tool("memory_open_questions", {"limit": 1})
            everything = payload(first)["count"]
            pages = [payload(first)["items"]]
            for offset in range(1, everything):
                following = await client.call_tool(
                    "memory_open_questions", {"limit": 1, "offset": offset}
                )
                assert following.structuredContent["offset"] == offset
                pages.append(payload(following)["items"])
            ids = [item["id"] for page in pages for item in page]
            assert len(ids) == everything and len(set(ids)) == everything
            past = payload(await client.call_tool("memory_open_questions", {"offset": everything}))
            assert past["items"] == [] and past["count"] == everything

            refused = await client.call_tool("memory_open_questions", {"offset": -1})
            text = refused.content[0].text
            assert refused.isError and text.startswith("400 bad input: offset:")
            assert "\n" not in text

    run_client(session)
