"""Label each draft with a memory type using rules a user can read and later correct.

Rules run in the order of RULES; the first that fires decides, and its name plus the words
that triggered it become `memory_type_reason` ("decision language: “…we decided to…”"), so
a reviewer can see why and relabel.

Speed matters (ingest must reach thousands of episodes per second), and Python's `re` is
slow on case-insensitive alternations that start with `\\b`: about 20 ns per character for
each. So every rule has a few plain substring guards, tested first on the lowercased text,
and its precompiled pattern (lowercase, no flags where possible) only runs when a guard hits.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .base import EpisodeDraft

_M = re.MULTILINE

# Chat turns shorter than this carry no lasting knowledge ("ok, thanks!").
_SHORT_CHAT_CHARS = 40

RULES: list[tuple[str, str]] = [
    (
        "importer label",
        "An importer that knows the page type labels it and the label is kept: bundle "
        "RUNBOOKS → procedural-candidate, DECISION_LOG/GLOSSARY/SYSTEM_OVERVIEW → "
        "semantic-candidate; a memory bank's activeContext.md → working.",
    ),
    (
        "handoff marker",
        "'handoff', 'handing over', 'for the next agent/person/shift' → handoff-only.",
    ),
    ("decision entry", "Episodes from a decision log (kind decision) → semantic-candidate."),
    (
        "decision language",
        "'we decided', 'decided to', 'Decision:', 'going with', 'switched/moved from X to Y'"
        " → semantic-candidate.",
    ),
    ("tool output", "Tool calls and their output are a record of what ran → episodic."),
    (
        "procedure",
        "Numbered steps, 'how to', 'To deploy…', 'run `…`', `$ command` lines, shell code "
        "blocks, imperative lines with a command in backticks → procedural-candidate.",
    ),
    (
        "work in progress",
        "TODO, WIP, FIXME, TBD, 'currently', 'in progress', 'right now', 'blocked on' → working.",
    ),
    (
        "architecture statement",
        "'X uses / runs on / is built on / depends on Y', 'Name is a Y' → semantic-candidate.",
    ),
    (
        "term definition",
        "'**Term** — definition' or 'Term: a definition of three words or more' lines → "
        "semantic-candidate.",
    ),
    (
        "short chat turn",
        f"Chat turns under {_SHORT_CHAT_CHARS} characters ('ok, thanks!') → working.",
    ),
    ("no rule matched", "Everything else stays episodic."),
]


class _Rule(NamedTuple):
    name: str
    memory_type: str
    guards: tuple[str, ...]  # substrings the pattern needs, checked first; () → always run
    pattern: re.Pattern[str]
    lower: bool  # guards and pattern work on the lowercased text
    accept: Callable[[str, re.Match[str]], bool] | None  # an extra check on each match


def _word_start(text: str, m: re.Match[str]) -> bool:
    # Patterns keep a literal prefix (fast) instead of a leading \b (slow); the boundary is
    # checked here instead.
    return m.start() == 0 or not text[m.start() - 1].isalnum()


def _sentence_start(text: str, m: re.Match[str]) -> bool:
    # "To deploy, …" opens a sentence or a line; "we need to deploy" is not a procedure.
    head = text[: m.start()].rstrip(" \t")
    head = head[:-1].rstrip(" \t") if head.endswith(("-", "*", "+")) else head
    return not head or head[-1] in ".!?:\n"


_PRONOUNS = frozenset(
    (
        "this", "that", "these", "those", "it", "he", "she", "they", "there", "here", "i",
        "we", "you", "what", "which", "who", "today", "tomorrow", "yesterday", "everything",
        "nothing", "something",
    )
)  # fmt: skip


def _named_subject(text: str, m: re.Match[str]) -> bool:
    """Accept "Whoosh is a …" / "`q2` is the …", not "It is a …" or "the thing is a …"."""
    start = max(text.rfind(c, 0, m.start()) for c in ".!?\n:") + 1
    words = text[start : m.start()].split()
    if words and words[0] in ("-", "*", "+"):
        words = words[1:]
    if words and words[0] in ("The", "Our"):
        words = words[1:]
    if not 1 <= len(words) <= 4 or words[0].lower() in _PRONOUNS:
        return False
    return all(w[0].isupper() or w[0] == "`" for w in words)


def _rule(
    name: str,
    memory_type: str,
    guards: str,
    pattern: str,
    *,
    lower: bool = True,
    flags: int = 0,
    accept: Callable[[str, re.Match[str]], bool] | None = _word_start,
) -> _Rule:
    compiled = re.compile(pattern, flags)
    return _Rule(name, memory_type, tuple(filter(None, guards.split("|"))), compiled, lower, accept)


_HANDOFF = _rule(
    "handoff marker",
    "handoff-only",
    "hand|for the next|for next|note to",
    r"hand-?offs?\b|handing (?:it |this |things )?over\b"
    r"|for (?:the )?next (?:agent|person|shift|session|engineer|developer|dev|owner|"
    r"maintainer|on-?call|reviewer)\b|note to (?:my )?(?:future self|the next)\b",
)
_DECISION = _rule(
    "decision language",
    "semantic-candidate",
    "decid|decision|agreed|chose|opted|settled|go with|going with| from ",
    r"we(?: have|'ve)? (?:decided|agreed|chose|settled on|opted)\b|decided to\b"
    r"|decision\s*:|going with\b|we(?:'ll| will) go with\b"
    r"|(?:switch|mov|migrat)(?:ed|ing) (?:[\w-]+ ){0,3}?from\b[^.\n]{1,80}?\bto\b",
)
# Guards are chosen per rule by measurement: a long guard list costs more than a regex with
# a literal prefix ("to …"), which then runs unguarded.
_TEXT_RULES: tuple[_Rule, ...] = (
    _rule(
        "procedure",
        "procedural-candidate",
        "1. |1) ",
        r"^[ \t]*\d{1,3}[.)][ \t]+\S[^\n]*\n[ \t]*\d{1,3}[.)][ \t]+\S",
        lower=False,
        flags=_M,
        accept=None,
    ),
    _rule("procedure", "procedural-candidate", "how to|step ", r"how to\b|step (?:1|one)\b"),
    _rule(
        "procedure",
        "procedural-candidate",
        "",
        r"to (?:deploy|install|release|restart|roll ?back|set ?up|configure|upgrade|rotate|"
        r"reset|rebuild|bootstrap|provision|reproduce|recover|migrate|run)\b",
        accept=_sentence_start,
    ),
    _rule(
        "procedure",
        "procedural-candidate",
        "`",
        r"(?i:run|execute|invoke)[ \t]+`[^`\n]+`"
        r"|^[ \t]*(?:[-*+][ \t]+|\d{1,3}[.)][ \t]+)?(?:Run|Install|Deploy|Restart|Execute|"
        r"Open|Set|Configure|Create|Add|Update|Check|Ensure|Verify|Export|Enable|Disable|"
        r"Rotate|Restore|Start|Stop|Use|Call)\b[^\n`]{0,80}`[^`\n]+`",
        lower=False,
        flags=_M,
        accept=None,
    ),
    _rule(
        "procedure",
        "procedural-candidate",
        "$ ",
        r"^[ \t]*(?:[-*+][ \t]+)?\$[ \t]+\S",
        lower=False,
        flags=_M,
        accept=None,
    ),
    _rule(
        "procedure",
        "procedural-candidate",
        "```|~~~",
        r"^[ \t]*(?:```|~~~)[ \t]*(?:bash|sh|shell|zsh|console|powershell|cmd)\b",
        flags=_M,
        accept=None,
    ),
    _rule(
        "work in progress",
        "working",
        "TODO|WIP|FIXME|TBD",
        r"(?:TODO|WIP|FIXME|TBD)\b",
        lower=False,
    ),
    _rule(
        "work in progress",
        "working",
        "currently|progress|right now|for now|moment|next up|blocked|working on|still need",
        r"(?:currently|in progress|right now|for now|at the moment|next up|blocked (?:on|by)|"
        r"working on|still needs? to)\b",
    ),
    _rule(
        "architecture statement",
        "semantic-candidate",
        "uses|built|run|backed|depends|deployed|hosted|written|talks|connects|served|"
        "source of truth|consists|responsible|lives in",
        r"(?:uses|is built (?:on|with)|runs? on|is backed by|depends on|is deployed (?:on|to)|"
        r"is hosted (?:on|in)|is written in|talks to|connects to|is served by|"
        r"is the source of truth|consists of|is responsible for|lives in)\b",
    ),
    _rule(
        "architecture statement",
        "semantic-candidate",
        " is | are ",
        r" (?:is|are) (?:an?|the|our)\b",
        lower=False,
        accept=_named_subject,
    ),
    _rule(
        "term definition",
        "semantic-candidate",
        ":|—|–",
        r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*[^*\n]{1,60}\*\*[ \t]*[:—–-][ \t]*\S"
        r"|(?!(?:Note|Notes|Update|Status|Q|A|Edit|PS|Re|Fwd|Result|Output|Error|Warning|"
        r"Done|Next|Question|Answer|Summary|Context|Decision|TODO|WIP)\b)"
        r"[A-Z][\w .()/-]{0,40}?[ \t]*(?::|—|–)[ \t]+\S+(?:[ \t]+\S+){2})",
        lower=False,
        flags=_M,
        accept=None,
    ),
)


def _quote(text: str, m: re.Match[str]) -> str:
    """Quote the matched words with a little of their line, for a reason a human can check."""
    start = max(text.rfind("\n", 0, m.start()) + 1, m.start() - 25)
    end = text.find("\n", m.end())
    end = min(len(text) if end < 0 else end, m.end() + 25, start + 70)
    excerpt = " ".join(text[start:end].split())
    prefix = "…" if start > 0 and text[start - 1] != "\n" else ""
    suffix = "…" if end < len(text) and text[end] != "\n" else ""
    return f"“{prefix}{excerpt}{suffix}”"


def _fire(rule: _Rule, content: str, lower: str) -> str | None:
    """Return the reason if `rule` fires on the text, else None."""
    text = lower if rule.lower else content
    if rule.guards:
        for guard in rule.guards:
            if guard in text:
                break
        else:
            return None
    for m in rule.pattern.finditer(text):
        if rule.accept is None or rule.accept(text, m):
            # Quote the original casing when lowercasing kept the offsets (almost always).
            shown = content if len(content) == len(text) else text
            return f"{rule.name}: {_quote(shown, m)}"
    return None


def explain(draft: EpisodeDraft) -> tuple[str, str]:
    """Return (memory_type, reason) for `draft` without changing it."""
    if draft.memory_type_reason:
        return draft.memory_type, draft.memory_type_reason
    content = draft.content
    lower = content.lower()
    reason = _fire(_HANDOFF, content, lower)
    if reason is not None:
        return "handoff-only", reason
    if draft.kind == "decision":
        return "semantic-candidate", "decision entry: from a decision log"
    reason = _fire(_DECISION, content, lower)
    if reason is not None:
        return "semantic-candidate", reason
    if draft.kind == "tool_call":
        # A command that ran is evidence of what happened, not a procedure to follow.
        return "episodic", "tool output: a record of what ran"
    # _fire inlined: this loop runs for every episode that no earlier rule claimed.
    for rule in _TEXT_RULES:
        text = lower if rule.lower else content
        if rule.guards:
            for guard in rule.guards:
                if guard in text:
                    break
            else:
                continue
        for m in rule.pattern.finditer(text):
            if rule.accept is None or rule.accept(text, m):
                shown = content if len(content) == len(text) else text
                return rule.memory_type, f"{rule.name}: {_quote(shown, m)}"
    if draft.kind == "chat_turn" and len(content) < _SHORT_CHAT_CHARS:
        return "working", f"short chat turn: {len(content)} characters"
    return "episodic", "no rule matched: kept as an episode"


def classify(draft: EpisodeDraft) -> EpisodeDraft:
    """Return a copy of `draft` labelled with a memory type and the rule that chose it.

    A label an importer already set (with its reason) is kept: the importer knew more.
    """
    if draft.memory_type_reason:
        return draft
    memory_type, reason = explain(draft)
    return draft.with_memory_type(memory_type, reason)
