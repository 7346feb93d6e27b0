"""The app's fixed vocabularies, declared once: page keys, episode kinds, export kinds.

Plain data without Django, so the sweep engine and the importers read the same lists as
the models (whose `TextChoices` are built from them), the forms, the API schema and the
command line. Adding an entry here is the whole change for every place that lists them;
`tests/test_vocabulary.py` checks each entry reaches each of those places.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

# --- Wiki pages -----------------------------------------------------------------------------


class PageEntry(NamedTuple):
    key: str
    title: str
    standard: bool  # every project has it; a sweep routes candidates to it


PAGES: tuple[PageEntry, ...] = (
    PageEntry("SYSTEM_OVERVIEW", "System overview", True),
    PageEntry("DECISION_LOG", "Decision log", True),
    PageEntry("OPEN_QUESTIONS", "Open questions", True),
    PageEntry("RUNBOOKS", "Runbooks", True),
    PageEntry("GOVERNANCE", "Governance", True),
    PageEntry("GLOSSARY", "Glossary", True),
    PageEntry("AGENT_INSTRUCTIONS", "Agent instructions", False),
    PageEntry("TRUST_MODEL", "Trust model", False),
    PageEntry("README", "Readme", False),
    PageEntry("INDEX", "Index", False),
)
PAGE_KEYS: tuple[str, ...] = tuple(p.key for p in PAGES)
PAGE_TITLES: dict[str, str] = {p.key: p.title for p in PAGES}
# The pages a project is created with, in the order the page filter lists them.
STANDARD_PAGES: tuple[str, ...] = tuple(p.key for p in PAGES if p.standard)

# Words of a heading that say which page the text under it belongs on: a writer who puts a
# sentence under "Glossary" or in a runbook has already said what kind of fact it is.
# Lower case; a trailing "*" takes any ending ("polic*": policy, policies).
SECTION_WORDS: dict[str, tuple[str, ...]] = {
    "DECISION_LOG": ("decision*", "decided", "adrs?"),
    "GOVERNANCE": (
        "governance",
        "polic*",
        "rules",
        "conventions",
        "guidelines",
        "standards",
        "code of conduct",
        "licensing",
        "compliance",
        "privacy",
    ),
    "RUNBOOKS": ("runbook*", "playbook*", "procedures?", "how[ -]to", "troubleshooting"),
    "GLOSSARY": ("glossary", "terminology", "definitions", "vocabulary"),
    "SYSTEM_OVERVIEW": ("architecture", "overview", "components", "layout", "tech stack"),
}
# Series of numbered records whose every line is a decision: a title such as
# "ADR-0004: …" or "RFC 12 — …" names a record of what was decided and why.
DECISION_RECORDS: tuple[str, ...] = ("adr", "rfc", "design", "decision", "dr", "pep", "kep")


# --- Episode kinds --------------------------------------------------------------------------


class EpisodeKind(NamedTuple):
    value: str
    label: str
    imported: bool  # an importer may produce it, and a sweep reads it as material
    posted: bool  # an agent may post it (API, MCP)


EPISODE_KINDS: tuple[EpisodeKind, ...] = (
    EpisodeKind("note", "Note", True, True),
    EpisodeKind("log_entry", "Log entry", True, True),
    EpisodeKind("chat_turn", "Chat turn", True, True),
    EpisodeKind("decision", "Decision", True, True),
    EpisodeKind("tool_call", "Tool call", True, True),
    EpisodeKind("page_section", "Page section", True, True),
    EpisodeKind("event", "Event", True, True),
    EpisodeKind("edit", "Edit", False, True),
    # The app's own bookkeeping: never project material, never posted from outside.
    EpisodeKind("approval", "Approval", False, False),
    EpisodeKind("retrieval", "Retrieval", False, False),
    EpisodeKind("source_ingest", "Source ingest", False, False),
)
IMPORTED_KINDS: tuple[str, ...] = tuple(k.value for k in EPISODE_KINDS if k.imported)
AGENT_KINDS: tuple[str, ...] = tuple(k.value for k in EPISODE_KINDS if k.posted)
BOOKKEEPING_KINDS: tuple[str, ...] = tuple(
    k.value for k in EPISODE_KINDS if not (k.imported or k.posted)
)


# --- Export kinds ---------------------------------------------------------------------------


class ExportKind(NamedTuple):
    value: str
    label: str


_EXPORT_KINDS: dict[str, ExportKind] = {
    k.value: k
    for k in (
        ExportKind("system-profile", "System profile"),
        ExportKind("receiver-brief", "Receiver brief"),
        ExportKind("startup-packet", "Startup packet"),
        ExportKind("handoff", "Handoff bundle"),
    )
}
# Other names a kind is asked for by: the starter bundle is the handoff bundle. Exports
# are stored under the kind's own name; the alias keeps its label for rows stored under it.
EXPORT_ALIASES: dict[str, ExportKind] = {"bundle": ExportKind("handoff", "Starter bundle")}


def export_kinds() -> list[ExportKind]:
    """The export kinds, in the order they are offered and built."""
    return list(_EXPORT_KINDS.values())


def export_kind_names(*, aliases: bool = False) -> list[str]:
    """Every name `--kind` accepts; with `aliases`, the other names too."""
    return [*_EXPORT_KINDS, *(EXPORT_ALIASES if aliases else ())]


def export_kind(name: str) -> str | None:
    """The kind `name` asks for (an alias resolved), or None for an unknown name."""
    if name in EXPORT_ALIASES:
        return EXPORT_ALIASES[name].value
    return name if name in _EXPORT_KINDS else None


def stored_export_kinds() -> list[tuple[str, str]]:
    """(value, label) of every kind an export row may hold: the model's choices."""
    return [(k.value, k.label) for k in _EXPORT_KINDS.values()] + [
        (name, alias.label) for name, alias in EXPORT_ALIASES.items()
    ]


@contextmanager
def export_kind_registered(kind: ExportKind) -> Iterator[ExportKind]:
    """Offer `kind` for the length of a block (tests add an export kind this way)."""
    before = dict(_EXPORT_KINDS)
    _EXPORT_KINDS[kind.value] = kind
    try:
        yield kind
    finally:
        _EXPORT_KINDS.clear()
        _EXPORT_KINDS.update(before)


# --- Change verbs ---------------------------------------------------------------------------
# How software notes say a thing changed place, form, owner or presence. The sweep reads
# them as typed slots (dreaming/engine/slots.py): "moved X into Y" sets X's location, "replaced
# X with Y" its implementation, "removed X" its presence, "X delegates … to Y" who does the work.

CHANGE_MOVE: frozenset[str] = frozenset(["moved", "moving", "migrated", "relocated", "extracted"])
CHANGE_REPLACE: frozenset[str] = frozenset(["replaced", "swapped", "substituted"])
CHANGE_REMOVE: frozenset[str] = frozenset(["removed", "dropped", "deleted", "uninstalled"])
# A component passing its work on, and one doing the work itself.
CHANGE_DELEGATE: frozenset[str] = frozenset(["delegates", "delegated", "offloads", "hands"])
PERFORMS_ITSELF: frozenset[str] = frozenset(
    ["centralizes", "centralises", "handles", "performs", "manages", "processes", "drives", "owns"]
)
# Prepositions naming where a moved thing went.
CHANGE_DESTINATION: frozenset[str] = frozenset(["to", "into", "onto"])


# --- Lexicon --------------------------------------------------------------------------------
# Word lists that name a concept, read by the sweep engine as word sets over its one
# tokeniser (dreaming/engine/text.py), never re-spelled as regex alternations. Lower case;
# "'" is the straight apostrophe.


def _words(text: str) -> frozenset[str]:
    """A whitespace-separated word list (kept as prose so it stays readable)."""
    return frozenset(text.split())


# Words that deny what the sentence states ("without" qualifies rather than denies; the
# readers that care take it out).
NEGATIONS = _words(
    """
    not no never nor don't doesn't didn't won't can't cannot isn't aren't wasn't weren't
    shouldn't mustn't wouldn't couldn't haven't hasn't hadn't without
    """
)
# Words without which no lifecycle marker or decision statement can be read: a sentence
# holding none of them skips those readers entirely.
LIFE_CUES = _words(
    """
    todo fixme done closed close closing shipped archived archive wontfix won't snoozed
    snooze waiting blocked reopened reopen reopening reopens re-opened finished completed
    resolved fixed hold paused progress wrapped
    """
)
DECIDE_CUES = _words(
    """
    use uses using adopt adopted adopting choose chose chosen pick picked go went gone
    settle settled standardise standardize standardised standardized rely relies move
    moved moving migrate migrated migrating switch switched switching change changed
    changing transitioned replaced replacing replace longer stopped stop dropped ditched
    abandoned retired
    """
)
# Hedges: what a writer is not yet sure of is an option or a plan, not a fact of the project.
HEDGES = _words(
    """
    consider considering optional optionally maybe perhaps possibly probably likely unlikely
    alternatively actually might tbd
    """
)
OBLIGATIONS = _words("must should never always only required need needs cannot")
# Intent and work still to come, in a sentence ...
FUTURE = _words("will should might could may todo tbd later")
# ... and in a heading over it ("Next steps", "Implementation plan", "Follow-ups").
AHEAD = _words(
    """
    next plan plans planned planning todo todos to-do to-dos goal goals roadmap backlog
    followup followups follow-up follow-ups upcoming future ideas wishlist proposal proposed
    pending
    """
)
# A change someone wants, proposes or asks for has not happened yet.
PROPOSALS = _words(
    """
    want wants wanted propose proposes proposed suggest suggests suggested ask asks asked
    should could might
    """
)
PROPOSAL_PAIRS: frozenset[tuple[str, str]] = frozenset(
    (("would", "like"), ("plan", "to"), ("plans", "to"), ("planning", "to"))
)
# Words people use when something comes back ("flaky again", "still failing").
RECURRENCE = _words(
    """
    again still flaky flake flakes flakiness keeps intermittent intermittently recur recurs
    recurred recurring recurrence recurrences recurrent recurrently
    """
)
FIRST_SINGULAR = _words("i i'm i've i'll i'd me my mine myself")
FIRST_PLURAL = _words("we we're we've we'll we'd us our ours")
SECOND_PERSON = _words("you your yours you're you've you'll you'd")
