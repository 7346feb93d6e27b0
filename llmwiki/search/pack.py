"""What a retrieval returns and who asks: the `Caller`, each `Hit` and the `ContextPack`
they are packed into, with the one-line rendering agents read."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from datetime import time as dt_time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from llmwiki.access import HELD_STATUSES, Labels, is_sensitive, role_in
from llmwiki.models import ROLE_RANK, Claim, Project, Role
from llmwiki.search.documents import CLAIM, PAGE

CONFLICT = "conflict"


class RetrievalError(ValueError):
    """Bad input to a retrieval (empty query, limit out of range); `argument` names which."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        super().__init__(message)


@dataclass(frozen=True)
class Caller:
    """Who retrieves: cleared for restricted or PII-flagged text (`sensitive`), and for
    quarantined or discarded material, which only maintainers read (`maintainer`)."""

    actor: str
    sensitive: bool = False
    maintainer: bool = False

    @classmethod
    def for_role(cls, actor: str, project: Project, role: str | None) -> Caller:
        """A caller holding `role` in `project` (None: no role, nothing sensitive)."""
        cleared = role is not None and ROLE_RANK[role] >= ROLE_RANK[project.restricted_clearance]
        return cls(actor=actor, sensitive=cleared, maintainer=role == Role.MAINTAINER)

    @classmethod
    def for_user(cls, user: AbstractBaseUser, project: Project) -> Caller:
        return cls.for_role(f"user:{user.get_username()}", project, role_in(user, project))

    @classmethod
    def operator(cls, actor: str = "cli") -> Caller:
        """The machine's operator (the command line): reads what a maintainer reads."""
        return cls(actor=actor, sensitive=True, maintainer=True)

    def may_read(self, labels: Labels) -> bool:
        """The clearance rule of `llmwiki.access`, for a caller without a project role."""
        if labels.status in HELD_STATUSES:
            return self.maintainer
        return self.sensitive or not is_sensitive(labels.security_class, labels.flags)


@dataclass
class Hit:
    kind: str  # the layer: "claim", "page", "conflict" or "episode"
    id: int | str
    text: str
    score: float
    trust_label: str
    security_class: str
    page_target: str = ""
    occurred_at: datetime | None = None
    actor: str = ""
    claim_ids: list[int] = field(default_factory=list)
    evidence_ids: list[int] = field(default_factory=list)
    locators: list[dict[str, Any]] = field(default_factory=list)
    section: str = ""  # a claim's section on its page
    context: str = ""  # a claim's page section, when the section matched too
    status: str = ""  # a conflict's (open, escalated); a claim's now, when asked as of a date
    disputed: list[int] = field(default_factory=list)  # open conflicts a claim is a side of
    valid: dict[str, Any] = field(default_factory=dict)  # a claim's two time axes

    @property
    def line(self) -> str:
        return f"- {self.text} [{_citation(self)}]"

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.line)

    def as_json(self) -> dict[str, Any]:
        out = {
            "kind": self.kind,
            "layer": self.kind,
            "id": self.id,
            "text": self.text,
            "score": round(self.score, 4),
            "trust_label": self.trust_label,
            "security_class": self.security_class,
            "page_target": self.page_target,
            "actor": self.actor,
            "occurred_at": self.occurred_at.isoformat() if self.occurred_at else None,
            "citations": {"claim_ids": self.claim_ids, "episode_ids": self.evidence_ids},
            "locators": self.locators,
        }
        if self.kind == CLAIM:
            out.update(
                section=self.section,
                context=self.context,
                disputed=self.disputed,
                status=self.status or Claim.Status.APPROVED,
                valid=self.valid,
            )
        elif self.kind == CONFLICT:
            out["status"] = self.status
        return out


@dataclass
class ContextPack:
    """Hits that fit the budget, in rank order, one line each."""

    query: str
    hits: list[Hit]
    budget: int | None
    tokens: int
    dropped: int = 0  # hits that did not fit the budget
    as_of: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "budget": self.budget,
            "tokens": self.tokens,
            "dropped": self.dropped,
            "items": [h.as_json() for h in self.hits],
        }

    def as_text(self) -> str:
        return render_pack(self.hits)


def parse_as_of(text: str) -> datetime:
    """A date (YYYY-MM-DD: the end of that day, UTC) or an ISO 8601 moment (UTC unless it
    names its offset), as `retrieve(as_of=...)` takes it."""
    text = (text or "").strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime.combine(day, dt_time.max, tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise RetrievalError(
            "as_of", f"as_of {text!r} is not a date (YYYY-MM-DD) or an ISO 8601 date and time"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def estimate_tokens(text: str) -> int:
    """About four characters a token, the usual rule for English with BPE tokenizers."""
    return max(1, math.ceil(len(text) / 4))


def render_pack(hits: list[Hit]) -> str:
    """One line a hit, best first, each saying what it is and what it rests on."""
    return "".join(h.line + "\n" for h in hits)


def _citation(h: Hit) -> str:
    if h.kind == CLAIM:
        parts = [f"claim {h.id}, reviewed"]
        if h.status and h.status != Claim.Status.APPROVED:
            parts[0] += f", {h.status} since"
        if h.evidence_ids:
            parts.append("evidence " + ", ".join(f"#{i}" for i in h.evidence_ids))
        parts.append(h.page_target + (f" § {h.section}" if h.section else ""))
        if h.disputed:
            parts.append("disputed: " + ", ".join(f"conflict {i}" for i in h.disputed))
        return "; ".join(parts)
    if h.kind == PAGE:
        return f"page {h.page_target}, reviewed"
    if h.kind == CONFLICT:
        return f"conflict {h.id}, {h.status}, unresolved"
    return f"episode {h.id}, {h.trust_label}"
