"""Reading JSON and JSONL exports: one object per line with its line number, or one document.

Every reader goes through safejson (one depth limit) and names the file and line of bad
input; the format importers share these so that a malformed export reads the same way
whichever tool wrote it.
"""

from __future__ import annotations

from llmwiki.errors import InputError

from . import safejson
from .base import TextFile, split_lines


def jsonl_objects(file: TextFile) -> list[tuple[dict, int]]:
    """Return (object, 1-based line) for every non-blank line; raise InputError otherwise."""
    rows: list[tuple[dict, int]] = []
    for number, line in enumerate(split_lines(file.text), start=1):
        if not line.strip():
            continue
        value = safejson.loads(file.path, line, first_line=number)
        if not isinstance(value, dict):
            raise InputError(
                file.path, f"line {number}: expected a JSON object, got {type(value).__name__}"
            )
        rows.append((value, number))
    return rows


def document(file: TextFile) -> object:
    """Decode the whole file as one JSON document."""
    text = file.text[1:] if file.text.startswith("\ufeff") else file.text
    return safejson.loads(file.path, text)


def first_value(text: str) -> object:
    """The value a format is recognised by: the whole document, else its first line (JSONL).

    Raises safejson.TooDeep, or ValueError when neither decodes.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return safejson.decode(text)
    except safejson.TooDeep:
        raise
    except ValueError:
        pass
    for line in text.split("\n"):
        if line.strip():
            return safejson.decode(line)  # raises ValueError (JSONDecodeError) if bad
    raise ValueError("empty")


def text(value: object) -> str:
    """A string field, or '' when absent or of another type (exports leave fields null)."""
    return value if isinstance(value, str) else ""


def objects(value: object) -> list[dict]:
    """The objects of a list field, skipping anything else; [] when it is not a list."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def where(file: TextFile, line: int) -> str:
    return f"{file.path} line {line}"
