"""Which importer takes which file (docs/ARCHITECTURE.md §7), and the one parse entry point.

Importers are declared in registry.py; this module only routes files to them: by path
for the importers that own a layout (bundles, vaults, daily logs, memory banks, Slack
exports), by content for JSON (each export shape is sniffed), and by suffix for the rest.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import NamedTuple

from llmwiki.errors import InputError

from . import safejson, slack
from .base import EpisodeDraft, TextFile, basename, clean_path
from .bundle import BUNDLE_FILES, is_bundle_root_file
from .classify import classify
from .daily_log import is_daily_log, is_dreaming_artifact
from .jsonfiles import first_value
from .memory_bank import is_memory_bank_path
from .registry import BY_NAME, BY_SUFFIX, JSON_SUFFIXES, REGISTRY, SNIFFED, SUFFIXES
from .transcript import looks_like_transcript
from .vault import is_vault_path

# Pseudo-importers in a plan: the caller reports these files, it never parses them.
SKIPPED = "skipped"
UNSUPPORTED = "unsupported"

_BUNDLE_NAMES = frozenset(name.upper() for name in BUNDLE_FILES)


class _Importers(Mapping):
    """Importer name → its parser, as the registry has it now."""

    def __getitem__(self, name: str):
        return BY_NAME[name].parse

    def __iter__(self):
        return iter(BY_NAME)

    def __len__(self) -> int:
        return len(BY_NAME)


IMPORTERS = _Importers()


class Routing(NamedTuple):
    """(importer, paths) groups in a fixed order, and the files refused by content."""

    groups: list[tuple[str, list[str]]]
    refused: dict[str, str]  # path → why


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
    accepted = ", ".join(sorted(SUFFIXES))
    return f"unsupported file type {suffix}: importers take {accepted}"


def _expected() -> str:
    shapes = [spec.shape for spec in SNIFFED] + [BY_NAME["transcript"].shape]
    return "; ".join(shapes)


def json_importer(path: str, text: str) -> tuple[str | None, str]:
    """(importer, '') for a JSON or JSONL file by its content, or (None, why not)."""
    try:
        value = first_value(text)
    except safejson.TooDeep as exc:
        return None, str(exc)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON (line {exc.lineno}: {exc.msg} at column {exc.colno})"
    except ValueError:
        return None, "no JSON value in the file"
    matches = [spec for spec in SNIFFED if spec.sniff(value)]
    if len(matches) > 1:
        shapes = " or ".join(f"{spec.name} ({spec.shape})" for spec in matches)
        return None, f"ambiguous JSON: it could be {shapes}; choose one with --importer"
    if matches:
        return matches[0].name, ""
    if looks_like_transcript(path, text):
        return "transcript", ""
    return None, f"not a transcript nor any JSON export we read: expected one of {_expected()}"


def _slack_roots(cleaned: dict[str, str], texts: dict[str, str]) -> list[str]:
    roots = set()
    for path, c in cleaned.items():
        if not slack.is_root_file(c) or is_dreaming_artifact(c) or _is_hidden(c):
            continue
        if path in texts:
            try:
                if not isinstance(first_value(texts[path]), list):
                    continue  # a channels.json of some other tool
            except ValueError:
                continue
        roots.add(posixpath.dirname(c))
    return sorted(roots)


def route(files: list[TextFile] | list[str]) -> Routing:
    """Group the files of a walked directory (or zip) by the importer that takes them.

    One group per bundle folder and per Slack export, one per other importer, in
    registry order; `skipped` (dreaming artifacts, hidden files) and `unsupported` list
    files the caller reports with `rejection_reason`. Given TextFiles, JSON files are
    sniffed and one of no known shape (or of several) is refused, with the reason;
    given bare paths they are assumed to be transcripts.
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
    slacks: dict[str, list[str]] = {root: [] for root in _slack_roots(cleaned, texts)}
    order = (*(spec.name for spec in REGISTRY), SKIPPED, UNSUPPORTED)
    groups: dict[str, list[str]] = {name: [] for name in order}
    refused: dict[str, str] = {}
    for path in paths:
        c = cleaned[path]
        lower = c.lower()
        slack_root = next((root for root in slacks if slack.belongs(root, c)), None)
        if is_dreaming_artifact(c) or _is_hidden(c) or c.endswith("/") or not c:
            groups[SKIPPED].append(path)
        elif posixpath.dirname(c) in bundles and basename(c).upper() in _BUNDLE_NAMES:
            bundles[posixpath.dirname(c)].append(path)
        elif slack_root is not None:
            slacks[slack_root].append(path)
        elif is_vault_path(c):
            groups["vault"].append(path)
        elif is_memory_bank_path(c):
            groups["memory_bank"].append(path)
        elif is_daily_log(c):
            groups["daily_log"].append(path)
        elif lower.endswith(JSON_SUFFIXES):
            if path not in texts:
                groups["transcript"].append(path)
                continue
            name, reason = json_importer(path, texts[path])
            if name is None:
                refused[path] = reason
            else:
                groups[name].append(path)
        elif posixpath.splitext(lower)[1] in BY_SUFFIX:
            groups[BY_SUFFIX[posixpath.splitext(lower)[1]]].append(path)
        else:
            groups[UNSUPPORTED].append(path)
    result = [("bundle", members) for members in bundles.values() if members]
    result.extend(("slack", members) for members in slacks.values() if members)
    result.extend((name, groups[name]) for name in order if name != "bundle" and groups[name])
    return Routing(result, refused)


def plan(files: list[TextFile] | list[str]) -> list[tuple[str, list[str]]]:
    """route(), raising InputError for the first file refused by its content."""
    routing = route(files)
    for path, reason in routing.refused.items():
        raise InputError(path, reason)
    return routing.groups


def canonical(importer: str) -> str:
    """The registry name for what a user typed ("daily-log", "notes", "Claude-Code")."""
    name = importer.strip().lower().replace("-", "_")
    return "note" if name == "notes" else name


def parse(importer: str, files: list[TextFile], **options: object) -> list[EpisodeDraft]:
    """Run `importer` on `files` (any importer on any files) and classify every draft.

    `options` (such as the CSV `columns`) reach the importers that declare them.
    """
    spec = BY_NAME.get(canonical(importer))
    if spec is None:
        valid = ", ".join(sorted(BY_NAME))
        raise InputError(importer, f"unknown importer; valid importers: {valid}")
    given = {k: v for k, v in options.items() if k in spec.options and v is not None}
    return [classify(draft) for draft in spec.parse(files, **given)]
