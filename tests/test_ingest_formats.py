"""Importing what teams have: a folder (or zip) holding every supported export at once.

The fixtures under tests/fixtures/importers/mixed/ are written from each format's public
description (cited in the importer's docstring); the Claude Code tool result and a Slack
message each carry a planted credential.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from llmwiki.blobs import blob_path
from llmwiki.ingest import RawFile, collect_paths, ingest_files
from llmwiki.models import Episode, Source

MIXED = Path(__file__).resolve().parent / "fixtures" / "importers" / "mixed"
AWS_KEY = "AKIAZ7TIDEWATERTEST2"
SLACK_TOKEN = "ghp_Tidewater0SlackToken0123456789abcdef"

# importer → episodes its fixture yields
EXPECTED = {
    "claude_code": 5,  # 2 user/assistant text turns + closing answer, 1 tool call, 1 result
    "codex": 4,  # harness boilerplate, reasoning and event/turn_context lines left out
    "chatgpt": 4,  # the current branch only: the abandoned answer is not imported
    "slack": 5,  # join and leave notices dropped
    "discord": 2,  # the member-join notice dropped
    "github": 3,  # title+body, two comments
    "memory_bank": 5,
    "asciidoc": 4,  # steps, code block, two table rows
    "mbox": 2,
    "csv": 2,
}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.fixture
def imported(project, alice):
    report = ingest_files(project=project, files=collect_paths([MIXED]), actor=alice)
    return report


def episodes(project, importer: str) -> list[Episode]:
    return list(Episode.objects.filter(project=project, source__importer=importer).order_by("id"))


def test_a_folder_of_every_format_imports_in_one_call_with_a_status_per_source(project, imported):
    assert not imported.rejected, imported.rejected
    paths = {s.path: s for s in imported.sources}
    assert len(paths) == len(list(p for p in MIXED.rglob("*") if p.is_file()))
    assert {s.status for s in imported.sources} == {"new"}
    counts = {name: len(episodes(project, name)) for name in EXPECTED}
    assert counts == EXPECTED
    assert imported.episodes_created == sum(EXPECTED.values())
    # Slack's users.json and channels.json are sources of the export, not content.
    assert paths["slack/users.json"].episodes == 0
    assert Source.objects.get(project=project, path="slack/users.json").importer == "slack"


def test_each_format_keeps_speakers_dates_and_a_locator_to_the_message(project, imported):
    claude = episodes(project, "claude_code")
    assert [e.actor for e in claude] == ["user:unknown"] + ["agent:claude-code"] * 4
    assert claude[0].occurred_at == at("2026-03-02T08:00:05.120Z")
    assert claude[0].locator["session"] == "0b6c9a52-5f2e-4c1b-9a57-2d0c6f1e8a11"
    assert claude[0].locator["turn_id"] == "c3d4e5f6-0000-4000-8000-000000000001"
    assert claude[0].locator["branch"] == "retention"
    result = next(e for e in claude if "tool_result" in e.tags)
    assert result.kind == "tool_call" and result.locator["lines"] == [4, 4]

    codex = episodes(project, "codex")
    assert [e.actor for e in codex] == ["user:unknown", "agent:codex", "agent:codex", "agent:codex"]
    assert codex[2].content.startswith("[function_call_output (exit 0)]")
    assert codex[2].locator["turn_id"] == "call_TidewaterGrep01"

    chatgpt = episodes(project, "chatgpt")
    assert [e.locator["turn_id"] for e in chatgpt] == ["node-u1", "node-a2", "node-u2", "node-a3"]
    assert not any("Keep them forever" in e.content for e in chatgpt)
    assert chatgpt[0].occurred_at == at("2026-03-02T09:00:10.500Z")

    slack = episodes(project, "slack")
    speakers = {e.actor for e in slack}
    assert speakers == {"user:carla", "user:Dev Patel", "agent:deploybot"}
    mention = next(e for e in slack if "Heads up" in e.content)
    assert "@Dev Patel" in mention.content and "<@U" not in mention.content
    assert mention.locator == {
        "path": "slack/general/2026-03-03.json",
        "channel": "general",
        "turn_id": "1772528400.000200",
        "zone": "Europe/Lisbon",
    }
    # Replies, even the one written the next day in another file, name their thread.
    replies = {
        e.locator["turn_id"] for e in slack if e.locator.get("thread") == "1772528400.000200"
    }
    assert replies == {"1772528700.000300", "1772604000.000500"}

    discord = episodes(project, "discord")
    assert [e.actor for e in discord] == ["user:Erin", "user:Frank"]
    assert discord[1].locator["reply_to"] == "1100000000000000002"
    assert discord[1].locator["zone"] == "+01:00"
    assert discord[1].occurred_at == at("2026-03-05T08:42:10Z")

    github = episodes(project, "github")
    assert github[0].content.startswith("Nightly export is empty when it overlaps the batch\n\n")
    assert [e.locator["turn_id"] for e in github] == [
        "body",
        "IC_kwDOTidewater001",
        "IC_kwDOTidewater002",
    ]
    assert all("state:closed" in e.tags for e in github)

    bank = {e.locator["path"]: e.kind for e in episodes(project, "memory_bank")}
    assert bank["memory-bank/progress.md"] == "log_entry"
    assert bank["memory-bank/decisionLog.md"] == "decision"

    adoc = episodes(project, "asciidoc")
    assert {e.actor for e in adoc} == {"user:Ivy Chen"}
    rows = [e.content for e in adoc if "table-row" in e.tags]
    assert rows == [
        "Role: On-call; Person: Erin; Hours: 09:00-17:00",
        "Role: Database; Person: Frank; Hours: always",
    ]

    mail = episodes(project, "mbox")
    assert [e.actor for e in mail] == ["user:Jill Stone", "user:Ken Ito"]
    assert mail[1].occurred_at == at("2026-03-03T10:02:00Z")
    assert mail[1].locator["zone"] == "+09:00"
    assert mail[1].locator["reply_to"] == "<cold-1@tidewater.example>"
    # The quoted reply is the first message's text, not the second's.
    assert "Glacier" not in mail[1].content and "Glacier" in mail[0].content

    events = episodes(project, "csv")
    assert [e.actor for e in events] == ["user:deploybot", "user:frank"]
    assert events[1].locator == {"path": "events/deploys.csv", "lines": [3, 4], "zone": "+01:00"}


def test_the_gate_catches_a_key_in_a_tool_result_and_in_a_slack_message(project, imported):
    result = next(e for e in episodes(project, "claude_code") if "tool_result" in e.tags)
    token = next(e for e in episodes(project, "slack") if "deploy token" in e.content)
    for episode, secret in ((result, AWS_KEY), (token, SLACK_TOKEN)):
        assert secret not in episode.content
        assert any(flag.startswith("secret:") for flag in episode.flags), episode.flags
        assert episode.security_class == "restricted"
        # The raw layer keeps the file redacted, not as received.
        source = episode.source
        assert source.security_summary["raw"] == "redacted"
        assert secret.encode() not in blob_path(source.sha256).read_bytes()


def test_a_key_in_the_trimmed_tail_of_a_long_tool_output_is_still_caught(project, alice):
    output = "\n".join(f"line {i}: ok" for i in range(2000)) + f"\nexport KEY={AWS_KEY}\n"
    row = {
        "type": "user",
        "uuid": "u-1",
        "sessionId": "s-1",
        "timestamp": "2026-03-02T08:00:00Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t-1", "content": output}],
        },
    }
    data = json.dumps(row).encode()
    report = ingest_files(project=project, files=[RawFile("s-1.jsonl", data)], actor=alice)
    [episode] = Episode.objects.filter(project=project)
    assert "trimmed" in episode.content and AWS_KEY not in episode.content
    assert any(flag.startswith("secret:") for flag in episode.flags)
    assert report.sources[0].flags
    assert AWS_KEY.encode() not in blob_path(report.sources[0].sha256).read_bytes()


def test_the_episode_page_shows_the_message_a_slack_episode_came_from(
    client, alice, project, imported
):
    episode = next(e for e in episodes(project, "slack") if "Heads up" in e.content)
    client.force_login(alice)
    response = client.get(reverse("episode", args=[project.slug, episode.pk]))
    page = response.content.decode()
    assert 'data-testid="locator-channel">general<' in page
    assert 'data-testid="locator-turn_id">1772528400.000200<' in page
    assert 'data-testid="locator-zone">Europe/Lisbon<' in page


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_holding_chat_ndjson_imports_as_the_plain_file_does(project, alice):
    chat = b'{"role": "user", "content": "Staging runs PostgreSQL 16 on db-staging-2."}\n'
    report = ingest_files(
        project=project, files=[RawFile("chats.zip", _zip({"chat.ndjson": chat}))], actor=alice
    )
    assert [s.status for s in report.sources] == ["new"], report.sources
    assert report.episodes_created == 1


def test_a_zipped_slack_export_resolves_names_like_the_folder(project, alice):
    members = {
        p.relative_to(MIXED).as_posix(): p.read_bytes()
        for p in sorted((MIXED / "slack").rglob("*"))
        if p.is_file()
    }
    report = ingest_files(project=project, files=[RawFile("slack.zip", _zip(members))], actor=alice)
    assert [s.status for s in report.sources] == ["new"], report.sources
    actors = set(Episode.objects.filter(project=project).values_list("actor", flat=True))
    assert actors == {"user:carla", "user:Dev Patel", "agent:deploybot"}
    assert Source.objects.get(project=project).importer == "slack"


def test_json_of_no_known_shape_is_refused_alone_naming_the_shapes(project, alice):
    files = [
        RawFile("app/package.json", b'{"name": "tidewater", "version": "1.0.0"}'),
        RawFile("notes/queue.md", b"# Queue\n\nThe queue drains nightly.\n"),
    ]
    report = ingest_files(project=project, files=files, actor=alice)
    status = {s.path: s for s in report.sources}
    assert status["notes/queue.md"].status == "new"
    refused = status["app/package.json"]
    assert refused.status == "rejected"
    assert "Slack workspace export" in refused.error and "ChatGPT export" in refused.error
    assert not Source.objects.filter(project=project, path="app/package.json").exists()


def test_json_of_two_shapes_is_refused_as_ambiguous_naming_both(project, alice):
    both = {
        "title": "Ops channel",
        "body": "",
        "comments": [],
        "guild": {"id": "1", "name": "Tidewater"},
        "channel": {"id": "2", "name": "ops"},
        "messages": [],
    }
    report = ingest_files(
        project=project, files=[RawFile("export.json", json.dumps(both).encode())], actor=alice
    )
    [source] = report.sources
    assert source.status == "rejected"
    assert "ambiguous JSON" in source.error
    assert "discord" in source.error and "github" in source.error
    # Named explicitly, the same file imports.
    again = ingest_files(
        project=project,
        files=[RawFile("export.json", json.dumps(both).encode())],
        actor=alice,
        importer="github",
    )
    assert again.sources[0].status == "new"


def test_a_memory_bank_file_imported_again_becomes_its_next_version(project, alice):
    first = b"# Active Context\n\n- Moving the nightly export to 02:00 UTC.\n"
    second = first + b"- Capping S3 retries at three.\n"
    path = "memory-bank/activeContext.md"
    ingest_files(project=project, files=[RawFile(path, first)], actor=alice)
    report = ingest_files(project=project, files=[RawFile(path, second)], actor=alice)
    assert report.sources[0].status == "updated"
    versions = list(Source.objects.filter(project=project, path=path).order_by("id"))
    assert versions[1].previous_id == versions[0].pk
    assert {s.importer for s in versions} == {"memory_bank"}


def test_csv_columns_can_be_named_when_the_headers_say_nothing(project, alice):
    data = b"Stamp,Person,Entry\n2026-03-04T11:00:00+01:00,frank,Rotated the backup key\n"
    files = [RawFile("log.csv", data)]
    refused = ingest_files(project=project, files=files, actor=alice)
    assert "no text column among Stamp, Person, Entry" in refused.sources[0].error
    report = ingest_files(
        project=project,
        files=files,
        actor=alice,
        columns={"time": "Stamp", "actor": "Person", "text": "Entry"},
    )
    assert report.sources[0].status == "new"
    [episode] = Episode.objects.filter(project=project)
    assert (episode.actor, episode.content) == ("user:frank", "Rotated the backup key")
    assert episode.occurred_at == at("2026-03-04T10:00:00Z")


@pytest.mark.parametrize("importer", ["discord", "claude_code", "memory_bank"])
def test_manage_py_ingest_takes_every_importer_name(project, importer, capsys):
    paths = {
        "discord": MIXED / "discord" / "tidewater-ops.json",
        "claude_code": next((MIXED / "claude").rglob("*.jsonl")),
        "memory_bank": MIXED / "memory-bank" / "progress.md",
    }
    call_command("ingest", "--project", project.slug, "--importer", importer, str(paths[importer]))
    assert Episode.objects.filter(project=project).exists()
    assert "episodes created" in capsys.readouterr().out


def test_manage_py_ingest_reads_csv_columns_from_the_command_line(project, tmp_path, capsys):
    csv_file = tmp_path / "log.csv"
    csv_file.write_text("Stamp,Person,Entry\n2026-03-04T11:00:00Z,frank,Rotated the backup key\n")
    call_command(
        "ingest", "--project", project.slug, "--columns", "time=Stamp,actor=Person,text=Entry",
        str(csv_file),
    )  # fmt: skip
    assert Episode.objects.get(project=project).actor == "user:frank"


def _parse_fake(file, **options):
    """A stand-in importer: one episode per line of a `.fake` file."""
    from llmwiki.importers.base import EpisodeDraft

    return [
        EpisodeDraft(
            occurred_at=None,
            actor="agent:fake",
            kind="note",
            content=line,
            locator={"path": file.path, "line": n},
        )
        for n, line in enumerate(file.text.splitlines(), start=1)
        if line.strip()
    ]


def test_an_importer_added_to_the_registry_is_accepted_everywhere(project, alice, capsys, tmp_path):
    """Detection by suffix, the zip reader, `ingest --importer` and dreaming's trust all
    read the registry, so one entry makes a new format importable every way."""
    from dreaming.sweep_input import source_trust
    from llmwiki.importers import registry
    from llmwiki.importers.registry import Spec, _per_file

    fake = Spec("fake", "a test format", _per_file(_parse_fake), (".fake",), 0.7, by_suffix=True)
    with registry.registered(fake):
        plain = ingest_files(
            project=project, files=[RawFile("a.fake", b"one\ntwo\n")], actor="system"
        )
        zipped = ingest_files(
            project=project,
            files=[RawFile("bundle.zip", _zip({"inner/b.fake": b"three\n"}))],
            actor="system",
        )
        (tmp_path / "c.fake").write_text("four\n")
        call_command(
            "ingest", "--project", project.slug, "--importer", "fake", str(tmp_path), "--json"
        )
        assert source_trust("draft", "fake") == 0.7
    assert [s.status for s in plain.sources + zipped.sources] == ["new", "new"]
    assert json.loads(capsys.readouterr().out)["sources"][0]["status"] == "new"
    assert sorted(
        Episode.objects.filter(source__importer="fake").values_list("content", flat=True)
    ) == ["four", "one", "three", "two"]
    assert "fake" not in registry.BY_NAME and ".fake" not in registry.SUFFIXES
