"""GitHub issue and pull-request threads as `gh issue view N --json …` prints them.

The shape is the GitHub CLI's JSON export (cli/cli, api/queries_issue.go and
api/queries_comments.go): an issue or PR {`number`, `title`, `body`, `author`
{`login`}, `createdAt`, `state` (OPEN, CLOSED, MERGED), `labels` [{`name`}], `comments`
[{`id`, `author` {`login`}, `authorAssociation`, `body`, `createdAt`, `url`}]}, from
`gh issue view N --json title,body,comments,author,createdAt,labels,state` (add
`number`/`url` for a better locator), or a list of them (`gh issue list --json …`).

The title and body are one episode, each comment another; the thread's state and labels
tag every episode, so a closed issue's episodes say it was closed.
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

_THREAD_KEYS = ("comments", "createdAt", "author", "state", "labels")


def _is_thread(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("title"), str)
        and "body" in value
        and any(k in value for k in _THREAD_KEYS)
    )


def sniff(value: object) -> bool:
    if isinstance(value, list):
        return bool(value) and _is_thread(value[0])
    return _is_thread(value)


def _login(value: object) -> str:
    return text(value.get("login")) if isinstance(value, dict) else ""


def _episode(
    file: TextFile, base: dict, tags: tuple[str, ...], post: dict, turn_id: str, body: str
) -> EpisodeDraft | None:
    content = normalise(body)
    if not is_episode_text(content):
        return None
    try:
        occurred_at, zone = timestamp_and_zone(post.get("createdAt"))
    except ValueError as exc:
        raise InputError(file.path, f"{base['thread']} {turn_id}: {exc}") from None
    locator = {**base, "turn_id": turn_id}
    if text(post.get("url")):
        locator["url"] = post["url"]
    if zone:
        locator["zone"] = zone
    return EpisodeDraft(
        content=content,
        kind="chat_turn",
        actor=actor_id("user", _login(post.get("author")) or "unknown"),
        locator=locator,
        occurred_at=occurred_at,
        tags=tags,
    )


def parse_github(file: TextFile) -> list[EpisodeDraft]:
    """The title and body of each thread as one episode, each comment as another."""
    data = document(file)
    threads = data if isinstance(data, list) else [data]
    drafts: list[EpisodeDraft | None] = []
    for index, thread in enumerate(threads, start=1):
        if not _is_thread(thread):
            raise InputError(
                file.path, f"thread {index}: expected an object with a title and a body"
            )
        number = thread.get("number")
        base = {
            "path": file.path,
            "thread": f"#{number}" if isinstance(number, int) else f"thread {index}",
        }
        state = text(thread.get("state")).lower()
        labels = (text(label.get("name")) for label in objects(thread.get("labels")))
        tags = ((f"state:{state}",) if state else ()) + tuple(f"label:{n}" for n in labels if n)
        title, body = text(thread["title"]).strip(), text(thread.get("body")).strip()
        drafts.append(
            _episode(file, base, tags, thread, "body", f"{title}\n\n{body}" if body else title)
        )
        for position, comment in enumerate(objects(thread.get("comments")), start=1):
            comment_id = text(comment.get("id")) or f"comment-{position}"
            drafts.append(
                _episode(file, base, tags, comment, comment_id, text(comment.get("body")))
            )
    return [d for d in drafts if d is not None]
