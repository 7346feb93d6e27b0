"""mbox mailboxes (`.mbox`): one episode per e-mail.

The format is the one RFC 4155 registers (application/mbox): messages in RFC 5322 form,
each opened by a "From " separator line at the start of the file or after a blank line,
with body lines that begin "From " escaped as ">From " (mboxrd escapes ">From " again).
Each message is read with Python's email package; its text/plain part (else its HTML
with the tags dropped) is the body.

An episode is the subject and the body without the quoted reply ("> …" lines and the
"On … wrote:" line that introduces them): the quoted text is already an episode of the
message it came from. Sender, date (UTC, with the sender's offset kept) and subject are
kept; In-Reply-To keeps the thread.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
from datetime import UTC

from llmwiki.errors import InputError

from .base import (
    EpisodeDraft,
    TextFile,
    actor_id,
    is_episode_text,
    normalise,
    offset_of,
    split_lines,
)

SUFFIXES = (".mbox", ".mbx")
_ESCAPED_FROM = re.compile(r"^>(>*From )")
_ATTRIBUTION = re.compile(r".*\b(?:wrote|schrieb|a écrit)\s*:$")
_TAG = re.compile(r"<[^>]+>")


def sniff_text(text: str) -> bool:
    return text.lstrip("\ufeff").startswith("From ")


def _messages(lines: list[str]) -> list[tuple[int, int, list[str]]]:
    """(first line, last line, lines) of each message, separator line excluded."""
    starts = [
        i
        for i, line in enumerate(lines)
        if line.startswith("From ") and (i == 0 or not lines[i - 1].strip())
    ]
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        body = [_ESCAPED_FROM.sub(r"\1", line) for line in lines[start + 1 : end]]
        while body and not body[-1].strip():
            body.pop()
            end -= 1
        out.append((start + 1, max(start + 1, end), body))
    return out


def _unquoted(body: str) -> str:
    kept: list[str] = []
    for line in body.split("\n"):
        if line.startswith(">"):
            while kept and not kept[-1].strip():
                kept.pop()
            # The attribution line belongs to the quote it introduces.
            if kept and _ATTRIBUTION.match(kept[-1].strip()):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept)


def _body(message: email.message.EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    try:
        content = part.get_content()
    except (LookupError, ValueError, AssertionError):
        payload = part.get_payload(decode=True) or b""
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    return _TAG.sub("", content) if part.get_content_subtype() == "html" else content


def parse_mbox(file: TextFile) -> list[EpisodeDraft]:
    """One episode per message: subject and body, quoted replies left out."""
    lines = split_lines(file.text)
    if not sniff_text(file.text):
        raise InputError(file.path, "not an mbox: the first line must be a 'From ' separator")
    drafts: list[EpisodeDraft] = []
    for first, last, body_lines in _messages(lines):
        message = email.message_from_string("\n".join(body_lines), policy=email.policy.default)
        subject = str(message.get("subject", "") or "").strip()
        text = normalise(_unquoted(_body(message)))
        content = normalise(f"Subject: {subject}\n\n{text}" if subject else text)
        if not is_episode_text(text or subject):
            continue
        name, address = email.utils.parseaddr(str(message.get("from", "") or ""))
        sender = name.strip() or address.split("@", 1)[0] or "unknown"
        locator: dict = {"path": file.path, "lines": [first, last]}
        message_id = str(message.get("message-id", "") or "").strip()
        if message_id:
            locator["turn_id"] = message_id
        reply_to = str(message.get("in-reply-to", "") or "").strip()
        if reply_to:
            locator["reply_to"] = reply_to
        occurred_at = None
        date = str(message.get("date", "") or "")
        if date:
            try:
                sent = email.utils.parsedate_to_datetime(date)
            except (TypeError, ValueError, IndexError):
                raise InputError(
                    file.path, f"line {first}: unreadable Date header {date!r}"
                ) from None
            if sent.tzinfo is None:
                sent = sent.replace(tzinfo=UTC)
            if offset_of(sent):
                locator["zone"] = offset_of(sent)
            occurred_at = sent.astimezone(UTC)
        drafts.append(
            EpisodeDraft(
                content=content,
                kind="chat_turn",
                actor=actor_id("user", sender),
                locator=locator,
                occurred_at=occurred_at,
                tags=("email",),
            )
        )
    return drafts
