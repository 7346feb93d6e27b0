"""Judging a sentence as a claim: junk or not, able to stand alone, tied to its day, shown how."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .blocks import SHELL_PROMPT_RE, blocks
from .text import Features, word_list

# The shell's own utilities and the package and container tools of every stack; any
# other program is known by its flags (_FLAGGED_RE).
_SHELL_CMDS = frozenset(
    word_list(
        """
    sudo git cd ls cat docker kubectl npm npx pip pip3 python python3 make curl wget ssh
    scp systemctl journalctl rm cp mv grep echo export source chmod chown tail head less
    vim nano yarn pnpm poetry uv go cargo brew apt apt-get yum dnf service tar unzip ps
    kill top htop df du mkdir touch ln
    """
    )
)
# A program, up to three arguments, then a flag: "tool sub --flag", "tool -h host".
_FLAGGED_RE = re.compile(r"^[a-z][\w.-]*(?:\s+[\w./:=-]+){0,3}\s+--?[a-z]")
_URL_ONLY_RE = re.compile(r"^<?https?://\S+>?$")


# A sentence opening with one of these leans on the sentence before it for its subject
# ("that's not true yet (the fast path)."): on its own it claims nothing checkable.
_ANAPHORIC_OPENERS = (
    "that's ",
    "that’s ",
    "that is ",
    "that was ",
    "it's ",
    "it’s ",
    "it is ",
    "it was ",
    "which ",
)
_LIST_SPLIT_RE = re.compile(r",|\s(?:and|&|\+)\s")
_PRONOUNS = frozenset(word_list("me us i you him her them we myself"))


def _is_name_list(stripped: str) -> bool:
    """True for a bare list of people ("Ann, Bo, Cy, builder, me."): no predicate.

    Three or more short comma-separated items, most of them capitalised names, pronouns
    or handles: an attendee line, which says who was there and nothing about the project.
    """
    items = [x.strip() for x in _LIST_SPLIT_RE.split(stripped.rstrip(".!;: "))]
    items = [x for x in items if x]
    if len(items) < 3:
        return False
    namey = 0
    for item in items:
        words = item.split()
        if len(words) > 2 or any(c.isdigit() for c in item):
            return False
        w = words[0].strip("()[]\"'")
        if w[:1].isupper() or w.lower() in _PRONOUNS or w.startswith(("@", "agent:")):
            namey += 1
    return namey * 2 > len(items)


_TABLE_RULE_RE = re.compile(r"\|\s*:?-{3,}:?\s*\|")


def junk_reason(
    text: str, features: Features, heading: bool = False, code: bool = False
) -> str | None:
    """Say why a sentence is not claim material (OpenClaw promoted exactly this), or None."""
    if not features.words:
        return "empty"  # nothing but punctuation, or nothing at all
    if heading:
        return "heading"
    if code:
        return "tool_output"
    stripped = text.strip()
    first_char = stripped[0]
    # Each pattern below starts with a known character; test that before any regex.
    if first_char in "h<" and _URL_ONLY_RE.match(stripped):
        return "bare_url"
    if first_char in "$#>P" and SHELL_PROMPT_RE.match(stripped) and not _quoted(stripped):
        return "shell_command"
    if first_char == "`" and stripped.endswith("`") and stripped.count("`") == 2:
        return "code_only"
    if first_char == "|" and _TABLE_RULE_RE.search(stripped):
        # A table's rows mean something only under its header: flattened into one line
        # it is no claim anyone could approve as it stands (the episode keeps it).
        return "table"
    if features.stop_ratio < 0.12:
        first = stripped.split(None, 1)[0].lower()
        if first in _SHELL_CMDS or _FLAGGED_RE.match(stripped):
            return "shell_command"
    if features.words < 4:
        return "too_short"
    if len(features.subject) + len(features.values) < 2:
        return "no_content"
    if first_char in "tTiIwW" and stripped[:9].lower().startswith(_ANAPHORIC_OPENERS):
        return "fragment"
    if stripped.count(",") >= 2 and _is_name_list(stripped):
        return "name_list"
    return None


_QUOTE_MARK_RE = re.compile(r"(?:^|\s)>(?:\s*>)*(?=\s|$)")


def _quoted(text: str) -> bool:
    """Is a line opening on ">" a markdown quote rather than a command at a prompt? A
    quote goes on in prose; a prompt is followed by a command."""
    words = text[1:].split(None, 1)
    return text[0] == ">" and bool(words) and words[0].lower() not in _SHELL_CMDS


def trim_snippet(text: str, limit: int) -> str:
    """Cut a text to at most ``limit`` characters at a sentence or clause boundary."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    for sep in (". ", "; ", ", "):
        cut = head.rfind(sep)
        if cut > limit // 2:
            return head[: cut + 1].rstrip(",; ") + " …"
    cut = head.rfind(" ")
    return head[: cut if cut > 0 else limit].rstrip() + " …"


_LABEL_RE = re.compile(
    r"^(?:reminder|note|fyi|nb|update|ps|btw|heads[- ]up|aside)\s*[:\-–—]\s*"
    # A lead-in addressed to the reader, up to its colon: "noting for whoever runs the
    # upgrade next:", "side question before I forget, …:", "for the record:".
    r"|^(?:noting|note|notes|writing (?:this|it) down|for the record|quick note|side note"
    r"|side question|heads[- ]up|reminder|fyi|btw)\b[^:.!?]{0,80}:\s+",
    re.IGNORECASE,
)
# The clock time (or time range) a log line opens with says when it was written, which
# the evidence already records; as the first words of a claim it reads as noise.
_CLOCK_RE = re.compile(r"^\d{1,2}:\d{2}(?::\d{2})?(?:\s*[–—-]\s*\d{1,2}:\d{2})?\s+(?=\S)")


# Markup that carries text: a Markdown link or image keeps its text, an AsciiDoc macro
# ("name:target[text]") or cross reference ("<<id,text>>") likewise; an HTML tag goes.
_LINK_RE = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*\)|\[([^\]\n]+)\]\[[^\]\n]*\]")
_MACRO_RE = re.compile(r"\b[a-z]+:(?://)?[^\s\[\]]*\[([^\]\n]*)\]|<<[^,>\n]*,([^>\n]*)>>")
_TAG_RE = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
# What opens a line as markup: a list marker, a checkbox, an AsciiDoc heading, a quote mark.
_LINE_MARK_RE = re.compile(r"^(?:[-*+•]\s+|\d{1,3}[.)]\s+|\[[ xX]\]\s+|={1,6}\s+|>\s*)+")
# A speaker or author opening a line: one or two capitalised words, perhaps a role in
# brackets, then a colon ("Ann: …", "Ann Lee (SRE): …").
_SPEAKER_RE = re.compile(r"^([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)\s*(?:\([^)]{0,40}\))?:\s+(?=\S)")


def _speaker(text: str, people: frozenset[str]) -> int:
    """Where the text after a speaker prefix starts (0 when there is none).

    Only a person of the project speaks: "Storage: …" or "Deciders: …" label a line the
    same way, and only who wrote the material tells a name from a label.
    """
    m = _SPEAKER_RE.match(text) if people else None
    if m is None or any(w.lower() not in people for w in m.group(1).split()):
        return 0
    return m.end()


def people_in(actors: Iterable[str]) -> frozenset[str]:
    """The name words of who wrote or said the material ("agent:builder", "Ann Lee")."""
    return frozenset(
        w for a in actors for w in re.split(r"[\s_.]+", a.split(":")[-1].lower()) if len(w) > 1
    )


def _table_row(text: str) -> str:
    cells = [c.strip() for c in text.strip().strip("|").split("|")]
    return "; ".join(c for c in cells if c and not set(c) <= set(":- "))


def display_text(sentence: str, people: frozenset[str] = frozenset()) -> str:
    """The sentence as a reviewer reads it: plain text, no log or markup noise.

    Removed: quote markers, a leading clock time, list markers and checkboxes, a speaker
    prefix ("Ann: …", when Ann is one of ``people``), filler labels ("Reminder:", "FYI -"),
    table syntax (the cells stay, joined), HTML tags, and link markup (Markdown, AsciiDoc),
    whose text stays. Nothing else changes, not even case: "ledger-db-2 is …" must stay
    a host name. Every candidate and conflict text is made by this one function.
    """
    out = sentence.strip()
    if out[:1] == ">" and _quoted(out):
        # A quote's lines, joined: each kept its ">" marker.
        out = _QUOTE_MARK_RE.sub(" ", out)
    if out[:1] == "|" and out.count("|") >= 2:
        out = _table_row(out)
    if "](" in out or "][" in out:
        out = _LINK_RE.sub(lambda m: m.group(1) or m.group(2) or "", out)
    if "[" in out or "<<" in out:
        out = _MACRO_RE.sub(lambda m: m.group(1) or m.group(2) or "", out)
    if "<" in out:
        out = _TAG_RE.sub("", out)
    for _ in range(3):  # "- 09:10 Ann: FYI …": each opener may hide the next
        before = out
        out = _LINE_MARK_RE.sub("", out).strip()
        if out[:1].isdigit():
            out = _CLOCK_RE.sub("", out)
        out = out[_speaker(out, people) :]
        # every label starts with one of these letters; most sentences skip the regex
        if out[:1].lower() in "rnfupbhasw":
            out = _LABEL_RE.sub("", out)
        if out == before:
            break
    return " ".join(out.split())


# A written procedure is approved whole: its steps are never cut, only a text far
# longer than any runbook is, and then between two steps.
PROCEDURE_MAX_CHARS = 6000


def procedure_text(content: str, people: frozenset[str] = frozenset()) -> str:
    """A written procedure as a reviewer approves it: every step, one per line, plain.

    Headings and tool output around the steps are left out; a step keeps its number.
    """
    lines: list[str] = []
    size = 0
    for b in blocks(content):
        if b.heading or b.code:
            continue
        text = display_text(b.text, people)
        if not text:
            continue
        line = f"{b.number}. {text}" if b.number else text
        if size + len(line) > PROCEDURE_MAX_CHARS:
            lines.append("…")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


# Words that point back at something said before: a sentence opening with one leans on
# its neighbours and cannot be approved as a claim on its own.
_ANAPHORA = frozenset(
    word_list("this that these those it its they them their he she his her there such so also")
)


# An object pronoun needs its antecedent wherever it stands ("Restart it remotely"), and
# "here" the document it is written in ("If something here disagrees …").
_POINTS_BACK = frozenset(("it", "them", "here"))


def opens_pointing_back(text: str) -> bool:
    """Does the sentence open on a word pointing back at what came before ("It means a
    lot.", "This time with the seed logged")? A pronoun further on may have its
    antecedent in the sentence itself ("numbers come with the command that made them")."""
    first = re.match(r"\W*([\w'’-]+)", text)
    return first is not None and first.group(1).lower() in _ANAPHORA


_LISTENER = frozenset(("you", "your", "yours", "you're", "you've", "you'd", "you'll"))


def asks_the_listener(text: str) -> bool:
    """Is this a question put to the person spoken to ("What gave you the idea?")? It
    keeps a conversation going; a question the project has to answer is asked of no one
    in particular ("Should we keep the old endpoint?") or reported ("Ann asked whether …")."""
    words = {w.lower().replace("’", "'") for w in re.findall(r"[\w'’]+", text)}
    return text.rstrip().endswith("?") and bool(_LISTENER & words)


_NAMES_FIELD = re.compile(
    r"^\W*[A-Za-z][\w -]{0,30}:\s*"  # the label
    r"(?:[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*(?:\s*,\s*|\s+and\s+|\s*$))+$"  # Names, And Names
)


def not_a_claim(text: str) -> bool:
    """A lead-in ending in a colon introduces what follows ("Two rules were restated:"),
    and a label over a list of names is a record's field ("Deciders: Ann Lee, Bo Chan"):
    neither says anything a reviewer could approve, however often it recurs."""
    return text.rstrip().endswith(":") or _NAMES_FIELD.match(text) is not None


def standalone(text: str) -> bool:
    """Can this sentence be read, and approved, without the text around it?

    Not a question, not opening with a word that points back, and long enough to say
    something of a subject (a subject, a verb and what it says: six words).
    """
    words = [w.lower() for w in re.findall(r"[\w'’-]+", text)]
    if len(words) < 6 or text.rstrip().endswith("?") or not_a_claim(text):
        return False
    # A sentence opening with a past participle has dropped its subject ("Written by Ann
    # for new joiners."): it describes something the reader has to be looking at.
    participle = words[0].endswith(("ed", "en")) and len(words[0]) > 4 and words[1] == "by"
    return (
        not opens_pointing_back(text)
        and words[-1] not in _ANAPHORA
        and not participle
        and not _POINTS_BACK.intersection(words)
    )


# A label opening a line ("Source: ", "**Tests:** "), a code span, and a file path in one:
# no spaces, a directory or an extension ("@scope/name" is a package, not a file).
_FIELD_LABEL_RE = re.compile(r"^[*_]*[A-Za-z][\w /&.-]{0,40}?[*_]*:[*_]*\s+")
_SPAN_RE = re.compile(r"`([^`]*)`")
_FILE_RE = re.compile(r"^(?!@)\S*(?:/\S*|\.[A-Za-z]{1,5})$")


def points_to_files(text: str) -> bool:
    """True when a line only says where files are: past an optional label ("Source: "),
    nothing but code spans, one of them a file path, and punctuation. An index entry is
    read under its heading; on its own it names no fact, however many words its path
    holds (which ``standalone`` would count)."""
    body = _FIELD_LABEL_RE.sub("", text.strip(), count=1)
    if not any(_FILE_RE.match(span.strip()) for span in _SPAN_RE.findall(body)):
        return False
    return not any(c.isalnum() for c in _SPAN_RE.sub("", body))


# A sentence tied to the day it was written: what happened or is planned around "today"
# is a log entry, true of that day; a durable fact reads the same a month later. The
# anchors are words relative to the writer's now, and first-person intent ("I'll", "we're
# going to") that a plan is made of; "we'll use X" states a decision and is not a plan.
_DATED_RE = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|overnight|last night|this (?:morning|afternoon"
    r"|evening|week|weekend)|(?:next|last) (?:week|month|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday)|(?:some|one) (?:morning|afternoon|evening) next week"
    r"|earlier today|later today|right now"
    # a weekday with no date is a day near the writer's now ("the review is on Thursday"),
    # unlike a habit ("every Monday", "on Monday mornings", "on Tuesdays")
    r"|(?:on|for|by|until|till|from|this) (?:monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)\b(?! mornings| afternoons| evenings| nights)"
    r"|(?:i|we)(?:'ll| will| am going to| are going to"
    r"|'m going to|'re going to) (?!use\b|adopt\b|standardi[sz]e\b|keep\b|stay\b))",
    re.IGNORECASE,
)


# A ticket's or change's own news ("OPS-12 raised for node-4", "PR #31 merged: …") is
# a step of work on the day it happened, however long the rest of the line.
_WORK_NEWS_RE = re.compile(
    r"^(?:[A-Z][A-Z0-9]*-\d+|(?:PR|MR)\s*[#!]\d+)[,:]?\s+(?:\S+\s+){0,2}?"
    r"(?:raised|opened|filed|merged|closed|fixed|done|shipped|resolved|deployed|reverted"
    r"|landed|created|reopened|approved|reviewed)\b"
)


def dated(text: str) -> bool:
    """Is this sentence anchored to the day it was written (a log entry or a plan)?"""
    return _DATED_RE.search(text) is not None or _WORK_NEWS_RE.match(text) is not None
