"""Discord channel exports written by DiscordChatExporter (its JSON format).

The shape is DiscordChatExporter's JSON writer (Tyrrrz/DiscordChatExporter,
DiscordChatExporter.Core/Exporting/JsonMessageWriter.cs): a root object {`guild`,
`channel` {`id`, `name`, `category`, …}, `dateRange`, `exportedAt`, `messages`,
`messageCount`}; each message {`id`, `type` (MessageKind: Default, Reply,
GuildMemberJoin, …), `timestamp` (ISO 8601 with the exporter's offset), `content`,
`author` {`id`, `name`, `nickname`, `isBot`}, `attachments`, `embeds`, `reference`
{`messageId`} for replies}.

Messages become chat turns; replies keep the id they answer; join, pin and rename
notices (system notifications) are dropped.
"""

from __future__ import annotations

from llmwiki.errors import InputError

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    is_episode_text,
    normalise,
    timestamp_and_zone,
)
from .jsonfiles import document, objects, text

# Message kinds that are conversation; the others are Discord's own notices.
_SPOKEN = frozenset({"Default", "Reply", "ThreadStarterMessage", ""})


def sniff(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("guild"), dict)
        and isinstance(value.get("channel"), dict)
        and isinstance(value.get("messages"), list)
    )


def _body(message: dict) -> str:
    lines = [text(message.get("content"))]
    for attachment in objects(message.get("attachments")):
        if text(attachment.get("fileName")):
            lines.append(f"[attachment {attachment['fileName']}]")
    for embed in objects(message.get("embeds")):
        for key in ("title", "description"):
            if text(embed.get(key)):
                lines.append(embed[key])
    return "\n\n".join(line for line in lines if line)


def parse_discord(file: TextFile) -> list[EpisodeDraft]:
    """One chat turn per message of the exported channel."""
    data = document(file)
    if not sniff(data):
        raise InputError(
            file.path, "not a DiscordChatExporter export: expected guild, channel and messages"
        )
    guild, channel = data["guild"], data["channel"]
    drafts: list[EpisodeDraft] = []
    for number, message in enumerate(data["messages"], start=1):
        if not isinstance(message, dict):
            raise InputError(file.path, f"message {number}: expected an object")
        if text(message.get("type")) not in _SPOKEN:
            continue
        body = normalise(_body(message))
        if not is_episode_text(body):
            continue
        message_id = text(message.get("id")) or f"message-{number}"
        try:
            occurred_at, zone = timestamp_and_zone(message.get("timestamp"))
        except ValueError as exc:
            raise InputError(file.path, f"message {message_id}: {exc}") from None
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        name = text(author.get("nickname")) or text(author.get("name")) or "unknown"
        actor = actor_id("agent" if author.get("isBot") is True else "user", name)
        locator = {
            "path": file.path,
            "guild": text(guild.get("name")),
            "channel": text(channel.get("name")) or text(channel.get("id")),
            "turn_id": message_id,
        }
        reference = message.get("reference")
        if isinstance(reference, dict) and text(reference.get("messageId")):
            locator["reply_to"] = reference["messageId"]
        if zone:
            locator["zone"] = zone
        drafts.append(
            EpisodeDraft(
                content=body,
                kind="chat_turn",
                actor=actor,
                locator=locator,
                occurred_at=occurred_at,
                tags=("reply",) if "reply_to" in locator else (),
            )
        )
    return drafts
