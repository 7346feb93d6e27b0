"""One access helper per object type: "not yours" is 404, "read-only" is 403.

Every view and API call goes through these, so a project's existence never leaks to
outsiders and a role check is never forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.http import Http404

from llmwiki.models import ROLE_RANK, SECURITY_RANK, Membership, Project, Role, SecurityClass


def role_in(user: AbstractBaseUser | AnonymousUser, project: Project) -> str | None:
    """The user's role in the project; superusers are maintainers everywhere, and a
    deactivated account has none (its sessions and tokens act for it no more)."""
    if not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser:
        return Role.MAINTAINER
    membership = Membership.objects.filter(user=user, project=project).only("role").first()
    return membership.role if membership else None


def has_role(user: AbstractBaseUser | AnonymousUser, project: Project, role: str) -> bool:
    actual = role_in(user, project)
    return actual is not None and ROLE_RANK[actual] >= ROLE_RANK[role]


def projects_for(user: AbstractBaseUser) -> QuerySet[Project]:
    if not user.is_active:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user)


class Do(StrEnum):
    """What a member may do in a project. `PERMISSIONS` says which role each needs; views,
    the API, the command line, templates and navigation all ask it."""

    READ = "read"  # pages, claims, episodes, candidates, runs, conflicts (text by clearance)
    INGEST = "ingest"  # upload files, record events
    REVIEW = "review"  # the queue, review actions, conflict resolution, retracting a claim
    DREAM = "dream"  # trigger, preview and backfill sweeps
    EXPORT = "export"  # build, list and download exports; the wizard
    AUDIT = "audit"  # the audit log
    DECIDE_SENSITIVE = "decide_sensitive"  # approve restricted or PII-flagged material
    ROLLBACK = "rollback"  # roll a page back to an earlier revision
    QUARANTINE = "quarantine"  # release or discard quarantined material
    SETTINGS = "settings"  # project settings, dreaming policy, API tokens, dashboards
    ERASE = "erase"  # erase a source everywhere it went
    ACCEPT_BASELINE = "accept_baseline"  # make an imported handoff bundle the baseline


PERMISSIONS: dict[Do, str] = {
    Do.READ: Role.VIEWER,
    Do.INGEST: Role.CONTRIBUTOR,
    Do.REVIEW: Role.REVIEWER,
    Do.DREAM: Role.REVIEWER,
    Do.EXPORT: Role.REVIEWER,
    Do.AUDIT: Role.REVIEWER,
    Do.DECIDE_SENSITIVE: Role.MAINTAINER,
    Do.ROLLBACK: Role.MAINTAINER,
    Do.QUARANTINE: Role.MAINTAINER,
    Do.SETTINGS: Role.MAINTAINER,
    Do.ERASE: Role.MAINTAINER,
    Do.ACCEPT_BASELINE: Role.MAINTAINER,
}


def may(role: str | None, action: Do) -> bool:
    """Whether a member with `role` (None: not a member) may do `action`."""
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[PERMISSIONS[action]]


def can(user: AbstractBaseUser | AnonymousUser, project: Project, action: Do) -> bool:
    return may(role_in(user, project), action)


def refusal(action: Do, role: str | None, project: Project) -> str:
    """Why `role` may not do `action`, in words."""
    needed = PERMISSIONS[action]
    return f"This needs the {needed} role on {project.name}; you are {role or 'not a member'}."


def get_project_for(user: AbstractBaseUser, slug: str, action: Do = Do.READ) -> Project:
    """Load a project the user belongs to and may do `action` in, else 404 / 403.

    Puts the caller's role on the project (`user_role`) and what it allows (`can`, a dict
    by action name), from which templates decide which controls and links to show; the
    services check again.
    """
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404("No such project")
    actual = role_in(user, project)
    if actual is None:
        raise Http404("No such project")
    if not may(actual, action):
        raise PermissionDenied(refusal(action, actual, project))
    project.user_role = actual
    project.can = {a.value: may(actual, a) for a in Do}
    return project


# --- Clearance: who may read which text ---------------------------------------------------
#
# The one place that decides whether a member may read an episode's or a candidate's text.
# Views and templates ask `withheld()`; the review gates ask `is_sensitive()`.

# Statuses whose text waits for a maintainer's decision (or was refused by one).
HELD_STATUSES = frozenset({"quarantined", "discarded"})
# Flags that make text sensitive, and that approved memory inherits from its evidence.
SENSITIVE_FLAG_PREFIXES = ("pii:", "secret:")


def is_sensitive(security_class: str, flags: Iterable[str]) -> bool:
    """Restricted, PII-flagged or secret-flagged material."""
    return security_class == SecurityClass.RESTRICTED or any(
        f.startswith(SENSITIVE_FLAG_PREFIXES) for f in flags
    )


@dataclass(frozen=True)
class Labels:
    """What clearance looks at: security class, flags, status. Episodes and candidates
    carry these fields themselves; `Labels.strictest` combines several (a conflict side)."""

    security_class: str = SecurityClass.INTERNAL
    flags: tuple[str, ...] = ()
    status: str = "active"

    @classmethod
    def of(cls, item: Any) -> Labels:
        """Read the labels of a model row, or of a dict (a preview run's JSON)."""
        if isinstance(item, Labels):
            return item
        if isinstance(item, Mapping):
            get = item.get
        else:

            def get(name: str, default: Any = None) -> Any:
                return getattr(item, name, default)

        return cls(
            get("security_class") or SecurityClass.INTERNAL,
            tuple(get("flags") or ()),
            get("status") or "active",
        )

    @classmethod
    def strictest(cls, items: Iterable[Any]) -> Labels:
        security, flags, status = SecurityClass.INTERNAL, set(), "active"
        for item in items:
            if item is None:
                continue
            labels = cls.of(item)
            if SECURITY_RANK.get(labels.security_class, 0) > SECURITY_RANK[security]:
                security = labels.security_class
            flags.update(labels.flags)
            if labels.status in HELD_STATUSES:
                status = labels.status
        return cls(security, tuple(sorted(flags)), status)


def highest(items: Iterable[Any]) -> Labels:
    """The highest security class of `items` and their PII and secret flags: what a page
    section carries from its claims."""
    security, flags = SecurityClass.PUBLIC, set()
    for item in items:
        labels = Labels.of(item)
        if SECURITY_RANK.get(labels.security_class, 2) > SECURITY_RANK[security]:
            security = labels.security_class
        flags.update(f for f in labels.flags if f.startswith(SENSITIVE_FLAG_PREFIXES))
    return Labels(security, tuple(sorted(flags)))


def inherited(given: Labels, evidence: Iterable[Any]) -> Labels:
    """What a claim carries: restricted when any of its evidence is, and every PII and
    secret flag of its evidence, so reviewed text is never readable by more people than
    what it rests on. Public versus internal stays the reviewer's call on the claim's own
    words (`given`), which is what exports to a public audience read."""
    from_evidence = highest(evidence)
    security = given.security_class
    if SECURITY_RANK.get(from_evidence.security_class, 2) > SECURITY_RANK[SecurityClass.INTERNAL]:
        security = from_evidence.security_class
    return Labels(security, tuple(sorted({*given.flags, *from_evidence.flags})))


def clearance_needed(project: Project, item: Any) -> str:
    """The least role that may read `item`'s text in `project`."""
    labels = Labels.of(item)
    if labels.status in HELD_STATUSES:
        return Role.MAINTAINER
    if is_sensitive(labels.security_class, labels.flags):
        return project.restricted_clearance
    return Role.VIEWER


def withheld(project: Project, item: Any, role: str | None = None) -> str:
    """Why `item`'s text is withheld from the caller, or "" when they may read it.

    `role` defaults to the caller's role that `get_project_for` put on the project.
    """
    role = role if role is not None else getattr(project, "user_role", None)
    needed = clearance_needed(project, item)
    if role is not None and ROLE_RANK[role] >= ROLE_RANK[needed]:
        return ""
    labels = Labels.of(item)
    if labels.status in HELD_STATUSES:
        return f"Text withheld: {labels.status} material is shown to maintainers only."
    return (
        "Text withheld: restricted or PII-flagged material needs "
        f"the {needed} role on this project."
    )


def withheld_by_id(project: Project, items: Iterable[Any], role: str | None = None) -> dict:
    """{pk: reason} for those of `items` (claims, episodes…) the caller may not read."""
    return {item.pk: why for item in items if (why := withheld(project, item, role))}


def _sensitive(rows: QuerySet) -> tuple[QuerySet, Q]:
    """`rows` (anything with `security_class` and `flags`) and the condition that picks
    the restricted or PII- or secret-flagged ones."""
    rows = rows.annotate(_flags_text=Cast("flags", TextField()))
    # Flags are a JSON list; its text form holds each flag quoted.
    condition = Q(security_class=SecurityClass.RESTRICTED)
    for prefix in SENSITIVE_FLAG_PREFIXES:
        condition |= Q(_flags_text__contains=f'"{prefix}')
    return rows, condition


def readable_only(project: Project, rows: QuerySet, role: str | None = None) -> QuerySet:
    """Narrow `rows` (episodes or claims) to those whose text the caller may read.

    Used under a text search: searching withheld text would answer "does it contain X?".
    """
    role = role if role is not None else getattr(project, "user_role", None)
    rank = ROLE_RANK[role] if role is not None else -1
    if rank < ROLE_RANK[Role.MAINTAINER]:
        rows = rows.exclude(status__in=HELD_STATUSES)
    if rank < ROLE_RANK[project.restricted_clearance]:
        rows, condition = _sensitive(rows)
        rows = rows.exclude(condition)
    return rows
