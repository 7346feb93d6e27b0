"""Importers: raw project material → normalised, classified episode drafts (no Django).

Typical use: `for importer, paths in plan(files): drafts = parse(importer, chosen_files)`,
then the security gate and the ingest service store the drafts as episodes.
"""

from __future__ import annotations

from .base import MEMORY_TYPES, EpisodeDraft, TextFile, normalise
from .bundle import is_bundle, parse_bundle, read_manifest
from .classify import RULES, classify, explain
from .daily_log import is_daily_log, is_dreaming_artifact, parse_daily_log
from .detect import IMPORTERS, SKIPPED, UNSUPPORTED, parse, plan, rejection_reason, route
from .notes import parse_note
from .registry import REGISTRY, Spec
from .transcript import looks_like_transcript, parse_transcript
from .vault import is_vault, parse_vault

__all__ = [
    "IMPORTERS",
    "MEMORY_TYPES",
    "REGISTRY",
    "RULES",
    "SKIPPED",
    "UNSUPPORTED",
    "EpisodeDraft",
    "Spec",
    "TextFile",
    "classify",
    "explain",
    "is_bundle",
    "is_daily_log",
    "is_dreaming_artifact",
    "is_vault",
    "looks_like_transcript",
    "normalise",
    "parse",
    "parse_bundle",
    "parse_daily_log",
    "parse_note",
    "parse_transcript",
    "parse_vault",
    "plan",
    "read_manifest",
    "rejection_reason",
    "route",
]
