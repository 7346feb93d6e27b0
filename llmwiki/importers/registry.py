"""Every importer, declared once: its name, what it reads, how it is recognised, its trust.

Detection (detect.py), the zip reader's allowed suffixes (llmwiki.archives), the ingest
service (which importers read a tree at once, which are reviewed memory) and dreaming's
source trust all read this table, so an importer added here is accepted everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .asciidoc import SUFFIXES as ASCIIDOC_SUFFIXES
from .asciidoc import parse_asciidoc
from .base import EpisodeDraft, TextFile
from .bundle import parse_bundle
from .chatgpt import parse_chatgpt
from .chatgpt import sniff as chatgpt_sniff
from .claude_code import parse_claude_code
from .claude_code import sniff as claude_code_sniff
from .codex import parse_codex
from .codex import sniff as codex_sniff
from .csv_events import SUFFIXES as CSV_SUFFIXES
from .csv_events import parse_csv
from .daily_log import parse_daily_log
from .discord import parse_discord
from .discord import sniff as discord_sniff
from .github import parse_github
from .github import sniff as github_sniff
from .mbox import SUFFIXES as MBOX_SUFFIXES
from .mbox import parse_mbox
from .memory_bank import parse_memory_bank
from .notes import parse_note
from .slack import parse_slack
from .slack import sniff as slack_sniff
from .transcript import parse_transcript
from .vault import parse_vault

Parse = Callable[..., list[EpisodeDraft]]
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
MARKDOWN_SUFFIXES = (".md", ".markdown")
NOTE_SUFFIXES = (*MARKDOWN_SUFFIXES, ".txt")


@dataclass(frozen=True)
class Spec:
    """One importer. `sniff` recognises a JSON export by its first value (the document,
    or the first line of JSONL); `tree` importers read all their files in one call."""

    name: str
    shape: str  # what it reads, in words, for messages and the README
    parse: Parse  # (files, **options) → drafts
    suffixes: tuple[str, ...]
    trust: float  # dreaming's source trust: how far an unreviewed episode is believed
    sniff: Callable[[object], bool] | None = None
    tree: bool = False
    reviewed: bool = False  # its episodes are reviewed memory (an exported bundle)
    options: tuple[str, ...] = ()  # keyword options its parser takes
    by_suffix: bool = False  # chosen by suffix alone once no layout or JSON shape claims it


def _per_file(parse_one: Callable[..., list[EpisodeDraft]]) -> Parse:
    def parse_each(files: list[TextFile], **options: object) -> list[EpisodeDraft]:
        drafts: list[EpisodeDraft] = []
        for file in files:
            drafts.extend(parse_one(file, **options))
        return drafts

    parse_each.__name__ = parse_one.__name__
    parse_each.__doc__ = parse_one.__doc__
    return parse_each


# In detection order: path-claimed importers first, then JSON shapes (specific before the
# generic transcript), then suffixes.
REGISTRY: list[Spec] = [
    Spec("bundle", "starter or handoff bundle (SYSTEM_OVERVIEW.md … MANIFEST.json)",
         parse_bundle, (*MARKDOWN_SUFFIXES, ".json"), 1.0, tree=True, reviewed=True),
    Spec("vault", "llm-wiki-mcp vault (wiki/*.md pages)", parse_vault, MARKDOWN_SUFFIXES, 0.8,
         tree=True),
    Spec("daily_log", "OpenClaw daily log (memory/YYYY-MM-DD.md)", _per_file(parse_daily_log),
         (".md",), 0.6),
    Spec("memory_bank", "Cline/Roo memory bank (memory-bank/*.md)",
         _per_file(parse_memory_bank), MARKDOWN_SUFFIXES, 0.7),
    Spec("slack", "Slack workspace export (channels.json, users.json, <channel>/<day>.json)",
         parse_slack, (".json",), 0.5, sniff=slack_sniff, tree=True),
    Spec("claude_code", "Claude Code session (JSONL with type, uuid, sessionId, message)",
         _per_file(parse_claude_code), (".jsonl", ".json"), 0.5, sniff=claude_code_sniff),
    Spec("codex", "Codex CLI rollout (JSONL of timestamp, type, payload)",
         _per_file(parse_codex), (".jsonl", ".json"), 0.5, sniff=codex_sniff),
    Spec("chatgpt", "ChatGPT export (conversations.json with mapping trees)",
         _per_file(parse_chatgpt), (".json",), 0.5, sniff=chatgpt_sniff),
    Spec("discord", "DiscordChatExporter JSON (guild, channel, messages)",
         _per_file(parse_discord), (".json",), 0.5, sniff=discord_sniff),
    Spec("github", "GitHub issue or PR thread (gh issue view --json title,body,comments…)",
         _per_file(parse_github), (".json",), 0.6, sniff=github_sniff),
    Spec("transcript", "chat transcript (turns with role/speaker and content/text)",
         _per_file(parse_transcript), JSON_SUFFIXES, 0.5),
    Spec("note", "markdown or text note", _per_file(parse_note), NOTE_SUFFIXES, 0.8,
         by_suffix=True),
    Spec("asciidoc", "AsciiDoc note", _per_file(parse_asciidoc), ASCIIDOC_SUFFIXES, 0.8,
         by_suffix=True),
    Spec("mbox", "mbox mailbox", _per_file(parse_mbox), MBOX_SUFFIXES, 0.5, by_suffix=True),
    Spec("csv", "CSV/TSV of events (time, actor, text columns)", _per_file(parse_csv),
         CSV_SUFFIXES, 0.5, options=("columns",), by_suffix=True),
]  # fmt: skip

# Events an agent posts through the API or MCP: no file, but a source of their own, and
# believed as far as a chat transcript is.
EVENT_IMPORTER = "api"
EVENT_TRUST = 0.5

# What the consumers read, derived from REGISTRY. They hold these very objects, which
# `_derive` refills in place, so an importer registered later is seen everywhere.
BY_NAME: dict[str, Spec] = {}
SUFFIXES: set[str] = set()
TREE: set[str] = set()
REVIEWED: set[str] = set()
SOURCE_TRUST: dict[str, float] = {}
SNIFFED: list[Spec] = []  # JSON shapes in the order they are tried; transcript is the fallback
BY_SUFFIX: dict[str, str] = {}  # suffix → the importer chosen by it alone


def _derive() -> None:
    BY_NAME.clear()
    BY_NAME.update((spec.name, spec) for spec in REGISTRY)
    SUFFIXES.clear()
    SUFFIXES.update(s for spec in REGISTRY for s in spec.suffixes)
    TREE.clear()
    TREE.update(spec.name for spec in REGISTRY if spec.tree)
    REVIEWED.clear()
    REVIEWED.update(spec.name for spec in REGISTRY if spec.reviewed)
    SOURCE_TRUST.clear()
    SOURCE_TRUST.update(
        {spec.name: spec.trust for spec in REGISTRY}, **{EVENT_IMPORTER: EVENT_TRUST}
    )
    SNIFFED[:] = [spec for spec in REGISTRY if spec.sniff is not None]
    BY_SUFFIX.clear()
    BY_SUFFIX.update(
        (suffix, spec.name)
        for spec in reversed(REGISTRY)
        if spec.by_suffix
        for suffix in spec.suffixes
    )


_derive()


@contextmanager
def registered(spec: Spec, *, before: str | None = None) -> Iterator[Spec]:
    """Register `spec` for the length of a block (before the importer named `before`, in
    detection order; else last); tests add an importer this way."""
    at = next((i for i, s in enumerate(REGISTRY) if s.name == before), len(REGISTRY))
    REGISTRY.insert(at, spec)
    _derive()
    try:
        yield spec
    finally:
        REGISTRY.remove(spec)
        _derive()
