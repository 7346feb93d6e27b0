"""llm-wiki-mcp vaults (`wiki/*.md` pages with front matter), and page parsing bundles share."""

from __future__ import annotations

import re

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    basename,
    clean_path,
    front_matter_date,
    front_matter_str,
    front_matter_tags,
    is_episode_text,
    normalise,
    parse_front_matter,
    split_lines,
)
from .notes import block_pieces, is_decision_path, parse_markdown, section_pieces

_PAGE_SUFFIXES = (".md", ".markdown")
_STEM_SEPARATORS = re.compile(r"[-_]+")


def page_stem(path: str) -> str:
    """Return the file name without its extension."""
    name = basename(path)
    return name.rsplit(".", 1)[0] if "." in name else name


def is_decision_page(path: str, title: str = "") -> bool:
    """Return whether a page (by title or file name) is a decision log."""
    names = (title.strip(), _STEM_SEPARATORS.sub(" ", page_stem(path)).strip())
    return is_decision_path(tuple(n for n in names if n))


def parse_page(
    file: TextFile,
    *,
    kind: str = "page_section",
    actor: str = "system",
    extra_tags: tuple[str, ...] = (),
    memory: tuple[str, str] | None = None,
    decisions: bool | None = None,
) -> list[EpisodeDraft]:
    """Split a wiki page into one episode per heading section (heading line included).

    A decision-log page (or `decisions=True`) yields kind "decision": a section that is
    itself a decision stays whole, while the top of the page and sections titled like a
    log ("Decisions", "Decision log") yield one decision per bullet or paragraph.
    `memory` is an importer-chosen (memory_type, reason) that classify() then keeps.
    """
    lines = split_lines(file.text)
    fields, body = parse_front_matter(lines)
    tags = front_matter_tags(fields) + tuple(t for t in extra_tags if t)
    occurred_at = front_matter_date(fields, ("updated", "modified", "date", "created"))
    author = front_matter_str(fields, "author") or front_matter_str(fields, "owner")
    if author:
        actor = actor_id("user", author)
    sources = fields.get("sources", fields.get("source"))
    if isinstance(sources, str):
        sources = [sources] if sources else []
    title = front_matter_str(fields, "title")
    sections = parse_markdown(lines, body)
    if decisions is None:
        h1 = next((s.title for s in sections if s.level == 1 and s.title), "")
        decisions = is_decision_page(file.path, title or h1)
    memory_type, reason = memory if memory is not None else ("episodic", "")

    drafts: list[EpisodeDraft] = []
    for section in sections:
        section_kind = kind
        decision_here = decisions or is_decision_path(section.path)
        if decision_here:
            section_kind = "decision"
        locator_base = {"path": file.path, "section": section.label or title}
        if sources:
            locator_base["sources"] = list(sources)
        if decision_here and (section.level <= 1 or is_decision_path((section.title,))):
            # A log of decisions: every bullet or paragraph is its own decision.
            pieces = [p for block in section.blocks for p in block_pieces(block)]
        else:
            pieces = section_pieces(lines, section)
        for text, first, last in pieces:
            content = normalise(text)
            if not is_episode_text(content):
                continue
            drafts.append(
                EpisodeDraft(
                    content=content,
                    kind=section_kind,
                    actor=actor,
                    locator={**locator_base, "lines": [first, last]},
                    occurred_at=occurred_at,
                    memory_type=memory_type,
                    memory_type_reason=reason,
                    tags=tags,
                )
            )
    return drafts


def is_vault_path(path: str) -> bool:
    """Return whether `path` is a page of an llm-wiki-mcp vault (`[top/]wiki/**.md`)."""
    parts = clean_path(path).split("/")
    if not parts[-1].lower().endswith(_PAGE_SUFFIXES):
        return False
    return (len(parts) >= 2 and parts[0] == "wiki") or (len(parts) >= 3 and parts[1] == "wiki")


def is_vault(paths: list[str]) -> bool:
    """Return whether the tree holds a `wiki/` folder with markdown pages (at root or one deep)."""
    return any(is_vault_path(p) for p in paths)


def parse_vault(files: list[TextFile]) -> list[EpisodeDraft]:
    """Parse every given file as a vault page; page sections become episodes."""
    drafts: list[EpisodeDraft] = []
    for file in files:
        drafts.extend(parse_page(file))
    return drafts
