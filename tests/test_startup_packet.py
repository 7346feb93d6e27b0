"""The startup packet an agent can use: every governance rule in it or named, open
questions with their text, absolute links, and only what its reader can reach."""

from __future__ import annotations

import re

import pytest

from llmwiki.errors import InputError
from llmwiki.ingest import RawFile, ingest_files
from reviews.exports import ExportOptions, export_render
from tests.api_data import bearer, url
from tests.export_data import add_claim, build_wiki, episode
from tests.test_exports import render

LINK = re.compile(r"\]\(([^)]+)\)")


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    made = build_wiki(project, alice)
    rule = b"# Hosts\n\nNever run migrations from both hosts.\n"
    ingest_files(project=project, files=[RawFile("notes/hosts.md", rule)], actor="system")
    made["hosts"] = add_claim(
        project, alice, "GOVERNANCE", "Never run migrations from both hosts.", cls="public"
    )
    return made


def packet(project, **kw) -> tuple[str, dict]:
    rendered = export_render(project=project, options=ExportOptions("startup-packet", **kw))
    return rendered.files["STARTUP_PACKET.md"].decode(), rendered.manifest


def test_every_governance_rule_is_in_the_packet_or_named_as_left_out(wiki, project):
    full, _ = packet(project)
    assert "## Governance" in full and "Never run migrations from both hosts." in full
    assert "two evidence episodes" in full
    rules = [wiki["governance"].pk, wiki["hosts"].pk]
    for budget in range(1_000, len(full) + 1, 150):
        try:
            doc, manifest = packet(project, budget=budget)
        except InputError:  # below what the index needs
            continue
        left = manifest["left_out"]["claims"].get("GOVERNANCE", [])
        for pk in rules:
            shown = f"(/p/{project.slug}/claims/{pk}/)" in doc
            assert shown or (pk in left and str(pk) in doc.split("## Left out")[1]), budget


def test_open_questions_are_listed_with_their_sides(wiki, project):
    doc, _ = packet(project)
    questions = doc.split("## Open questions")[1].split("## ")[1]
    assert questions.startswith("staging database host")
    assert "- Staging is on db-staging-2." in doc and "- Staging is on db-staging-3." in doc


def test_an_open_question_with_a_pii_side_is_withheld_from_the_packet(wiki, project):
    from dreaming.models import ConflictSide

    side = ConflictSide.objects.get(text="Staging is on db-staging-3.")
    side.evidence.set([episode(project, "jane.doe")])
    doc, manifest = packet(project)
    assert "db-staging-3" not in doc and "db-staging-2" in doc
    assert manifest["withheld"] == {"claim:pii-flagged": 1, "open-question-side:pii-flagged": 1}


def smallest(fits) -> object:
    """What `fits(budget)` gives for the smallest budget the packet's index fits in."""
    for budget in range(1_000, 12_000, 100):
        try:
            return fits(budget)
        except InputError:
            continue
    raise AssertionError("no budget fits")


def test_links_are_absolute_under_the_public_url(wiki, project, settings):
    settings.PUBLIC_URL = "https://wiki.example.org"
    doc, _ = smallest(lambda budget: packet(project, budget=budget))
    assert "## Left out" in doc
    links = LINK.findall(doc) + re.findall(r"read them at (\S+/)", doc)
    assert links and all(link.startswith("https://wiki.example.org/p/") for link in links)


def test_over_the_api_the_packet_names_only_what_an_agent_can_reach(client, wiki, project, alice):
    got = client.get(url(project, "startup-packet"), headers=bearer(project, alice))
    assert got.status_code == 200, got.content
    doc = got.json()["markdown"]
    for unreachable in ("README", "INDEX.md", "EVIDENCE_LEDGER", "MANIFEST", "TRUST_MODEL.md"):
        assert unreachable not in doc
    assert "memory_retrieve" in doc and f"/api/projects/{project.slug}/" in doc
    exported = render(project, "startup-packet").files["STARTUP_PACKET.md"].decode()
    assert "EVIDENCE_LEDGER.json beside this file" in exported
    budget = len(doc) - 60
    tight = client.get(
        url(project, "startup-packet"), {"budget": budget}, headers=bearer(project, alice)
    ).json()
    assert "GET pages/" in tight["markdown"] and tight["left_out"]["claims"]
