"""OpenAI Codex CLI sessions: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

The shape comes from the Codex CLI's rollout writer (openai/codex,
codex-rs/core/src/rollout/recorder.rs: each line a `RolloutLine` {`timestamp`, `type`,
`payload`} with UTC timestamps, the first a `session_meta`) and a recorded session
published by jnarowski/agentcmd (.agent/research/codex/format-comparison.md, Codex CLI
0.46). `response_item` payloads are `message` (role and `input_text`/`output_text`
parts), `reasoning` (encrypted), `function_call`/`custom_tool_call` and their
`…_output`; `event_msg` and `turn_context` lines repeat what the response items hold.
Rollouts older than `session_meta` open with a bare {`id`, `timestamp`, `instructions`}
line followed by bare response items; both are read.
"""

from __future__ import annotations

import json

from llmwiki.errors import InputError

from .base import (
    EpisodeDraft,
    TextFile,
    is_episode_text,
    normalise,
    timestamp_and_zone,
    trim_output,
)
from .jsonfiles import jsonl_objects, text

_WRAPPED = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
# Codex injects these into the first user message of every session; they are the harness
# talking, not the person.
_BOILERPLATE = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
AGENT = "agent:codex"


def sniff(value: object) -> bool:
    """A rollout line: a typed {timestamp, type, payload}, or the legacy session header."""
    if not isinstance(value, dict):
        return False
    if text(value.get("type")) in _WRAPPED and isinstance(value.get("payload"), dict):
        return "timestamp" in value
    return "instructions" in value and "id" in value and "timestamp" in value


def _item_text(item: dict) -> str:
    kind = text(item.get("type"))
    if kind == "message":
        parts = item.get("content")
        if isinstance(parts, str):
            return parts
        return "\n\n".join(text(part.get("text")) for part in parts or () if isinstance(part, dict))
    if kind in _CALLS:
        arguments = item.get("arguments", item.get("input", item.get("action", "")))
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        name = text(item.get("name")) or ("shell" if kind == "local_shell_call" else "")
        return f"[{kind}{' ' + name if name else ''}] {arguments}"
    output = item.get("output")
    if isinstance(output, str):
        # Shell outputs are themselves JSON: {"output": "...", "metadata": {...}}.
        try:
            inner = json.loads(output)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and isinstance(inner.get("output"), str):
            metadata = inner.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            suffix = f" (exit {code})" if isinstance(code, int) else ""
            return f"[{kind}{suffix}] {inner['output']}"
    elif output is not None:
        output = json.dumps(output, ensure_ascii=False)
    return f"[{kind}] {output or ''}"


def parse_codex(file: TextFile) -> list[EpisodeDraft]:
    """Turn a Codex rollout into chat turns and tool_call episodes."""
    drafts: list[EpisodeDraft] = []
    session = ""
    for row, line in jsonl_objects(file):
        kind = text(row.get("type"))
        if kind in _WRAPPED:
            item = row.get("payload")
            if not isinstance(item, dict):
                raise InputError(file.path, f"line {line}: a {kind} line without a payload")
        elif "instructions" in row and "id" in row:
            kind, item = "session_meta", row
        else:
            kind, item = "response_item", row  # a legacy rollout's bare item
        if kind == "session_meta":
            session = text(item.get("id")) or session
            continue
        if kind != "response_item":
            continue
        item_kind = text(item.get("type"))
        role = text(item.get("role"))
        if item_kind == "message":
            episode_kind = "chat_turn"
            actor = {"assistant": AGENT, "user": "user:unknown"}.get(role, "system")
        elif item_kind in _CALLS or item_kind in _OUTPUTS:
            episode_kind, actor = "tool_call", AGENT
        else:
            continue  # reasoning is encrypted; web searches and others carry no text
        if episode_kind == "chat_turn":
            body, omitted = _item_text(item), ""
            if body.lstrip().startswith(_BOILERPLATE):
                continue
        else:
            body, omitted = trim_output(_item_text(item))
        body = normalise(body)
        if not is_episode_text(body):
            continue
        try:
            occurred_at, zone = timestamp_and_zone(row.get("timestamp"))
        except ValueError as exc:
            raise InputError(file.path, f"line {line}: {exc}") from None
        locator: dict = {"path": file.path, "lines": [line, line]}
        if session:
            locator["session"] = session
        call_id = text(item.get("call_id")) or text(item.get("id"))
        if call_id:
            locator["turn_id"] = call_id
        if zone:
            locator["zone"] = zone
        name = text(item.get("name"))
        tags = ()
        if episode_kind == "tool_call":
            tags = ("tool_result",) if item_kind in _OUTPUTS else ()
            tags += (f"tool:{name}",) if name else ()
        drafts.append(
            EpisodeDraft(
                content=body,
                kind=episode_kind,
                actor=actor,
                locator=locator,
                occurred_at=occurred_at,
                tags=tags,
                omitted=omitted,
            )
        )
    return drafts
