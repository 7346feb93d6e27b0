"""Memory as of a date: claims keep when they held and when they were on record, and
retrieval answers what the reviewed memory said then, on the CLI, the API and MCP."""

from __future__ import annotations

import json
from importlib import metadata
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Claim, Episode, Page, PageKey, RecallTrace
from llmwiki.search import retrieve
from llmwiki.wiki import claim_create, claim_retract
from tests.api_data import bearer, url
from tests.test_mcp_server import payload, run_client, server, world  # noqa: F401
from tests.test_search import OPERATOR

BROKER = (
    "# Broker\n\n"
    "- 2026-11-03: the shipment queue runs on RabbitMQ.\n\n"
    "- 2026-11-10: the shipment queue now runs on Redis Streams.\n"
)


@pytest.fixture
def history(project, alice):
    """A claim, the moment after it was approved, and the claim that superseded it."""
    ingest_files(project=project, files=[RawFile("broker.md", BROKER.encode())], actor="system")
    first, second = Episode.objects.filter(project=project, source__path="broker.md").order_by("id")
    page = Page.objects.get(project=project, key=PageKey.SYSTEM_OVERVIEW)
    old = claim_create(
        page=page, text="The shipment queue runs on RabbitMQ.", evidence=[first.pk], reviewer=alice
    )
    between = timezone.now()
    new = claim_create(
        page=page,
        text="The shipment queue runs on Redis Streams.",
        evidence=[second.pk],
        reviewer=alice,
        supersedes=old,
    )
    old.refresh_from_db()
    return old, between, new


def claims(pack) -> list[int]:
    return [h.id for h in pack.hits if h.kind == "claim"]


def test_a_superseded_claim_keeps_both_time_axes(history):
    old, between, new = history
    evidence = {c.pk: c.evidence.get() for c in (old, new)}
    assert old.held_from == evidence[old.pk].occurred_at
    assert old.held_until == new.held_from == evidence[new.pk].occurred_at
    assert old.approved_at <= between <= old.retired_at and between <= new.approved_at
    assert new.retired_at is None and new.held_until is None


def test_retrieval_as_of_a_moment_answers_from_the_claims_approved_then(project, history):
    old, between, new = history
    query = "which queue does the shipment queue run on"
    assert claims(retrieve(project, query, caller=OPERATOR)) == [new.pk]
    then = retrieve(project, query, caller=OPERATOR, as_of=between)
    assert claims(then) == [old.pk]
    hit = next(h for h in then.hits if h.kind == "claim")
    assert hit.as_json()["status"] == "superseded"
    assert hit.valid["recorded_until"] == old.retired_at.isoformat()
    assert (
        claims(retrieve(project, query, caller=OPERATOR, as_of=old.approved_at.replace(year=2000)))
        == []
    )


def test_a_retracted_and_restored_claim_is_memory_only_while_approved(project, alice, history):
    _, _, new = history
    claim_retract(claim=new, actor=alice, reason="wrong")
    retracted = timezone.now()
    new.refresh_from_db()
    new.transition(Claim.Status.APPROVED, actor=alice, note="rolled back to it")
    query = "shipment queue Redis Streams"
    assert new.pk not in claims(retrieve(project, query, caller=OPERATOR, as_of=retracted))
    assert new.pk in claims(retrieve(project, query, caller=OPERATOR))


def test_episodes_recorded_after_the_date_are_left_out(project, history):
    _, between, _ = history
    ingest_files(
        project=project,
        files=[RawFile("later.md", b"# Later\n\nThe shipment queue gets a second consumer.\n")],
        actor="system",
    )
    query = "shipment queue second consumer"
    now = [h.text for h in retrieve(project, query, caller=OPERATOR).hits]
    then = [h.text for h in retrieve(project, query, caller=OPERATOR, as_of=between).hits]
    assert any("second consumer" in t for t in now)
    assert not any("second consumer" in t for t in then)


def cli(*args: str) -> dict:
    out = StringIO()
    call_command("retrieve", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_cli_answers_as_of_a_date(project, history):
    old, between, new = history
    args = ["--project", project.slug, "--query", "shipment queue"]
    then = cli(*args, "--as-of", between.isoformat())
    assert [i["id"] for i in then["items"] if i["kind"] == "claim"] == [old.pk]
    assert then["as_of"] == between.isoformat()
    # A bare date is the end of that day: today's claims are memory by then.
    today = cli(*args, "--as-of", timezone.now().date().isoformat())
    assert [i["id"] for i in today["items"] if i["kind"] == "claim"] == [new.pk]
    with pytest.raises(CommandError, match="--as-of: as_of 'yesterday' is not a date"):
        cli(*args, "--as-of", "yesterday")


def test_the_api_answers_as_of_a_date(client, project, alice, history):
    old, between, _ = history
    headers = bearer(project, alice)
    got = client.get(
        url(project, "retrieve"),
        {"q": "shipment queue", "as_of": between.isoformat()},
        headers=headers,
    )
    assert got.status_code == 200, got.content
    items = got.json()["items"]
    assert [i["id"] for i in items if i["kind"] == "claim"] == [old.pk]
    assert got.json()["as_of"] == between.isoformat()
    bad = client.get(
        url(project, "retrieve"), {"q": "shipment queue", "as_of": "11/03/2026"}, headers=headers
    )
    assert bad.status_code == 400 and bad.json()["field"] == "as_of"
    assert RecallTrace.objects.filter(project=project).count() == 1


def test_the_claim_page_shows_the_supersession_chain_with_dates(client, project, alice, history):
    old, _, new = history
    client.force_login(alice)
    for claim in (old, new):
        page = client.get(reverse("reviews:claim", args=[project.slug, claim.pk])).content.decode()
        chain = page[page.index('data-testid="supersession-chain"') :]
        assert chain.index(f"claim {old.pk}") < chain.index(f"claim {new.pk}")
        assert f"{old.approved_at:%Y-%m-%d %H:%M}" in chain
        assert f"superseded {old.retired_at:%Y-%m-%d %H:%M}" in chain
        assert f"held from {old.held_from:%Y-%m-%d}" in chain


SUPERSEDE = """
from django.utils import timezone
from llmwiki.models import Claim
from llmwiki.wiki import claim_create
old = Claim.objects.get(pk=%(claim)d)
between = timezone.now()
new = claim_create(page=old.page, text="The staging database runs PostgreSQL 17 on db-staging-3.",
                   evidence=list(old.evidence.values_list("pk", flat=True)), reviewer=old.reviewer,
                   supersedes=old)
print(between.isoformat(), new.pk)
"""


def test_mcp_answers_as_of_a_date_and_describes_its_tools(world):  # noqa: F811
    printed = world["manage"]("shell", "--no-imports", "-c", SUPERSEDE % {"claim": world["claim"]})
    between, new = printed.split()

    async def session() -> None:
        async with (
            stdio_client(server(world, world["agent"])) as (read, write),
            ClientSession(read, write) as client,
        ):
            started = await client.initialize()
            assert started.serverInfo.version == metadata.version("llmwiki")
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for tool in tools.values():
                for name, schema in tool.inputSchema["properties"].items():
                    assert schema.get("description"), (tool.name, name)
            retrieve_tool = tools["memory_retrieve"]
            assert retrieve_tool.annotations.readOnlyHint is True
            assert retrieve_tool.annotations.idempotentHint is True
            assert "tokens" in retrieve_tool.inputSchema["properties"]["budget"]["description"]
            packet = tools["memory_startup_packet"].inputSchema["properties"]["budget"]
            assert "tokens" in packet["description"]

            query = {"query": "staging database host"}
            now = payload(await client.call_tool("memory_retrieve", query))
            then = payload(await client.call_tool("memory_retrieve", {**query, "as_of": between}))
            assert next(i["id"] for i in now["items"] if i["kind"] == "claim") == int(new)
            then_claims = [i["id"] for i in then["items"] if i["kind"] == "claim"]
            assert world["claim"] in then_claims and int(new) not in then_claims

            bad = await client.call_tool("memory_retrieve", {**query, "as_of": "soon"})
            assert bad.isError and "as_of" in bad.content[0].text
            refused = await client.call_tool("memory_retrieve", {**query, "k": 0})
            text = refused.content[0].text
            assert refused.isError and text.startswith("400 bad input: k:") and "\n" not in text

    run_client(session)
