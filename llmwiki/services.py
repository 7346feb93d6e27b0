"""Write paths for projects and memberships. Each is one transaction with an audit row."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from llmwiki.models import (
    AuditEvent,
    Episode,
    EpisodeRelabel,
    Membership,
    Page,
    Project,
    Role,
)
from llmwiki.models.audit import actor_label
from llmwiki.vocabulary import PAGE_TITLES, STANDARD_PAGES


@transaction.atomic
def project_create(
    *,
    slug: str,
    name: str,
    actor: Any,
    description: str = "",
    authority: str = Project.Authority.REVIEWED,
    owner: AbstractBaseUser | None = None,
) -> Project:
    """Create a project with its standard pages; `owner` becomes its first maintainer."""
    project = Project(slug=slug, name=name, description=description, authority=authority)
    project.full_clean()
    project.save()
    for key in STANDARD_PAGES:
        Page.objects.create(project=project, key=key, title=PAGE_TITLES[key], owner=owner)
    AuditEvent.record(
        actor=actor, action="project.create", obj=project, after={"slug": slug, "name": name}
    )
    if owner is not None:
        membership_set(project=project, user=owner, role=Role.MAINTAINER, actor=actor)
    return project


@transaction.atomic
def membership_set(
    *, project: Project, user: AbstractBaseUser, role: str, actor: Any
) -> Membership:
    """Give `user` the `role` on `project` (creating or changing the membership)."""
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    membership, created = Membership.objects.get_or_create(
        project=project, user=user, defaults={"role": role}
    )
    before = None if created else {"role": membership.role}
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    AuditEvent.record(
        actor=actor,
        action="membership.set",
        obj=membership,
        project=project,
        before=before,
        after={"user": user.get_username(), "role": role},
    )
    return membership


@transaction.atomic
def project_set_dreaming(*, project: Project, enabled: bool, actor: Any) -> Project:
    before = {"dreaming_enabled": project.dreaming_enabled}
    project.dreaming_enabled = enabled
    project.save(update_fields=["dreaming_enabled"])
    AuditEvent.record(
        actor=actor,
        action="project.dreaming",
        obj=project,
        before=before,
        after={"dreaming_enabled": enabled},
    )
    return project


@transaction.atomic
def episode_set_status(*, episode: Episode, status: str, actor: Any, note: str = "") -> Episode:
    """Release or discard a quarantined episode (the one state an episode has)."""
    allowed = {Episode.Status.ACTIVE, Episode.Status.DISCARDED}
    if status not in allowed:
        raise ValueError(f"status must be one of {', '.join(allowed)}")
    locked = Episode.objects.select_for_update().get(pk=episode.pk)
    if locked.status != Episode.Status.QUARANTINED:
        raise ValueError(f"episode #{episode.pk} is {locked.status}, not quarantined")
    Episode.objects.filter(pk=episode.pk)._unchecked_update(status=status)
    action = "episode.release" if status == Episode.Status.ACTIVE else "episode.discard"
    AuditEvent.record(
        actor=actor,
        action=action,
        obj=episode,
        before={"status": locked.status},
        after={"status": status},
        note=note,
    )
    episode.status = status
    return episode


@transaction.atomic
def project_update(*, project: Project, changes: dict[str, Any], actor: Any) -> Project:
    """Apply validated settings changes and audit what moved."""
    before = {k: getattr(Project.objects.get(pk=project.pk), k) for k in changes}
    for key, value in changes.items():
        setattr(project, key, value)
    project.full_clean()
    project.save(update_fields=list(changes))
    moved = {k: v for k, v in changes.items() if before[k] != v}
    if moved:
        AuditEvent.record(
            actor=actor,
            action="project.update",
            obj=project,
            before={k: before[k] for k in moved},
            after=moved,
        )
    return project


@transaction.atomic
def episode_relabel(
    *, episodes: list[Episode], memory_type: str, actor: Any, wizard_run_id: int | None = None
) -> int:
    """Correct the memory type of `episodes`: one relabel row and one audit row each.

    The episode keeps its automatic label; the relabel row is the label in force (a sweep
    reads it). Episodes already carrying `memory_type` are left alone; returns how many moved.
    """
    if memory_type not in Episode.MemoryType.values:
        raise ValueError(
            f"unknown memory type {memory_type!r}; choose {', '.join(Episode.MemoryType.values)}"
        )
    current = EpisodeRelabel.in_force(episode_id__in=[e.pk for e in episodes])
    moving = [e for e in episodes if current.get(e.pk, e.memory_type) != memory_type]
    label = actor_label(actor)
    EpisodeRelabel.objects.bulk_create(
        EpisodeRelabel(
            episode=e,
            memory_type=memory_type,
            previous=current.get(e.pk, e.memory_type),
            actor=label,
            wizard_run_id=wizard_run_id,
        )
        for e in moving
    )
    AuditEvent.objects.bulk_create(
        AuditEvent.build(
            actor=actor,
            action="episode.relabel",
            obj=e,
            before={"memory_type": current.get(e.pk, e.memory_type), "original": e.memory_type},
            after={"memory_type": memory_type},
        )
        for e in moving
    )
    return len(moving)
