"""The raw layer keeps no credential: a source with secret findings is stored redacted,
under its original's sha256, so re-importing the same original is still a no-op."""

from __future__ import annotations

import importlib
import io
import json
import zipfile

from llmwiki.blobs import blob_path, blob_write
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Episode, Source, sha256_hex
from llmwiki.record import episode_record
from llmwiki.security.raw import WITHHELD_TEXT, redact_secrets, redact_texts, redacted_file

AWS_KEY = "AKIAZ7TIDEWATERRAW01"
GH_TOKEN = "ghp_" + "Tidewater0RawToken0123456789abcdefgh"[:36]
LOG = f"""# 2026-11-07 — agent:builder

## Done
- 09:14 Deployed worker v1.5 to tw-app-1.
- 10:02 Rotated credentials; pasted by mistake: AWS key {AWS_KEY} and token {GH_TOKEN}
""".encode()


def stored(source: Source) -> bytes:
    return blob_path(source.sha256).read_bytes()


def test_the_blob_of_a_file_with_an_aws_key_holds_it_redacted(project):
    report = ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    assert report.sources[0].status == "new"
    source = Source.objects.get(project=project)
    assert source.sha256 == sha256_hex(LOG)  # the original's hash, for idempotence
    assert source.size == len(LOG)
    blob = stored(source)
    assert AWS_KEY.encode() not in blob and GH_TOKEN.encode() not in blob
    assert b"[REDACTED:aws_access_key]" in blob
    assert b"Deployed worker v1.5 to tw-app-1." in blob  # the rest is kept as received
    assert source.security_summary["raw"] == "redacted"


def test_reimporting_the_same_original_is_still_a_no_op(project):
    ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    episodes = Episode.objects.count()
    again = ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    assert [s.status for s in again.sources] == ["unchanged"]
    assert (Source.objects.count(), Episode.objects.count()) == (1, episodes)
    assert AWS_KEY.encode() not in stored(Source.objects.get())


def test_a_clean_file_is_kept_as_received(project):
    data = b"# Notes\n\n- The worker runs on tw-app-1.\n"
    ingest_files(project=project, files=[RawFile("notes.md", data)], actor="t")
    source = Source.objects.get(project=project)
    assert stored(source) == data
    assert source.security_summary["raw"] == "as received"


def test_a_zip_is_stored_as_a_zip_with_the_secret_redacted_in_its_entry(project):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("memory/2026-11-07.md", LOG)
        archive.writestr("notes.md", "# Notes\n\n- The worker runs on tw-app-1.\n")
    data = buffer.getvalue()
    ingest_files(project=project, files=[RawFile("export.zip", data)], actor="t")
    source = Source.objects.get(project=project)
    assert source.sha256 == sha256_hex(data)
    with zipfile.ZipFile(io.BytesIO(stored(source))) as archive:
        assert archive.namelist() == ["memory/2026-11-07.md", "notes.md"]
        log = archive.read("memory/2026-11-07.md").decode()
        assert AWS_KEY not in log and "[REDACTED:aws_access_key]" in log
        assert archive.read("notes.md") == b"# Notes\n\n- The worker runs on tw-app-1.\n"
    assert AWS_KEY.encode() not in stored(source)


def test_a_transcript_turn_with_a_key_is_redacted_in_the_stored_jsonl(project):
    turns = [
        {
            "id": "t-1",
            "role": "user",
            "content": f"the key is {AWS_KEY}",
            "timestamp": "2026-11-04T10:00:00Z",
        },
        {
            "id": "t-2",
            "role": "assistant",
            "content": "Rotate it now.",
            "timestamp": "2026-11-04T10:00:05Z",
        },
    ]
    data = "\n".join(json.dumps(t) for t in turns).encode()
    ingest_files(project=project, files=[RawFile("chat.jsonl", data)], actor="t")
    blob = stored(Source.objects.get(project=project))
    assert AWS_KEY.encode() not in blob
    assert [json.loads(line)["id"] for line in blob.splitlines()] == ["t-1", "t-2"]


def test_an_event_posted_by_an_agent_keeps_no_secret_in_its_raw_blob(project):
    episode = episode_record(
        project=project, actor="agent:builder", kind="note", content=f"deploy key {AWS_KEY}"
    )
    source = episode.source
    blob = stored(source)
    assert AWS_KEY.encode() not in blob
    assert json.loads(blob)["content"] == "deploy key [REDACTED:aws_access_key]"
    assert source.security_summary["raw"] == "redacted"


def test_an_edited_version_is_redacted_even_where_the_secret_did_not_change(project):
    ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    edited = LOG + b"- 11:00 Closed the incident.\n"
    report = ingest_files(
        project=project, files=[RawFile("memory/2026-11-07.md", edited)], actor="t"
    )
    assert report.sources[0].status == "updated"
    newest = Source.objects.get(sha256=sha256_hex(edited))
    assert AWS_KEY.encode() not in stored(newest)


# --- the pure part -----------------------------------------------------------------------


def test_a_secret_the_file_level_scan_cannot_find_withholds_the_text():
    texts = [("a.md", "nothing to see"), ("b.md", f"key {AWS_KEY}")]
    out = redact_texts(texts, expected={"not-a-fingerprint-found-here"})
    assert out == [("a.md", WITHHELD_TEXT), ("b.md", WITHHELD_TEXT)]


def test_the_redacted_zip_is_the_same_bytes_every_time():
    texts = [("a.md", f"key {AWS_KEY}")]
    _, fingerprints = redact_secrets(texts[0][1])
    assert fingerprints
    first = redacted_file(texts, fingerprints, is_zip=True)
    assert first == redacted_file(texts, fingerprints, is_zip=True)
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert archive.read("a.md") == b"key [REDACTED:aws_access_key]"


# --- blobs stored before the raw layer redacted -------------------------------------------


def as_stored_before(source: Source, original: bytes) -> None:
    """Put a source back the way an older version left it: the original on disk."""
    blob_write(original, source.sha256, replace=True)
    summary = dict(source.security_summary)
    summary.pop("raw")
    Source.objects.filter(pk=source.pk).update(security_summary=summary)


def run_migration() -> None:
    from django.apps import apps

    module = importlib.import_module("llmwiki.migrations.0005_redact_stored_raw_blobs")
    module.redact_stored(apps, None)


def test_the_migration_redacts_blobs_stored_as_received(project):
    ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    event = episode_record(project=project, actor="agent:x", kind="note", content=f"k {AWS_KEY}")
    clean = b"# Notes\n\n- The worker runs on tw-app-1.\n"
    ingest_files(project=project, files=[RawFile("notes.md", clean)], actor="t")
    log_source = Source.objects.get(sha256=sha256_hex(LOG))
    as_stored_before(log_source, LOG)
    raw_event = json.dumps(
        {
            "actor": "agent:x",
            "kind": "note",
            "content": f"k {AWS_KEY}",
            "occurred_at": None,
            "locator": {},
            "tags": [],
        },
        sort_keys=True,
    ).encode()
    as_stored_before(event.source, raw_event)
    assert AWS_KEY.encode() in stored(log_source)

    run_migration()

    log_source.refresh_from_db()
    assert AWS_KEY.encode() not in stored(log_source)
    assert b"[REDACTED:aws_access_key]" in stored(log_source)
    assert log_source.security_summary["raw"] == "redacted"
    assert json.loads(stored(event.source))["content"] == "k [REDACTED:aws_access_key]"
    assert stored(Source.objects.get(path="notes.md")) == clean  # no secret: untouched
    again = ingest_files(project=project, files=[RawFile("memory/2026-11-07.md", LOG)], actor="t")
    assert [s.status for s in again.sources] == ["unchanged"]
