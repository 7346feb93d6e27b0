"""API tokens: create (shown once), revoke, authenticate, and the bounded rate of writes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from api.models import ApiToken
from llmwiki.access import PERMISSIONS, Do, can, may, role_in
from llmwiki.errors import InputError, Refused
from llmwiki.models import ROLE_RANK, AuditEvent, Project, Role

TOKEN_PREFIX = "lw"  # noqa: S105 (the public start of every token, not a secret)
WRITE_WINDOW = timedelta(minutes=1)
# last_used_at is bookkeeping: writing it on every read would queue readers behind
# SQLite's single writer.
LAST_USED_GRAIN = timedelta(minutes=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def token_create(
    *, project: Project, name: str, scopes: Iterable[str], actor: AbstractBaseUser
) -> tuple[ApiToken, str]:
    """Create a token acting as `actor`; return the row and the token text (shown once)."""
    name = (name or "").strip()
    if not name:
        raise InputError("name", "is empty; name the agent or tool that will use the token")
    if len(name) > 100:
        raise InputError("name", "is longer than 100 characters")
    scopes = sorted(set(scopes))
    unknown = [s for s in scopes if s not in ApiToken.Scope.values]
    if unknown or not scopes:
        raise InputError(
            "scopes",
            f"choose one or more of {', '.join(ApiToken.Scope.values)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else ""),
        )
    if not can(actor, project, Do.SETTINGS):
        raise Refused("creating API tokens needs the maintainer role", 403)
    prefix = secrets.token_hex(6)
    text = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        project=project,
        name=name,
        prefix=prefix,
        key_hash=_digest(text),
        scopes=scopes,
        created_by=actor,
    )
    AuditEvent.record(
        actor=actor, action="api_token.create", obj=token, after={"name": name, "scopes": scopes}
    )
    return token, text


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: AbstractBaseUser) -> ApiToken:
    """Revoke a token for good; revoking twice changes nothing."""
    if not can(actor, token.project, Do.SETTINGS):
        raise Refused("revoking API tokens needs the maintainer role", 403)
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.revoked_by = actor
        token.save(update_fields=["revoked_at", "revoked_by"])
        AuditEvent.record(actor=actor, action="api_token.revoke", obj=token)
    return token


class Unauthorized(Exception):
    """No valid token: the API answers 401."""


def token_authenticate(text: str) -> ApiToken:
    """The active token `text` names, or Unauthorized saying why."""
    parts = (text or "").strip().split("_", 2)
    # A NUL is in no token we issue, and PostgreSQL refuses it even in a lookup.
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX or "\x00" in text:
        raise Unauthorized("malformed API token; expected lw_<prefix>_<secret>")
    token = ApiToken.objects.select_related("project", "created_by").filter(prefix=parts[1]).first()
    if token is None or not hmac.compare_digest(token.key_hash, _digest(text.strip())):
        raise Unauthorized("unknown API token")
    if token.revoked_at is not None:
        raise Unauthorized(f"API token {token.prefix} was revoked")
    if not token.created_by.is_active:
        raise Unauthorized(f"API token {token.prefix} acts for a deactivated account")
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_GRAIN:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


@dataclass(frozen=True)
class Caller:
    """Who is asking: the token, its project, the person it acts as, the role for text."""

    token: ApiToken
    project: Project
    user: AbstractBaseUser
    role: str

    def actor(self, agent: str = "") -> str:
        """How episodes and audit rows name the caller: the agent, the token, the person."""
        name = " ".join((agent or self.token.name).split())[:60]
        return f"agent:{name} (API token {self.token.prefix} of {self.user.get_username()})"


class NotFound(Exception):
    """The project or object is not the token's: 404, as for an outsider on the web."""


def caller_for(token: ApiToken, slug: str, scope: str | None) -> Caller:
    """Check the token against the project in the request and the scope it needs.

    `scope=None` leaves the scope to the operation (a review action audits its refusal).

    A token can do the smaller of what its scopes allow and what its creator's current role
    allows: a scope works only while the creator holds the role the web asks for the same
    work. The role that decides which text is readable is the creator's, capped at viewer
    unless the token has the review scope: a read token never sees restricted or PII text.
    """
    if token.project.slug != slug:
        raise NotFound("No such project")
    actual = role_in(token.created_by, token.project)
    if actual is None:
        raise Unauthorized(f"API token {token.prefix} acts for someone no longer on the project")
    if scope is not None and not token.allows(scope):
        raise Refused(
            f"this needs an API token with the {scope} scope; "
            f"this one has {', '.join(token.scopes)}",
            403,
        )
    if scope is not None and not may(actual, ApiToken.SCOPE_DOES[scope]):
        needed = PERMISSIONS[ApiToken.SCOPE_DOES[scope]]
        raise Refused(
            f"the {scope} scope needs its creator to hold the {needed} role; "
            f"{token.created_by.get_username()} is now {actual}",
            403,
        )
    role = actual
    if not token.allows(ApiToken.Scope.REVIEW) and ROLE_RANK[actual] > ROLE_RANK[Role.VIEWER]:
        role = Role.VIEWER
    project = token.project
    project.user_role = role
    return Caller(token=token, project=project, user=token.created_by, role=role)


class TooManyWrites(Refused):
    """429: the token's window is full; `retry_after` is the wait the message names."""

    def __init__(self, limit: int, retry_after: int) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"write rate limit: {limit} writes a minute per token; retry in {retry_after} s", 429
        )


def write_allowed(token: ApiToken) -> None:
    """Count one write against the token's window; TooManyWrites once the window is full."""
    limit = settings.LLMWIKI_API_WRITES_PER_MINUTE
    now = timezone.now()
    with transaction.atomic():
        row = ApiToken.objects.select_for_update().get(pk=token.pk)
        if row.window_started_at is None or now - row.window_started_at >= WRITE_WINDOW:
            ApiToken.objects.filter(pk=row.pk).update(window_started_at=now, window_writes=1)
            return
        if row.window_writes >= limit:
            wait = int((row.window_started_at + WRITE_WINDOW - now).total_seconds()) + 1
            raise TooManyWrites(limit, wait)
        ApiToken.objects.filter(pk=row.pk).update(window_writes=F("window_writes") + 1)


def paged(rows, order: tuple[str, ...], *, limit: int, offset: int, out) -> dict[str, Any]:
    """One page of `rows` in `order` as the API lists things: count, window, `out` of each."""
    window = rows.order_by(*order)[offset : offset + limit]
    return {
        "count": rows.count(),
        "limit": limit,
        "offset": offset,
        "items": [out(row) for row in window],
    }
