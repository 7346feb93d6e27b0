"""Split an episode into blocks (logical lines) and sentences, and its exact-duplicate form."""

from __future__ import annotations

import re
from typing import NamedTuple

from .text import word_list

_BULLET_RE = re.compile(r"^(?:[-*•+]|(\d{1,3})[.)])\s+")
_CHECKBOX_RE = re.compile(r"^\[([ xX])\]\s*")
_HEADING_RE = re.compile(r"^#{1,6}(?:\s+|$)")
_STAMP_RE = re.compile(
    r"^\[?(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}:\d{2}(?::\d{2})?)\]?\s*(?:[-–—:|]\s*)?"
)
# A sentence ends at . ! or ? followed by space and anything word-like — notes and chat
# often start the next sentence in lower case ("… ledger-db-2. owner: Ann …").
_SENT_SPLIT_RE = re.compile(r"([.!?]+)\s+(?=[\w`\"'(\[@])")
_ABBREVIATIONS = frozenset(
    word_list("e.g i.e etc vs cf approx incl ca no fig mr mrs ms dr st jr sr a.m p.m al eg ie")
)
_WS_RE = re.compile(r"\s+")
# A shell prompt and the command after it: what follows is a tool's output.
SHELL_PROMPT_RE = re.compile(r"^(?:\$|#|>|PS>)\s+\S")


class Block(NamedTuple):
    """One logical line of an episode: a heading, a bullet, a log line or a paragraph."""

    text: str  # log noise (timestamps, bullets, checkbox) stripped
    heading: bool = False
    checkbox: str | None = None  # " " open, "x" ticked, None when there was none
    # Fenced code or the output lines under a ``$ command``: what a tool printed, not
    # what anyone claimed ("Operations to perform: …" was proposed as a fact before).
    code: bool = False
    number: int = 0  # the item number of a numbered-list entry ("3. Back up …"), else 0
    item: bool = False  # a bullet, checkbox or timestamped log line, not a paragraph


_LINE_NOISE_START = frozenset("0123456789[-*•+#")
_FENCES = ("```", "~~~")


_CONTINUATION_WORDS = frozenset(
    word_list("a an the of to by for and or but with in on at from as is are was were be")
)


def _continues(line: str) -> bool:
    """True when a line visibly runs on into the next (a wrapped paragraph line)."""
    last = line[-1]
    if last in ".!?":
        return False
    if last in ",;:-(":
        return True
    word = line.rsplit(None, 1)[-1].lower()
    return word in _CONTINUATION_WORDS


def blocks(content: str) -> list[Block]:
    """Split an episode into blocks, joining wrapped paragraph lines back together.

    A bullet, checkbox or timestamped line is one log entry: only an indented line
    continues it. A plain line continues the paragraph above unless that paragraph looks
    finished and the line starts a new capitalised sentence.
    """
    if "\n" not in content:
        line = content.strip()
        if line and line[0] not in _LINE_NOISE_START:
            return [Block(line)]  # the common case: one plain line, no noise to strip
    out: list[Block] = []
    current: list[str] = []
    checkbox: str | None = None
    item = False  # is ``current`` a bullet / checkbox / log-line entry?
    num = 0  # the list number of ``current`` when it is a numbered item
    fence: str | None = None  # the opening fence while inside a fenced block
    code: list[str] = []  # fenced lines, or output lines under a shell prompt
    output = False  # are plain lines after a ``$ command`` line its output?
    for raw in content.splitlines():
        line = raw.strip()
        if fence is not None:
            if line.startswith(fence):
                if code:
                    out.append(Block(" ".join(code), code=True))
                fence, code = None, []
            elif line:
                code.append(line)
            continue
        if not line:
            if code:
                out.append(Block(" ".join(code), code=True))
                code = []
            output = False
            if current:
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current, checkbox, item, num = [], None, False, 0
            continue
        first = line[0]
        if first in "`~" and line.startswith(_FENCES):
            if current:
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current, checkbox, item, num = [], None, False, 0
            fence, output = line[:3], False
            continue
        if output:
            if first not in _LINE_NOISE_START:
                code.append(line)  # unfenced tool output runs to a blank line or an entry
                continue
            output = False
        if code:
            out.append(Block(" ".join(code), code=True))
            code = []
        if first == "$" and SHELL_PROMPT_RE.match(line):
            if current:
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current, checkbox, item, num = [], None, False, 0
            out.append(Block(line))  # the command itself; junk_reason names it
            output = True
            continue
        if first not in _LINE_NOISE_START:
            if current and (
                (item and not raw[0].isspace()) or (first.isupper() and not _continues(current[-1]))
            ):
                # Joining these made run-on "sentences" that bridged unrelated subjects
                # (and carried one entry's checkbox onto the next).
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current, checkbox, item, num = [], None, False, 0
            current.append(line)
            continue
        if first == "#" and _HEADING_RE.match(line):
            if current:
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current, checkbox, item, num = [], None, False, 0
            out.append(Block(_HEADING_RE.sub("", line).strip(), True))
            continue
        stripped, starts_new, number, box_state = _entry_marks(line, first)
        if starts_new:
            if current:
                out.append(Block(" ".join(current), False, checkbox, False, num, item))
                current = []
            checkbox, item, num = box_state, True, number
        elif current and item and not raw[0].isspace():
            out.append(Block(" ".join(current), False, checkbox, False, num, item))
            current, checkbox, item, num = [], None, False, 0
        if stripped:
            current.append(stripped)
    if code:  # an unclosed fence or output running to the end of the text
        out.append(Block(" ".join(code), code=True))
    if current:
        out.append(Block(" ".join(current), False, checkbox, False, num, item))
    return out


def _entry_marks(line: str, first: str) -> tuple[str, bool, int, str | None]:
    """A line that opens on a timestamp, a bullet or a checkbox less those marks; whether
    they start a new entry, its list number and its checkbox. Only lines opening on one of
    ``_LINE_NOISE_START`` come here, so plain prose pays for no call."""
    starts_new = False
    stripped = line
    number = 0
    if first.isdigit() or first == "[":
        stamp = _STAMP_RE.match(line)
        if stamp and stamp.end():
            stripped = line[stamp.end() :]
            starts_new = True
    if stripped[:1] in "-*•+0123456789":
        bullet = _BULLET_RE.match(stripped)
        if bullet:
            stripped = stripped[bullet.end() :]
            starts_new = True
            digits = bullet.group(1)
            number = int(digits) if digits else 0
    box_state = None
    if stripped[:1] == "[":
        box = _CHECKBOX_RE.match(stripped)
        if box:
            box_state = box.group(1).lower()
            stripped = stripped[box.end() :]
            starts_new = True
    return stripped, starts_new, number, box_state


def sentences(text: str) -> list[str]:
    """Split a block's text into sentences (cheap; good enough for notes and logs)."""
    if ". " not in text and "? " not in text and "! " not in text:
        return [text] if text.strip() else []
    out: list[str] = []
    start = 0
    for m in _SENT_SPLIT_RE.finditer(text):
        if m.group(1) == ".":
            # "e.g. foo" and "J. Smith" do not end a sentence
            space = text.rfind(" ", start, m.start())
            word = text[space + 1 if space >= 0 else start : m.start()].lower()
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue
        piece = text[start : m.end(1)].strip()
        if piece:
            out.append(piece)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def normalise(text: str) -> str:
    """Return the exact-duplicate form of a text: noise stripped, lowercased, spaced once."""
    cleaned = " ".join(b.text for b in blocks(text))
    return _WS_RE.sub(" ", cleaned).strip().lower().rstrip(".!;, ")
