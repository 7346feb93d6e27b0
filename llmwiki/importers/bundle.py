"""Starter bundles: a folder or zip of SYSTEM_OVERVIEW.md … MANIFEST.json."""

from __future__ import annotations

import hashlib
import posixpath
import re

from llmwiki.errors import InputError
from llmwiki.vocabulary import PAGE_KEYS

from . import safejson
from .base import (
    EpisodeDraft,
    TextFile,
    basename,
    clean_path,
    front_matter_date,
    front_matter_tags,
    is_episode_text,
    normalise,
    parse_front_matter,
    split_lines,
)
from .notes import Block, block_pieces, parse_markdown
from .vault import page_stem, parse_page

MANIFEST = "MANIFEST.json"
# A handoff bundle (reviews.exports) also carries its CHANGELOG and the evidence ledger that
# maps its lines to claims; the ledger is checked against the manifest but never read as
# content (it holds ids and hashes, not knowledge).
LEDGER = "EVIDENCE_LEDGER.json"
_METADATA = frozenset({MANIFEST.upper(), LEDGER.upper()})
# The MANIFEST "format" of a handoff bundle exported by llmwiki (reviews.exports.pack).
EXPORT_FORMAT = "llmwiki-export/1"
EXPORTED_REASON = "exported llmwiki bundle: reviewed memory once a maintainer accepts it"
BUNDLE_FILES = frozenset(
    [f"{page}.md" for page in PAGE_KEYS]
    + ["CHANGELOG.md", "EPISODIC_CONTEXT.md"]
    + [MANIFEST, LEDGER]
)

# Bundle pages are reviewed memory exported by a system like ours, so the page already says
# what kind of knowledge a section is; classify() keeps these labels and shows the reason.
PAGE_MEMORY: dict[str, tuple[str, str]] = {
    "SYSTEM_OVERVIEW": ("semantic-candidate", "bundle page SYSTEM_OVERVIEW (architecture)"),
    "DECISION_LOG": ("semantic-candidate", "bundle page DECISION_LOG (decision)"),
    "RUNBOOKS": ("procedural-candidate", "bundle page RUNBOOKS (procedure)"),
    "GOVERNANCE": ("semantic-candidate", "bundle page GOVERNANCE (policy)"),
    "TRUST_MODEL": ("semantic-candidate", "bundle page TRUST_MODEL (policy)"),
    "AGENT_INSTRUCTIONS": ("procedural-candidate", "bundle page AGENT_INSTRUCTIONS (procedure)"),
    "GLOSSARY": ("semantic-candidate", "bundle page GLOSSARY (term definition)"),
    "CHANGELOG": ("episodic", "bundle page CHANGELOG (history)"),
    "EPISODIC_CONTEXT": ("episodic", "bundle page EPISODIC_CONTEXT (not reviewed)"),
}

_KEY_CHARS = re.compile(r"[^A-Z0-9]+")
_SHA256 = re.compile(r"(?:sha256[:-])?([0-9a-fA-F]{64})$")
# `**Term** — definition`, `**Term:** definition`, `Term: definition`, `- term: def`.
_TERM = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:"
    r"(?:\*\*(?P<bold>[^*\n]{1,80}?):?\*\*|__(?P<under>[^_\n]{1,80}?):?__)[ \t]*(?:[:—–-][ \t]*)?"
    r"|(?P<plain>[^\s:*#>|`][^:\n]{0,60}?)[ \t]*[:—–][ \t]*"
    r")(?P<definition>\S.*)$"
)


def page_key(path: str) -> str:
    """Return the page key of a bundle file: `runbooks.md` → `RUNBOOKS`."""
    return _KEY_CHARS.sub("_", page_stem(path).upper()).strip("_") or "PAGE"


def is_bundle_root_file(path: str) -> bool:
    """Return whether `path` names SYSTEM_OVERVIEW.md at the root or one folder deep."""
    parts = clean_path(path).split("/")
    return len(parts) <= 2 and parts[-1].upper() == "SYSTEM_OVERVIEW.MD"


def is_bundle(paths: list[str]) -> bool:
    """Return whether the tree holds a starter bundle (SYSTEM_OVERVIEW.md at root or one deep)."""
    return any(is_bundle_root_file(p) for p in paths)


def read_manifest(files: list[TextFile]) -> dict | None:
    """Validate MANIFEST.json and the sha256 of every listed file present; return it.

    Raises InputError naming the manifest when it is not a JSON object, or naming the file
    whose content does not match its listed sha256. Hashes are over the UTF-8 text; a file
    whose bytes had CRLF endings or a byte-order mark (undone by decoding) also verifies.
    """
    manifest = next((f for f in files if basename(f.path).upper() == MANIFEST.upper()), None)
    if manifest is None:
        return None
    data = safejson.loads(manifest.path, manifest.text)
    if not isinstance(data, dict):
        raise InputError(manifest.path, "MANIFEST.json must hold a JSON object")
    root = posixpath.dirname(clean_path(manifest.path))
    by_path = {clean_path(f.path): f for f in files}
    for listed, expected in _manifest_hashes(data.get("files")):
        target = posixpath.normpath(posixpath.join(root, listed)) if root else listed
        file = by_path.get(clean_path(target))
        if file is None:
            continue  # not part of this import (or handled by another importer)
        actual = hashlib.sha256(file.text.encode("utf-8")).hexdigest()
        if actual != expected and expected not in _decoded_variants(file.text):
            raise InputError(
                file.path,
                f"sha256 mismatch with {MANIFEST}: listed {expected[:12]}…, "
                f"content is {actual[:12]}…",
            )
    return data


def _decoded_variants(text: str) -> set[str]:
    """Return sha256s of the byte forms that decode to `text` once CRLF and a BOM are undone.

    The ingest service decodes uploads to LF text without a byte-order mark, while a
    manifest hashes the bytes as written; a file saved with CRLF endings must still verify.
    Only computed after a first mismatch, so the common case hashes once.
    """
    crlf = text.replace("\n", "\r\n")
    forms = (crlf, "\ufeff" + text, "\ufeff" + crlf)
    return {hashlib.sha256(form.encode("utf-8")).hexdigest() for form in forms}


def _manifest_hashes(entries: object) -> list[tuple[str, str]]:
    """Return (path, lowercase sha256) pairs from the shapes a manifest may use."""
    pairs: list[tuple[str, str]] = []
    if isinstance(entries, dict):
        items = [
            (path, value.get("sha256") if isinstance(value, dict) else value)
            for path, value in entries.items()
        ]
    elif isinstance(entries, list):
        items = [
            (e.get("path") or e.get("name") or e.get("file"), e.get("sha256") or e.get("hash"))
            for e in entries
            if isinstance(e, dict)
        ]
    else:
        return pairs
    for path, digest in items:
        if isinstance(path, str) and isinstance(digest, str):
            m = _SHA256.match(digest.strip())
            if m is not None:
                pairs.append((path, m.group(1).lower()))
    return pairs


def _glossary(file: TextFile, tags: tuple[str, ...]) -> list[EpisodeDraft]:
    """Return one episode per glossary term (a term line, or a section titled by the term)."""
    memory_type, reason = PAGE_MEMORY["GLOSSARY"]
    lines = split_lines(file.text)
    fields, body = parse_front_matter(lines)
    tags = front_matter_tags(fields) + tags
    occurred_at = front_matter_date(fields, ("updated", "modified", "date", "created"))
    drafts: list[EpisodeDraft] = []

    def emit(term: str, text: str, first: int, last: int, section: str) -> None:
        content = normalise(text)
        if is_episode_text(content):
            drafts.append(
                EpisodeDraft(
                    content=content,
                    kind="page_section",
                    actor="system",
                    locator={"path": file.path, "section": section, "lines": [first, last]},
                    occurred_at=occurred_at,
                    memory_type=memory_type,
                    memory_type_reason=reason,
                    tags=(*tags, f"term:{term}") if term else tags,
                )
            )

    for section in parse_markdown(lines, body):
        label = section.label
        found = False
        loose: list[Block] = []  # blocks (or their heads) that define no term
        for block in section.blocks:
            term, start, buf, head = "", 0, [], []
            for offset, line in enumerate(block.lines):
                m = None if block.fences or line[:1].isspace() else _TERM.match(line)
                if m is not None:
                    if term:
                        emit(term, "\n".join(buf), start, block.start + offset - 1, label)
                    term = (m.group("bold") or m.group("under") or m.group("plain")).strip()
                    start, buf, found = block.start + offset, [line], True
                elif term:
                    buf.append(line)  # the definition goes on
                else:
                    head.append(line)
            if len(head) == len(block.lines):
                loose.append(block)
            elif head:
                loose.append(Block(block.kind, block.start, head))
            if term:
                emit(term, "\n".join(buf), start, block.end, label)
        if loose and section.title and not found:
            # `## Term` followed by prose: the section is the definition of its title.
            definition = "\n\n".join(block.text for block in loose)
            text = f"{lines[section.line - 1]}\n\n{definition}"
            emit(section.title, text, section.line, loose[-1].end, label)
        else:
            for block in loose:
                for text, first, last in block_pieces(block):
                    emit("", text, first, last, label)
    return drafts


def parse_bundle(files: list[TextFile]) -> list[EpisodeDraft]:
    """Parse bundle pages into page sections; verify MANIFEST.json hashes first."""
    folders: dict[str, list[TextFile]] = {}
    for file in files:
        folders.setdefault(posixpath.dirname(clean_path(file.path)), []).append(file)
    exported = set()
    for folder, members in folders.items():
        # Every bundle folder is checked before anything is parsed: a tampered bundle yields
        # no drafts at all, never a partial import.
        manifest = read_manifest(members)
        if manifest is not None and manifest.get("format") == EXPORT_FORMAT:
            exported.add(folder)
    drafts: list[EpisodeDraft] = []
    for file in files:
        if basename(file.path).upper() in _METADATA:
            continue  # recorded as a source by the caller, never emitted as content
        key = page_key(file.path)
        tags = (f"page:{key}",)
        if key == "GLOSSARY":
            parsed = _glossary(file, tags)
        else:
            parsed = parse_page(
                file,
                extra_tags=tags,
                memory=PAGE_MEMORY.get(key),
                decisions=key == "DECISION_LOG" or None,
            )
        if posixpath.dirname(clean_path(file.path)) in exported:
            # Another llmwiki's reviewed memory: it becomes ours when a maintainer accepts
            # the bundle as a baseline, not by being dreamed over again.
            parsed = [d.with_memory_type("handoff-only", EXPORTED_REASON) for d in parsed]
        drafts.extend(parsed)
    return drafts
