"""Slack workspace exports: a folder or zip of `users.json`, `channels.json` and
`<channel>/<YYYY-MM-DD>.json` message arrays.

The shape is Slack's own description of its exports ("How to read Slack data exports",
slack.com/help/articles/220556107): `channels.json`, `users.json` (`org_users.json` on
Enterprise Grid), `groups.json`, `dms.json`, `mpims.json`, `integration_logs.json`, and
a folder per conversation holding one JSON array of messages per day; a message is
{`type`: "message", `user`, `text`, `ts`} with optional `thread_ts`, `subtype`,
`edited`, `attachments`, `files`; a user {`id`, `name`, `real_name`, `tz`, `profile`
{`display_name`, `real_name`}}.

User ids become names (in the actor and in `<@U…>` mentions); a thread's replies follow
the message they answer, across day files; join, leave and topic notices are dropped.
"""

from __future__ import annotations

import posixpath
import re

from llmwiki.errors import InputError

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    basename,
    clean_path,
    is_episode_text,
    normalise,
    parse_timestamp,
)
from .jsonfiles import document, objects, text

USERS = ("users.json", "org_users.json")
CONVERSATIONS = ("channels.json", "groups.json", "dms.json", "mpims.json")
METADATA = frozenset((*USERS, *CONVERSATIONS, "integration_logs.json", "canvases.json"))
DAY_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.json$")
_NOTICES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "group_join",
        "group_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "group_topic",
        "group_purpose",
        "group_name",
        "channel_archive",
        "channel_unarchive",
        "group_archive",
        "group_unarchive",
        "pinned_item",
        "unpinned_item",
        "bot_add",
        "bot_remove",
    }
)
_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


def sniff(value: object) -> bool:
    """One day of a channel: a list of Slack message objects."""
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], dict)
        and "ts" in value[0]
        and value[0].get("type") == "message"
    )


def is_root_file(path: str) -> bool:
    """Whether `path` names a file that marks the root of a Slack export."""
    return basename(path).lower() in CONVERSATIONS


def belongs(root: str, path: str) -> bool:
    """Whether `path` is part of the export rooted at `root` (metadata or a day file)."""
    cleaned = clean_path(path)
    folder = posixpath.dirname(cleaned)
    if folder == root:
        return basename(cleaned).lower() in METADATA
    return posixpath.dirname(folder) == root and DAY_FILE.search(basename(cleaned)) is not None


def _people(files: list[TextFile]) -> dict[str, dict]:
    people: dict[str, dict] = {}
    for file in files:
        if basename(file.path).lower() in USERS:
            data = document(file)
            if not isinstance(data, list):
                raise InputError(file.path, "expected a JSON list of users")
            for user in objects(data):
                if text(user.get("id")):
                    people[user["id"]] = user
    return people


def _name(user: dict | None, fallback: str) -> str:
    if not user:
        return fallback
    profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
    return (
        text(profile.get("display_name"))
        or text(user.get("real_name"))
        or text(profile.get("real_name"))
        or text(user.get("name"))
        or fallback
    )


def parse_slack(files: list[TextFile]) -> list[EpisodeDraft]:
    """One chat turn per message; a thread's replies right after the message they answer."""
    people = _people(files)
    names = {uid: _name(user, uid) for uid, user in people.items()}

    def mention(m: re.Match[str]) -> str:
        return "@" + names.get(m.group(1), m.group(1))

    channels: dict[str, list[tuple[tuple[str, str, int], TextFile, dict, int]]] = {}
    for file in files:
        if basename(file.path).lower() in METADATA:
            continue  # names and channel lists: read above, never content
        data = document(file)
        if not isinstance(data, list):
            raise InputError(file.path, "expected a JSON list of messages")
        channel = posixpath.basename(posixpath.dirname(clean_path(file.path))) or "channel"
        for number, message in enumerate(data, start=1):
            if not isinstance(message, dict):
                raise InputError(file.path, f"message {number}: expected an object")
            ts = message.get("ts")
            ts = ts if isinstance(ts, str) else str(ts) if isinstance(ts, int | float) else ""
            thread = text(message.get("thread_ts")) or ts
            # Sorting by thread root, then time, keeps a thread's replies (which may be
            # in a later day's file) with the message that started it.
            key = (thread, ts, number)
            channels.setdefault(channel, []).append((key, file, message, number))
    drafts: list[EpisodeDraft] = []
    for channel, messages in channels.items():
        messages.sort(key=lambda item: _order(item[0]))
        for (thread, ts, _), file, message, number in messages:
            if text(message.get("subtype")) in _NOTICES:
                continue
            body = _MENTION.sub(mention, text(message.get("text")))
            for attachment in objects(message.get("attachments")):
                if text(attachment.get("text")):
                    body += "\n\n" + attachment["text"]
            body = normalise(body)
            if not is_episode_text(body):
                continue
            try:
                occurred_at = parse_timestamp(ts or None)
            except ValueError as exc:
                raise InputError(file.path, f"message {number}: {exc}") from None
            uid = text(message.get("user"))
            if uid:
                actor = actor_id("user", names.get(uid, uid))
            else:
                bot = text(message.get("username")) or text(message.get("bot_id")) or "bot"
                actor = actor_id("agent", bot)
            locator = {"path": file.path, "channel": channel, "turn_id": ts or f"message-{number}"}
            if thread != ts:
                locator["thread"] = thread
            zone = text((people.get(uid) or {}).get("tz"))
            if zone:
                locator["zone"] = zone
            drafts.append(
                EpisodeDraft(
                    content=body,
                    kind="chat_turn",
                    actor=actor,
                    locator=locator,
                    occurred_at=occurred_at,
                    tags=(f"channel:{channel}",),
                )
            )
    return drafts


def _order(key: tuple[str, str, int]) -> tuple[float, float, int]:
    def number(value: str) -> float:
        try:
            return float(value)
        except ValueError:
            return 0.0

    thread, ts, position = key
    return number(thread), number(ts), position
