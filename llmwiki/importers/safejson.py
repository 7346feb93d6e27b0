"""JSON from uploads and forms, refused when nested deeper than anyone writes by hand.

Python's decoder recurses once per level: a few kilobytes of `[` exhaust the stack and
raise RecursionError, which no caller expects. Every JSON reader of user input (the
importers, the dreaming policy form) checks the depth here first, with one limit.
"""

from __future__ import annotations

import json
import re

from llmwiki.errors import InputError

MAX_JSON_DEPTH = 100

# A string (whose brackets are text) or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class TooDeep(ValueError):
    """JSON nested deeper than MAX_JSON_DEPTH, naming the line where it goes too deep if known."""

    def __init__(self, line: int | None = None) -> None:
        where = f" (line {line})" if line else ""
        super().__init__(f"nested deeper than {MAX_JSON_DEPTH} levels{where}")


def check_depth(text: str, first_line: int = 1) -> None:
    """Raise TooDeep when brackets outside strings open more than MAX_JSON_DEPTH levels."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return  # the common case: too few brackets to matter, found without a Python loop
    depth = 0
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if piece == "[" or piece == "{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise TooDeep(first_line + text.count("\n", 0, match.start()))
        elif piece == "]" or piece == "}":
            depth -= 1


def decode(text: str, first_line: int = 1) -> object:
    """json.loads that raises TooDeep (or json.JSONDecodeError), never RecursionError."""
    check_depth(text, first_line)
    try:
        return json.loads(text)
    except RecursionError:
        # A defence: only reachable when the stack was already deep.
        raise TooDeep() from None


def loads(name: str, text: str, first_line: int = 1) -> object:
    """decode, with bad input raised as InputError naming `name` and the line.

    `first_line` is the line of `text` in its file, for one line of a JSONL file.
    """
    try:
        return decode(text, first_line)
    except TooDeep as exc:
        raise InputError(name, str(exc)) from None
    except json.JSONDecodeError as exc:
        line = first_line + exc.lineno - 1
        raise InputError(
            name, f"line {line}: malformed JSON ({exc.msg} at column {exc.colno})"
        ) from None
