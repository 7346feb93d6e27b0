"""Claude Code sessions: `~/.claude/projects/<project>/<session>.jsonl`.

The shape, from public descriptions of the files Claude Code writes (no official schema
exists): the notes of jwhenry28/claude-code-visualizer (docs/claude-code-project-notes.md),
oneryalcin/agent-schemas (claude-code/README.md, session schemas for v2.0.76 and v2.1.1)
and rpmessner/til (neovim/claude-code-stores-history-in-jsonl.md). One JSON object a line;
`type` is `user`, `assistant`, `summary`, `system`, `file-history-snapshot` or
`queue-operation`; conversation lines carry `uuid`, `parentUuid`, `timestamp`,
`sessionId`, `cwd`, `gitBranch` and `message` {`role`, `content`}, where content is a
string or a list of `text`, `thinking`, `tool_use` and `tool_result` blocks.

Each text block is a chat turn; each tool call and each tool result is an episode of
kind tool_call (results tagged `tool_result`, long ones trimmed, saying so). Thinking
blocks, summaries and bookkeeping lines are not the conversation and are skipped.
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

LINE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
_CONVERSATION = frozenset({"user", "assistant"})
AGENT = "agent:claude-code"
USER = "user:unknown"


def sniff(value: object) -> bool:
    """A Claude Code line: a known `type` with a session or message id beside it."""
    return (
        isinstance(value, dict)
        and text(value.get("type")) in LINE_TYPES
        and any(k in value for k in ("sessionId", "leafUuid", "uuid", "messageId"))
        and "payload" not in value
    )


def block_text(block: dict) -> str:
    """The text of a tool_use or tool_result block, as one readable line of evidence."""
    kind = block.get("type")
    if kind == "tool_use":
        arguments = block.get("input", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        name = text(block.get("name"))
        return f"[tool_use{' ' + name if name else ''}] {arguments}"
    content = block.get("content")
    if isinstance(content, list):
        content = "\n\n".join(text(part.get("text")) for part in content if isinstance(part, dict))
    elif not isinstance(content, str):
        content = "" if content is None else json.dumps(content, ensure_ascii=False)
    prefix = "[tool_result error]" if block.get("is_error") is True else "[tool_result]"
    return f"{prefix} {content}"


def parse_claude_code(file: TextFile) -> list[EpisodeDraft]:
    """Turn a Claude Code session into chat turns and tool_call episodes."""
    drafts: list[EpisodeDraft] = []
    for row, line in jsonl_objects(file):
        if text(row.get("type")) not in _CONVERSATION or row.get("isMeta") is True:
            continue
        message = row.get("message")
        if not isinstance(message, dict):
            raise InputError(file.path, f"line {line}: a {row['type']} line without a message")
        try:
            occurred_at, zone = timestamp_and_zone(row.get("timestamp"))
        except ValueError as exc:
            raise InputError(file.path, f"line {line}: {exc}") from None
        role = text(message.get("role")) or row["type"]
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise InputError(
                file.path, f"line {line}: message content must be a string or a list of blocks"
            )
        locator = {"path": file.path, "lines": [line, line]}
        for key, field in (
            ("session", "sessionId"),
            ("turn_id", "uuid"),
            ("parent", "parentUuid"),
            ("branch", "gitBranch"),
            ("cwd", "cwd"),
        ):
            if text(row.get(field)):
                locator[key] = row[field]
        if zone:
            locator["zone"] = zone
        sidechain = ("sidechain",) if row.get("isSidechain") is True else ()
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = text(block.get("type"))
            if kind == "text":
                body, omitted = text(block.get("text")), ""
                episode_kind = "chat_turn"
                actor = AGENT if role == "assistant" else USER
                tags = sidechain
            elif kind in ("tool_use", "tool_result"):
                body, omitted = trim_output(block_text(block))
                episode_kind, actor = "tool_call", AGENT
                name = text(block.get("name"))
                tags = (*sidechain, kind, *((f"tool:{name}",) if name else ()))
            else:
                continue  # thinking, images: not the conversation's text
            body = normalise(body)
            if not is_episode_text(body):
                continue
            block_locator = dict(locator)
            if text(block.get("id") or block.get("tool_use_id")):
                block_locator["call_id"] = block.get("id") or block.get("tool_use_id")
            drafts.append(
                EpisodeDraft(
                    content=body,
                    kind=episode_kind,
                    actor=actor,
                    locator=block_locator,
                    occurred_at=occurred_at,
                    tags=tags,
                    omitted=omitted,
                )
            )
    return drafts
