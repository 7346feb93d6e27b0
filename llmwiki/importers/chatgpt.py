"""ChatGPT data export: `conversations.json`.

The shape, from public parsers of the export: mitkury/chatgpt-export-parser
(docs/chatgpt-data-export-format.md) and the typed models of several viewers (a
conversation {`id`/`conversation_id`, `title`, `create_time`, `mapping`,
`current_node`}; a node {`id`, `message`, `parent`, `children`}; a message {`id`,
`author` {`role`, `name`}, `create_time`, `content` {`content_type`, `parts` | `text`},
`metadata`}). The file is a list of conversations.

A conversation's mapping is a tree: every regenerated answer and edited question is a
branch. Only the branch that ends at `current_node` (what the person last saw) is
imported, walked from that node up to the root and then read in order.
"""

from __future__ import annotations

from llmwiki.errors import InputError

from .base import EpisodeDraft, TextFile, is_episode_text, normalise, parse_timestamp
from .jsonfiles import document, text

AGENT = "agent:chatgpt"
_ROLES = {"user": "user:unknown", "assistant": AGENT, "system": "system"}


def _is_conversation(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("mapping"), dict)


def sniff(value: object) -> bool:
    """A list of conversations (or one) each holding a `mapping` tree."""
    if isinstance(value, list):
        return bool(value) and _is_conversation(value[0])
    return _is_conversation(value) and "current_node" in value


def _branch(conversation: dict, where: str) -> list[tuple[str, dict]]:
    """The (node id, node) pairs from the root to current_node, in reading order."""
    mapping = conversation["mapping"]
    node_id = conversation.get("current_node")
    if not isinstance(node_id, str) or node_id not in mapping:
        # No current node recorded: follow the last child from the root, as the app shows.
        roots = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("parent")]
        node_id = roots[0] if roots else None
        while node_id is not None:
            node = mapping.get(node_id)
            children = node.get("children") if isinstance(node, dict) else None
            last = children[-1] if isinstance(children, list) and children else None
            if not isinstance(last, str) or last not in mapping:
                break
            node_id = last
    path: list[tuple[str, dict]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise InputError(where, f"node {node_id!r}: the mapping's parents form a loop")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise InputError(where, f"node {node_id!r}: expected an object")
        path.append((node_id, node))
        node_id = node.get("parent")
    path.reverse()
    return path


def _message_text(message: dict) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return text(content)
    parts = content.get("parts")
    if isinstance(parts, list):
        # Image and file parts are dicts (asset pointers): nothing to read as text.
        return "\n\n".join(part for part in parts if isinstance(part, str))
    return text(content.get("text"))


def parse_chatgpt(file: TextFile) -> list[EpisodeDraft]:
    """One chat turn per message on each conversation's current branch."""
    data = document(file)
    conversations = data if isinstance(data, list) else [data]
    drafts: list[EpisodeDraft] = []
    for number, conversation in enumerate(conversations, start=1):
        if not _is_conversation(conversation):
            raise InputError(file.path, f"conversation {number}: expected an object with a mapping")
        conversation_id = text(conversation.get("conversation_id")) or text(conversation.get("id"))
        title = text(conversation.get("title"))
        where = f"{file.path} conversation {conversation_id or number}"
        for node_id, node in _branch(conversation, where):
            message = node.get("message")
            if not isinstance(message, dict):
                continue  # the root node holds no message
            metadata = message.get("metadata")
            if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
                continue
            body = normalise(_message_text(message))
            if not is_episode_text(body):
                continue
            author = message.get("author")
            role = text(author.get("role")) if isinstance(author, dict) else ""
            name = text(author.get("name")) if isinstance(author, dict) else ""
            try:
                occurred_at = parse_timestamp(
                    message.get("create_time") or conversation.get("create_time")
                )
            except ValueError as exc:
                raise InputError(where, f"node {node_id!r}: {exc}") from None
            locator = {"path": file.path, "conversation": conversation_id, "turn_id": node_id}
            if title:
                locator["section"] = title
            kind, actor, tags = "chat_turn", _ROLES.get(role, "user:unknown"), ()
            if role == "tool":
                kind, actor = "tool_call", AGENT
                tags = (f"tool:{name}",) if name else ()
            drafts.append(
                EpisodeDraft(
                    content=body,
                    kind=kind,
                    actor=actor,
                    locator=locator,
                    occurred_at=occurred_at,
                    tags=tags,
                )
            )
    return drafts
