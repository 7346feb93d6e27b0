"""What a reviewer may do to a candidate, declared once as data.

The `reviews` app declares the actions (`reviews/registry.py`) and registers them here at
start-up, so the candidate model can offer them (`Candidate.get_actions`, as Wagtail's
workflow models do) without this app importing the one above it. Every front end reads
this registry: the web panel's buttons and keyboard keys, its form view, the JSON API's
route and schema, the `review` command's flags, and the audit labels (`label` is the
stored `Review.Action` label).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmwiki.access import Do

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from dreaming.models import Candidate


@dataclass(frozen=True)
class Decision:
    """What a front end hands to an action: the reviewer's input, whichever way it came."""

    note: str = ""
    edited_text: str | None = None
    as_edited: bool = False  # the reviewer means the edited text (else an edit is refused)
    section: str | None = None
    claim_id: int | None = None
    sensitive_confirmed: bool = False


@dataclass(frozen=True)
class Outcome:
    status: str  # the candidate's status after the action
    message: str  # the confirmation, in words
    claim: Any = None  # the claim an approval or merge wrote


# Decision fields, each with how the command line and the API name and describe it.
FIELDS: dict[str, tuple[str, str]] = {
    "note": ("--note", "the note; for a rejection, the reason"),
    "edited_text": ("--text", "approve the text as edited to this"),
    "section": ("--section", "the wiki section the claim goes in"),
    "claim_id": ("--claim", "the approved claim to merge into"),
    "sensitive_confirmed": (
        "--confirm-sensitive",
        "confirm you read restricted or PII-flagged content (as the web checkbox)",
    ),
}


@dataclass(frozen=True)
class ReviewAction:
    name: str  # the Review.Action value: web URL segment, API path, command-line flag
    label: str  # button text and audit label
    perform: Callable[[Candidate, AbstractBaseUser, Any, Decision], Outcome]
    fields: tuple[str, ...] = ("note",)  # the Decision fields it reads
    permission: Do = Do.REVIEW
    key: str = ""  # Shift+key presses the button on the candidate panel
    style: str = ""  # "primary" for the main button, "" otherwise
    needs_note: bool = False  # the key focuses the note first (a rejection says why)
    # "edited": shown once the text was edited; "unedited": until then; "": always.
    shown: str = ""
    everywhere: bool = True  # False: a web-only variant of another action
    offered: Callable[[Candidate], bool] = lambda candidate: True
    help: str = ""


_REGISTRY: dict[str, ReviewAction] = {}


def register(action: ReviewAction) -> ReviewAction:
    _REGISTRY[action.name] = action
    return action


def get(name: str) -> ReviewAction | None:
    return _REGISTRY.get(name)


def all_actions(*, everywhere_only: bool = False) -> list[ReviewAction]:
    """The actions in declaration order (the order of the buttons)."""
    return [a for a in _REGISTRY.values() if a.everywhere or not everywhere_only]


def offered_to(candidate: Candidate, user: AbstractBaseUser) -> list[ReviewAction]:
    """The actions `user` may take on `candidate` now: none when they would be refused."""
    from llmwiki import access

    if not candidate.is_open:
        return []
    role = access.role_in(user, candidate.project)
    if candidate.is_sensitive and not access.may(role, Do.DECIDE_SENSITIVE):
        return []
    return [a for a in all_actions() if access.may(role, a.permission) and a.offered(candidate)]


@contextmanager
def registered(action: ReviewAction) -> Iterator[ReviewAction]:
    """Register `action` for the length of a block (tests add an action this way)."""
    before = dict(_REGISTRY)
    register(action)
    try:
        yield action
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(before)
