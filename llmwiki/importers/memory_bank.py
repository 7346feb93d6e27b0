"""Cline and Roo Code memory banks: the markdown files of a `memory-bank/` folder.

The file roles are those the Cline documentation lists for its Memory Bank
(docs.cline.bot/best-practices/memory-bank: projectbrief.md, productContext.md,
activeContext.md, systemPatterns.md, techContext.md, progress.md) and the decision log
that Roo Code's memory bank adds (GreatScottyMac/roo-code-memory-bank: decisionLog.md).
Each file is read as a markdown note; its role sets the kind of its episodes: progress
is a log, the decision log holds decisions, the active context is work in progress.
A file imported again later becomes a new version of the same source, so the bank's
history is kept.
"""

from __future__ import annotations

from dataclasses import replace

from .base import EpisodeDraft, TextFile, basename, clean_path
from .notes import parse_note

FOLDER = "memory-bank"
# role → (kind, memory label or None to let the classify rules decide)
ROLES: dict[str, tuple[str, tuple[str, str] | None]] = {
    "projectbrief": ("note", None),
    "productcontext": ("note", None),
    "activecontext": (
        "note",
        ("working", "importer label: memory-bank activeContext (work in progress)"),
    ),
    "systempatterns": ("note", None),
    "techcontext": ("note", None),
    "progress": ("log_entry", None),
    "decisionlog": ("decision", None),
}


def is_memory_bank_path(path: str) -> bool:
    """A markdown file inside a `memory-bank/` folder."""
    parts = clean_path(path).lower().split("/")
    return FOLDER in parts[:-1] and parts[-1].endswith((".md", ".markdown"))


def role_of(path: str) -> str:
    stem = basename(path).rsplit(".", 1)[0]
    return stem if stem.lower() in ROLES else "context"


def parse_memory_bank(file: TextFile) -> list[EpisodeDraft]:
    """A memory-bank file as a note whose episodes take the kind of the file's role."""
    role = role_of(file.path)
    kind, memory = ROLES.get(role.lower(), ("note", None))
    drafts = []
    for draft in parse_note(file):
        # A "Decision:" bullet stays a decision whatever file it is in.
        new_kind = draft.kind if draft.kind == "decision" else kind
        draft = replace(draft, kind=new_kind, tags=(*draft.tags, f"memory-bank:{role}"))
        if memory is not None:
            draft = draft.with_memory_type(*memory)
        drafts.append(draft)
    return drafts
