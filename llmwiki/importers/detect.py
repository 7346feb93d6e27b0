"""Which importer takes which file (docs/ARCHITECTURE.md §7), and the one parse entry point."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from llmwiki.errors import InputError

from . import safejson
from .base import EpisodeDraft, TextFile, basename, clean_path
from .bundle import BUNDLE_FILES, is_bundle_root_file, parse_bundle
from .classify import classify
from .daily_log import is_daily_log, is_dreaming_artifact, parse_daily_log
from .notes import parse_note
from .transcript import looks_like_transcript, parse_transcript
from .vault import is_vault_path, parse_vault

NOTE_SUFFIXES = (".md", ".markdown", ".txt")
TRANSCRIPT_SUFFIXES = (".jsonl", ".ndjson", ".json")
# Pseudo-importers in a plan: the caller reports these files, it never parses them.
SKIPPED = "skipped"
UNSUPPORTED = "unsupported"
_ORDER = ("bundle", "vault", "daily_log", "transcript", "note", SKIPPED, UNSUPPORTED)
_BUNDLE_NAMES = frozenset(name.upper() for name in BUNDLE_FILES)

Importer = Callable[[list[TextFile]], list[EpisodeDraft]]


def _per_file(parse_one: Callable[[TextFile], list[EpisodeDraft]]) -> Importer:
    def parse_each(files: list[TextFile]) -> list[EpisodeDraft]:
        drafts: list[EpisodeDraft] = []
        for file in files:
            drafts.extend(parse_one(file))
        return drafts

    parse_each.__name__ = parse_one.__name__
    parse_each.__doc__ = parse_one.__doc__
    return parse_each


IMPORTERS: dict[str, Importer] = {
    "bundle": parse_bundle,
    "daily_log": _per_file(parse_daily_log),
    "note": _per_file(parse_note),
    "transcript": _per_file(parse_transcript),
    "vault": parse_vault,
}


def _is_hidden(path: str) -> bool:
    # Editor and VCS state (.git/, .obsidian/) and zip droppings are not project material;
    # sniffing them as transcripts would reject a whole directory over a settings file.
    return any(
        (part.startswith(".") and part not in (".", "..")) or part == "__MACOSX"
        for part in path.split("/")
    )


def rejection_reason(path: str) -> str:
    """Return why a file a plan marks skipped or unsupported is not imported."""
    cleaned = clean_path(path)
    if is_dreaming_artifact(cleaned):
        return "dreaming artifact: dreaming's own output is never ingested"
    if _is_hidden(cleaned):
        return "hidden file or folder: not project material"
    if cleaned.endswith("/") or not cleaned:
        return "a folder entry, not a file"
    suffix = posixpath.splitext(cleaned)[1].lower() or "(none)"
    accepted = ", ".join(NOTE_SUFFIXES + TRANSCRIPT_SUFFIXES)
    return f"unsupported file type {suffix}: importers take {accepted}"


def plan(files: list[TextFile] | list[str]) -> list[tuple[str, list[str]]]:
    """Group the files of a walked directory (or zip) by the importer that takes them.

    Returns (importer, paths) pairs, one per bundle folder and one per other importer, in a
    fixed order; `skipped` (dreaming artifacts, hidden files) and `unsupported` list files
    the caller reports with `rejection_reason`. Given TextFiles, `.json`/`.jsonl` files are
    sniffed, and one that is not a transcript raises InputError; given bare paths they are
    assumed to be transcripts.
    """
    texts = {f.path: f.text for f in files if isinstance(f, TextFile)}
    paths = [f.path if isinstance(f, TextFile) else f for f in files]
    cleaned = {path: clean_path(path) for path in paths}
    bundle_roots = sorted(
        {
            posixpath.dirname(c)
            for c in cleaned.values()
            if is_bundle_root_file(c) and not is_dreaming_artifact(c) and not _is_hidden(c)
        }
    )
    bundles: dict[str, list[str]] = {root: [] for root in bundle_roots}
    groups: dict[str, list[str]] = {name: [] for name in _ORDER}
    for path in paths:
        c = cleaned[path]
        lower = c.lower()
        if is_dreaming_artifact(c) or _is_hidden(c) or c.endswith("/") or not c:
            groups[SKIPPED].append(path)
        elif posixpath.dirname(c) in bundles and basename(c).upper() in _BUNDLE_NAMES:
            bundles[posixpath.dirname(c)].append(path)
        elif is_vault_path(c):
            groups["vault"].append(path)
        elif is_daily_log(c):
            groups["daily_log"].append(path)
        elif lower.endswith(TRANSCRIPT_SUFFIXES):
            if path in texts:
                try:
                    safejson.check_depth(texts[path])
                except safejson.TooDeep as exc:
                    raise InputError(path, str(exc)) from None
            if path in texts and not looks_like_transcript(path, texts[path]):
                raise InputError(
                    path,
                    "not a transcript: the first line or element is not an object with a "
                    "role/speaker and a content/text key",
                )
            groups["transcript"].append(path)
        elif lower.endswith(NOTE_SUFFIXES):
            groups["note"].append(path)
        else:
            groups[UNSUPPORTED].append(path)
    result = [("bundle", members) for members in bundles.values() if members]
    result.extend((name, groups[name]) for name in _ORDER if name != "bundle" and groups[name])
    return result


def parse(importer: str, files: list[TextFile]) -> list[EpisodeDraft]:
    """Run `importer` on `files` (any importer on any files) and classify every draft."""
    name = importer.strip().lower().replace("-", "_")
    if name == "notes":
        name = "note"
    parse_files = IMPORTERS.get(name)
    if parse_files is None:
        valid = ", ".join(sorted(IMPORTERS))
        raise InputError(importer, f"unknown importer; valid importers: {valid}")
    return [classify(draft) for draft in parse_files(files)]
