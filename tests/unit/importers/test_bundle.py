"""Starter bundles: pages checked against MANIFEST.json, then read as sections."""

from __future__ import annotations

import hashlib
import json

import pytest

from llmwiki.errors import InputError
from llmwiki.importers import (
    TextFile,
    classify,
    is_bundle,
    parse_bundle,
    read_manifest,
)
from tests.unit.importers.files import RUNBOOKS, by_content, starter_bundle

# --- bundles ----------------------------------------------------------------------------------


def test_it_parses_bundle_pages_into_tagged_sections() -> None:
    drafts = parse_bundle(starter_bundle())
    overview = [d for d in drafts if "page:SYSTEM_OVERVIEW" in d.tags]
    assert [d.locator["section"] for d in overview] == [
        "System overview > Components",
        "System overview > Storage",
    ]
    assert all(d.kind == "page_section" and d.actor == "system" for d in overview)
    assert overview[0].content.startswith("## Components\n\nThe web app runs on Django")
    assert not any("generator" in d.content for d in drafts)


def test_it_labels_runbooks_as_procedures_and_decision_entries_as_decisions() -> None:
    drafts = [classify(d) for d in parse_bundle(starter_bundle())]
    runbook = by_content(drafts, "Copy the backup")
    assert runbook.memory_type == "procedural-candidate"
    assert runbook.memory_type_reason == "bundle page RUNBOOKS (procedure)"
    decisions = [d for d in drafts if "page:DECISION_LOG" in d.tags]
    assert [d.kind for d in decisions] == ["decision", "decision"]
    assert decisions[1].content == (
        "- 2026-01-02: PostgreSQL full-text search when running on PostgreSQL."
    )


def test_it_emits_one_episode_per_glossary_term() -> None:
    terms = [d for d in parse_bundle(starter_bundle()) if "page:GLOSSARY" in d.tags]
    assert [t for d in terms for t in d.tags if t.startswith("term:")] == [
        "term:Episode",
        "term:Claim",
        "term:Watermark",
        "term:Candidate",
    ]
    watermark = terms[2]
    assert (
        watermark.content
        == "- Watermark: the newest episode a sweep has read,\n  kept per project."
    )
    assert watermark.locator["lines"] == [5, 6]
    assert terms[3].content == "## Candidate\n\nA proposed claim waiting for review."
    assert all(d.memory_type == "semantic-candidate" for d in terms)


def test_it_rejects_a_bundle_whose_manifest_sha256_mismatches_naming_the_file() -> None:
    with pytest.raises(InputError) as caught:
        parse_bundle(starter_bundle(tamper="RUNBOOKS.md"))
    assert caught.value.name == "starter/RUNBOOKS.md"
    assert "sha256 mismatch with MANIFEST.json" in caught.value.reason


def test_it_rejects_a_malformed_manifest_naming_it() -> None:
    files = [*starter_bundle()[:-1], TextFile("starter/MANIFEST.json", '{"files": [\n')]
    with pytest.raises(InputError, match=r"starter/MANIFEST\.json: line 2: malformed JSON"):
        parse_bundle(files)
    with pytest.raises(InputError, match="must hold a JSON object"):
        read_manifest([TextFile("MANIFEST.json", "[]")])


def test_it_accepts_a_manifest_mapping_paths_to_hashes() -> None:
    digest = hashlib.sha256(RUNBOOKS.encode()).hexdigest()
    files = [
        TextFile("RUNBOOKS.md", RUNBOOKS),
        TextFile("MANIFEST.json", json.dumps({"files": {"RUNBOOKS.md": f"sha256:{digest}"}})),
    ]
    assert read_manifest(files) == {"files": {"RUNBOOKS.md": f"sha256:{digest}"}}
    assert len(parse_bundle(files)) == 1


def test_a_manifest_hash_of_crlf_bytes_verifies_against_decoded_text() -> None:
    crlf_bytes = RUNBOOKS.replace("\n", "\r\n").encode()
    manifest = {
        "files": [{"path": "RUNBOOKS.md", "sha256": hashlib.sha256(crlf_bytes).hexdigest()}]
    }
    files = [TextFile("RUNBOOKS.md", RUNBOOKS), TextFile("MANIFEST.json", json.dumps(manifest))]
    assert read_manifest(files) == manifest


def test_a_tampered_bundle_yields_no_drafts_even_from_untampered_pages() -> None:
    files = [*starter_bundle("one"), *starter_bundle("two", tamper="GLOSSARY.md")]
    with pytest.raises(InputError, match=r"^two/GLOSSARY\.md: sha256 mismatch"):
        parse_bundle(files)


def test_it_recognises_a_bundle_at_the_root_or_one_folder_deep() -> None:
    assert is_bundle(["SYSTEM_OVERVIEW.md", "RUNBOOKS.md"])
    assert is_bundle(["export-2026/SYSTEM_OVERVIEW.md"])
    assert not is_bundle(["a/b/SYSTEM_OVERVIEW.md"])
