"""Exported markdown shows project text and runs none of it; withheld claims are said up front."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from llmwiki.ingest import RawFile, ingest_files
from reviews.exports import ExportOptions, export_create, export_render, export_verify
from reviews.exports.documents import md
from tests.export_data import NOTES, PII_TEXT, add_claim, build_wiki

KINDS = ("system-profile", "receiver-brief", "startup-packet", "handoff")
HOSTILE = "The status page loads <script>alert(1)</script> & shows <b>Ops</b> banners."
# Renders raw HTML, as many markdown viewers do.
VIEWER = MarkdownIt("commonmark", {"html": True})


def markdown_of(project, kind, audience="internal") -> dict[str, str]:
    rendered = export_render(project=project, options=ExportOptions(kind, audience))
    return {k: v.decode() for k, v in rendered.files.items() if k.endswith(".md")}


@pytest.fixture
def hostile(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    build_wiki(project, alice)
    ingest_files(project=project, files=[RawFile("notes/ui.md", HOSTILE.encode())], actor="system")
    add_claim(project, alice, "SYSTEM_OVERVIEW", HOSTILE, section="<i>Front</i> end")
    project.name = "Tide<img src=x onerror=alert(2)>water & Co"
    project.save()
    return project


def test_md_escapes_html_and_a_backslash_that_would_undo_it():
    assert md("a <b> & c") == r"a \<b\> \& c"
    assert md(r"a \<b>") == r"a \\\<b\>"
    assert md(r"C:\temp and *emphasis*") == r"C:\temp and *emphasis*"
    assert "<b>" not in VIEWER.render(md(r"a \<b>"))


@pytest.mark.parametrize("kind", KINDS)
def test_claims_sections_and_names_are_shown_not_run(hostile, kind):
    files = markdown_of(hostile, kind)
    everything = "\n".join(files.values())
    assert "onerror=alert(2)" in everything  # the project's name is there, as text
    for raw in ("<script", "<img", "<b>", "<i>"):
        assert not re.search(r"(?<!\\)" + re.escape(raw), everything), raw
        for name, text in files.items():
            assert raw not in VIEWER.render(text), (name, raw)
    if kind != "receiver-brief":  # the brief has no system overview
        html = VIEWER.render(everything)
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; shows &lt;b&gt;Ops&lt;/b&gt;" in html
    if kind in ("system-profile", "handoff"):  # the kinds that name sections
        assert "&lt;i&gt;Front&lt;/i&gt; end" in VIEWER.render(everything)


def test_an_escaped_export_is_deterministic_and_verifies(hostile, alice, tmp_path):
    first = export_render(project=hostile, options=ExportOptions("handoff"))
    again = export_render(project=hostile, options=ExportOptions("handoff"))
    assert first.files == again.files
    export_create(project=hostile, options=ExportOptions("handoff"), actor=alice, out=tmp_path)
    assert export_verify(tmp_path).ok


def test_an_export_whose_claims_are_all_withheld_says_so_up_front(project, alice, settings):
    ingest_files(
        project=project,
        files=[RawFile(p, t.encode()) for p, t in NOTES.items()],
        actor="system",
    )
    add_claim(project, alice, "RUNBOOKS", "Deploys drain tw-app-2 from HAProxy before restarting")
    add_claim(project, alice, "DECISION_LOG", "Decision: move the shipment event queue")
    add_claim(project, alice, "SYSTEM_OVERVIEW", PII_TEXT, cls="public")
    note = "_All 3 reviewed claim(s) are withheld from this audience (2 internal-class, 1 pii-flagged)._"
    for kind in KINDS:
        files = markdown_of(project, kind, "public")
        first = files["README.md" if kind == "handoff" else next(iter(files))]
        assert note in first.split("## ")[0], kind  # before the first section
        assert "reviewed yet" not in "\n".join(files.values()), kind
    restricted = markdown_of(project, "receiver-brief", "restricted")["RECEIVER_BRIEF.md"]
    assert "withheld" not in restricted.split("## ")[0]


def test_a_partly_withheld_export_counts_what_it_left_out(project, alice, settings):
    build_wiki(project, alice)
    brief = markdown_of(project, "system-profile", "public")["SYSTEM_PROFILE.md"]
    head = brief.split("## ")[0]
    assert (
        "_4 of 7 reviewed claims are withheld from this audience (3 internal-class, 1 pii-flagged)._"
        in head
    )
    assert "Nothing reviewed yet" not in brief
