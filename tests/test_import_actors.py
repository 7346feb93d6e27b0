"""Actors are named once: "agent:builder" in a source never becomes "user:agent:builder"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmwiki.importers.base import actor_id
from llmwiki.ingest import RawFile, collect_paths, ingest_files
from llmwiki.models import Episode


@pytest.mark.parametrize(
    ("kind", "name", "expected"),
    [
        ("user", "Maya Chen", "user:Maya Chen"),
        ("user", "agent:builder", "agent:builder"),
        ("agent", "agent:builder", "agent:builder"),
        ("agent", "user:maya", "user:maya"),
        ("user", "Agent: scout", "agent:scout"),
        ("user", "system", "system"),
        ("agent", "agent:", "agent:unknown"),
    ],
)
def test_it_prefixes_only_bare_names(kind, name, expected):
    assert actor_id(kind, name) == expected


@pytest.mark.django_db
def test_it_keeps_actors_already_prefixed_in_every_importer(project, alice):
    transcript = "\n".join(
        json.dumps(t)
        for t in [
            {"id": "t-1", "speaker": "agent:scout", "text": "The queue is RabbitMQ 3.13."},
            {"id": "t-2", "speaker": "Maya Chen", "text": "Then we use quorum queues."},
            {"id": "t-3", "role": "assistant", "name": "agent:builder", "text": "Noted, done."},
        ]
    )
    note = "---\nauthor: agent:builder\n---\n# Notes\n\nThe relay reads the outbox table.\n"
    log = "# 2026-11-02 — agent:builder\n\n## Done\n- 09:14 Deployed worker v1.5.\n"
    ingest_files(
        project=project,
        files=[
            RawFile("call.jsonl", transcript.encode()),
            RawFile("notes/relay.md", note.encode()),
            RawFile("memory/2026-11-02.md", log.encode()),
        ],
        actor=alice,
    )
    actors = set(Episode.objects.values_list("actor", flat=True))
    assert actors == {"agent:scout", "user:Maya Chen", "agent:builder"}


@pytest.mark.django_db
def test_the_demo_corpus_has_no_doubled_prefix(project, alice):
    ingest_files(project=project, files=collect_paths([Path("llmwiki/demo/corpus")]), actor=alice)
    actors = set(Episode.objects.values_list("actor", flat=True))
    assert actors
    assert not [a for a in actors if a.count(":") > 1 or a.startswith("user:agent:")]
