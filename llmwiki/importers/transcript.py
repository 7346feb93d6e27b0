"""Chat transcripts: JSONL (one turn per line) or a JSON list / {"messages"|"turns": [...]}."""

from __future__ import annotations

import json
import re
from datetime import datetime

from llmwiki.errors import InputError

from . import safejson
from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    is_episode_text,
    normalise,
    parse_timestamp,
)

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")

ROLE_KEYS = ("role", "speaker", "sender", "author")
CONTENT_KEYS = ("content", "text")
_ID_KEYS = ("id", "turn_id", "dia_id", "message_id", "uuid")
_TIME_KEYS = ("timestamp", "created_at", "time", "ts")
_CONTAINER_KEYS = ("messages", "turns")
_ASSISTANT_KEYS = ("assistant", "assistant_name", "agent", "model")
_USER_KEYS = ("user", "user_name")

USER_ROLES = frozenset({"user", "human", "customer", "client"})
AGENT_ROLES = frozenset({"assistant", "ai", "bot", "model", "agent"})
SYSTEM_ROLES = frozenset({"system", "developer"})
TOOL_ROLES = frozenset({"tool", "function", "tool_result", "tool_call", "ipython", "observation"})
_ROLE_WORDS = USER_ROLES | AGENT_ROLES | SYSTEM_ROLES | TOOL_ROLES
_TOOL_PARTS = frozenset({"tool_use", "tool_result", "function_call", "tool_call"})


class _NotTranscript(Exception):
    """Raised inside the parser when the structure is JSON but not a list of turns."""


def _skip_ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _iter_array(
    text: str, i: int, first_only: bool = False
) -> tuple[list[tuple[object, int]], int]:
    """Decode the array at `text[i] == '['`; return ([(value, offset)], end offset)."""
    items: list[tuple[object, int]] = []
    i = _skip_ws(text, i + 1)
    if text.startswith("]", i):
        return items, i + 1
    while True:
        value, end = _DECODER.raw_decode(text, i)
        items.append((value, i))
        if first_only:
            return items, end
        i = _skip_ws(text, end)
        c = text[i : i + 1]
        if c == ",":
            i = _skip_ws(text, i + 1)
        elif c == "]":
            return items, i + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, i)


def _walk_container(
    text: str, i: int, first_only: bool = False
) -> tuple[dict[str, object], list[tuple[object, int]] | None, int]:
    """Walk the object at `text[i] == '{'` keeping element offsets of its turn array.

    Returns (scalar fields, [(turn, offset)] or None when there is no messages/turns array,
    end offset). The element offsets give each turn its line number without a second parse.
    """
    fields: dict[str, object] = {}
    turns: list[tuple[object, int]] | None = None
    i = _skip_ws(text, i + 1)
    if text.startswith("}", i):
        return fields, None, i + 1
    while True:
        if not text.startswith('"', i):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, i)
        key, i = _DECODER.raw_decode(text, i)
        i = _skip_ws(text, i)
        if not text.startswith(":", i):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, i)
        i = _skip_ws(text, i + 1)
        if key in _CONTAINER_KEYS and turns is None and text.startswith("[", i):
            turns, i = _iter_array(text, i, first_only)
            if first_only:
                return fields, turns, i
        else:
            value, i = _DECODER.raw_decode(text, i)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                fields[key] = value
        i = _skip_ws(text, i)
        c = text[i : i + 1]
        if c == ",":
            i = _skip_ws(text, i + 1)
        elif c == "}":
            return fields, turns, i + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, i)


def _is_turn(value: object) -> bool:
    return (
        isinstance(value, dict)
        and any(k in value for k in ROLE_KEYS)
        and any(k in value for k in CONTENT_KEYS)
    )


def looks_like_transcript(path: str, text: str) -> bool:
    """Sniff cheaply: is the first line/element an object with role-ish and content-ish keys?"""
    del path  # the content decides; the extension is only a hint for the caller
    if text.startswith("\ufeff"):
        text = text[1:]
    i = _skip_ws(text, 0)
    try:
        if text.startswith("[", i):
            items, _ = _iter_array(text, i, first_only=True)
            return bool(items) and _is_turn(items[0][0])
        if not text.startswith("{", i):
            return False
        newline = text.find("\n", i)
        first_line = text[i : newline if newline >= 0 else len(text)]
        try:
            value = safejson.decode(first_line)
        except json.JSONDecodeError:
            value = None  # a pretty-printed document: walk it below
        if _is_turn(value):
            return True
        _, turns, _ = _walk_container(text, i, first_only=True)
        return bool(turns) and _is_turn(turns[0][0])
    except (json.JSONDecodeError, safejson.TooDeep, RecursionError):
        return False


def _with_lines(items: list[tuple[object, int]], text: str) -> list[tuple[object, int]]:
    lines = _line_of([offset for _, offset in items], text)
    return [(value, line) for (value, _), line in zip(items, lines, strict=True)]


def _line_of(offsets: list[int], text: str) -> list[int]:
    """Map increasing character offsets to 1-based line numbers in one pass."""
    lines: list[int] = []
    line, pos = 1, 0
    for offset in offsets:
        line += text.count("\n", pos, offset)
        pos = offset
        lines.append(line)
    return lines


def _read_turns(file: TextFile) -> tuple[list[tuple[object, int]], dict[str, object]]:
    """Return ([(turn object, line number)], container fields) or raise InputError."""
    text = file.text[1:] if file.text.startswith("\ufeff") else file.text
    i = _skip_ws(text, 0)
    if i >= len(text):
        return [], {}
    jsonl = file.path.lower().endswith((".jsonl", ".ndjson"))
    try:
        if text.startswith("[", i) or not jsonl:
            # The decoder below recurses once per level; JSONL is checked line by line.
            safejson.check_depth(text)
        if text.startswith("[", i):
            items, end = _iter_array(text, i)
            _expect_end(text, end)
            return _with_lines(items, text), {}
        if not text.startswith("{", i):
            raise InputError(file.path, "not a transcript: expected JSON objects or a JSON array")
        if not jsonl:
            fields, turns, end = _walk_container(text, i)
            if _skip_ws(text, end) >= len(text):
                if turns is not None:
                    return _with_lines(turns, text), fields
                # One pretty-printed turn object is a transcript of one turn.
                return [(_DECODER.raw_decode(text, i)[0], _line_of([i], text)[0])], {}
    except json.JSONDecodeError as exc:
        raise InputError(
            file.path, f"line {exc.lineno}: malformed JSON ({exc.msg} at column {exc.colno})"
        ) from None
    except safejson.TooDeep as exc:
        raise InputError(file.path, str(exc)) from None
    except RecursionError:  # a defence: check_depth should have refused it
        raise InputError(file.path, str(safejson.TooDeep())) from None
    return _read_jsonl(file, text), {}


def _expect_end(text: str, end: int) -> None:
    if _skip_ws(text, end) < len(text):
        raise json.JSONDecodeError("Extra data", text, _skip_ws(text, end))


def _read_jsonl(file: TextFile, text: str) -> list[tuple[object, int]]:
    turns: list[tuple[object, int]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        value = safejson.loads(file.path, line, first_line=number)
        if not isinstance(value, dict):
            raise InputError(
                file.path, f"line {number}: expected a JSON object, got {type(value).__name__}"
            )
        nested = None
        if "messages" in value or "turns" in value:  # cheap test before the real one
            nested = value.get("messages", value.get("turns"))
        if isinstance(nested, list) and not _is_turn(value):
            # Conversation-per-line JSONL (as in fine-tuning sets): its turns share the line.
            turns.extend((turn, number) for turn in nested)
        else:
            turns.append((value, number))
    return turns


def _text_of(value: object) -> tuple[str, bool] | None:
    """Return (text, only tool parts) for a content value, or None when the type is wrong."""
    if isinstance(value, str):
        return value, False
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"], False
        parts = value.get("parts")
        value = parts if isinstance(parts, list) else None
    if not isinstance(value, list):
        return None
    texts: list[str] = []
    tool_parts = text_parts = 0
    for part in value:
        if isinstance(part, str):
            texts.append(part)
            text_parts += 1
        elif isinstance(part, dict):
            kind = part.get("type")
            if kind in _TOOL_PARTS:
                tool_parts += 1
                texts.append(_tool_part_text(part))
            elif isinstance(part.get("text"), str):
                texts.append(part["text"])
                text_parts += 1
            # Images, audio and other non-text parts carry nothing to keep as text.
    return "\n\n".join(t for t in texts if t), tool_parts > 0 and text_parts == 0


def _tool_part_text(part: dict) -> str:
    name = part.get("name") or part.get("tool_name") or ""
    if part.get("type") == "tool_result" or "content" in part:
        inner = _text_of(part.get("content", part.get("output", "")))
        body = inner[0] if inner else json.dumps(part.get("content"), ensure_ascii=False)
        return f"[{part.get('type')}{' ' + name if name else ''}] {body}".rstrip()
    arguments = part.get("input", part.get("arguments", {}))
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return f"[{part.get('type')} {name}] {arguments}".rstrip()


def _first_id(turn: dict) -> str:
    value = turn.get("id")
    if type(value) is str and value:
        return value  # the common case, without the loop
    for key in _ID_KEYS:
        value = turn.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and value != "":
            return str(value)
    return ""


def _where(number: int, turn_id: str, line: int) -> str:
    return f"turn {number} (id {turn_id!r}, line {line})"


def _call(call: object) -> dict:
    """Flatten an OpenAI `tool_calls` entry into {name, arguments}."""
    if not isinstance(call, dict):
        return {"name": "", "arguments": json.dumps(call, ensure_ascii=False)}
    function = call.get("function") if isinstance(call.get("function"), dict) else call
    return {"name": function.get("name") or "", "arguments": function.get("arguments", {})}


def _name(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_transcript(file: TextFile) -> list[EpisodeDraft]:
    """Turn each transcript turn into one chat_turn (or tool_call) episode."""
    turns, fields = _read_turns(file)
    assistant = next((_name(fields[k]) for k in _ASSISTANT_KEYS if _name(fields.get(k))), "")
    user = next((_name(fields[k]) for k in _USER_KEYS if _name(fields.get(k))), "")
    drafts: list[EpisodeDraft] = []
    for number, (turn, line) in enumerate(turns, start=1):
        if not isinstance(turn, dict):
            got = type(turn).__name__
            where = f"turn {number} (line {line})"
            raise InputError(file.path, f"{where}: expected an object, not {got}")
        turn_id = _first_id(turn) or f"turn-{number}"
        raw = turn.get("content")
        if raw is None:
            raw = turn.get("text")
        if type(raw) is str:
            text, tool_only = raw, False
        else:
            if raw is None and isinstance(turn.get("tool_calls"), list):
                # OpenAI style: an assistant turn that only calls tools has content null.
                raw = [{"type": "tool_call", **_call(c)} for c in turn["tool_calls"]]
            if raw is None:
                raise InputError(
                    file.path,
                    f"{_where(number, turn_id, line)}: missing content (expected 'content' or "
                    "'text')",
                )
            extracted = _text_of(raw)
            if extracted is None:
                raise InputError(
                    file.path,
                    f"{_where(number, turn_id, line)}: content must be a string or a list of "
                    "text parts",
                )
            text, tool_only = extracted
        content = normalise(text)
        if not is_episode_text(content):
            continue
        stamp = turn.get("timestamp")
        if stamp is None:
            for key in _TIME_KEYS:
                stamp = turn.get(key)
                if stamp is not None and stamp != "":
                    break
        try:
            occurred_at: datetime | None = parse_timestamp(stamp)
        except ValueError as exc:
            raise InputError(file.path, f"{_where(number, turn_id, line)}: {exc}") from None
        kind, actor, tags = _speaker(turn, assistant, user, tool_only)
        drafts.append(
            EpisodeDraft(
                content=content,
                kind=kind,
                actor=actor,
                locator={"path": file.path, "turn_id": turn_id, "line": line},
                occurred_at=occurred_at,
                tags=tags,
            )
        )
    return drafts


def _speaker(
    turn: dict, assistant: str, user: str, tool_only: bool
) -> tuple[str, str, tuple[str, ...]]:
    """Return (kind, actor, tags) from role/speaker/sender/author and optional name."""
    role = ""
    name = turn.get("name")
    name = name.strip() if type(name) is str else ""
    for key in ROLE_KEYS:
        value = turn.get(key)
        if value is None:
            continue
        if type(value) is str:
            word = value.strip()
            if not word:
                continue
            if word.lower() in _ROLE_WORDS:
                role = role or word.lower()
            else:
                # A proper name ("Caroline"): the person speaking, a user unless a role says
                # otherwise.
                name = name or word
        elif isinstance(value, dict):  # {"author": {"role": "user", "name": "ana"}}
            role = role or _name(value.get("role")).lower()
            name = name or _name(value.get("name"))
    if role in TOOL_ROLES or (tool_only and role not in SYSTEM_ROLES):
        tool = _name(turn.get("tool_name")) or (name if role in TOOL_ROLES else "")
        tags = (f"tool:{tool}",) if tool else ()
        return "tool_call", actor_id("agent", assistant or "assistant"), tags
    if role in SYSTEM_ROLES:
        return "chat_turn", "system", ()
    if role in AGENT_ROLES:
        agent = name or _name(turn.get("model")) or assistant or "assistant"
        return "chat_turn", actor_id("agent", agent), ()
    return "chat_turn", actor_id("user", name or user or "unknown"), ()
