"""A reviewed fixture project for the export tests, built through the real services."""

from __future__ import annotations

from dreaming.models import Conflict, ConflictSide
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Episode, Page
from llmwiki.wiki import claim_create, page_recompile, record_change

PII_TEXT = "The harbour master contact is jane.doe@example.com for berth changes."
NOTES = {
    "notes/architecture.md": (
        "# Architecture\n\n"
        "The tracker runs on Django with PostgreSQL 16 on db-staging-2.\n\n"
        "Shipment events go through Redis Streams with consumer groups.\n\n"
        f"{PII_TEXT}\n\n"
        "Decision: move the shipment event queue from RabbitMQ to Redis Streams.\n\n"
        "Deploys drain tw-app-2 from HAProxy before restarting the worker.\n\n"
        "Agents must not run migrations on production without a maintainer.\n\n"
        "Reviewed claims need two evidence episodes before they count as settled.\n"
    ),
}


def episode(project, needle: str) -> Episode:
    return Episode.objects.get(project=project, content__contains=needle)


def add_claim(project, user, key: str, text: str, *, section: str = "", cls: str = "internal"):
    page = Page.objects.get_or_create(project=project, key=key, defaults={"title": key.title()})[0]
    claim = claim_create(
        page=page,
        text=text,
        evidence=[episode(project, text[:30]).pk],
        reviewer=user,
        section=section,
        security_class=cls,
    )
    revision = page_recompile(page=page, actor=user, reason="test")
    record_change(
        project=project, actor=user, summary=f"{key}: {claim.pk}", claim=claim, revision=revision
    )
    return claim


def build_wiki(project, alice) -> dict:
    """Tidewater with one reviewed claim per page, a PII-flagged one, and an open question."""
    ingest_files(
        project=project,
        files=[RawFile(p, t.encode()) for p, t in NOTES.items()],
        actor="system",
    )
    claims = {
        "stack": add_claim(
            project,
            alice,
            "SYSTEM_OVERVIEW",
            "The tracker runs on Django with PostgreSQL 16 on db-staging-2.",
            section="Stack",
            cls="public",
        ),
        "queue": add_claim(
            project,
            alice,
            "SYSTEM_OVERVIEW",
            "Shipment events go through Redis Streams with consumer groups.",
            section="Stack",
        ),
        "pii": add_claim(
            project, alice, "SYSTEM_OVERVIEW", PII_TEXT, section="Contacts", cls="internal"
        ),
        "decision": add_claim(
            project,
            alice,
            "DECISION_LOG",
            "Decision: move the shipment event queue from RabbitMQ to Redis Streams.",
            cls="public",
        ),
        "runbook": add_claim(
            project,
            alice,
            "RUNBOOKS",
            "Deploys drain tw-app-2 from HAProxy before restarting the worker.",
        ),
        "agents": add_claim(
            project,
            alice,
            "AGENT_INSTRUCTIONS",
            "Agents must not run migrations on production without a maintainer.",
        ),
        "governance": add_claim(
            project,
            alice,
            "GOVERNANCE",
            "Reviewed claims need two evidence episodes before they count as settled.",
            cls="public",
        ),
    }
    conflict = Conflict.objects.create(
        project=project, subject="staging database host", kind="value", dedupe_key="k1"
    )
    ConflictSide.objects.create(conflict=conflict, position=1, text="Staging is on db-staging-2.")
    ConflictSide.objects.create(conflict=conflict, position=2, text="Staging is on db-staging-3.")
    return claims
