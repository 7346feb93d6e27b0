"""One access helper per object type: "not yours" is 404, "read-only" is 403.

Every view and API call goes through these, so a project's existence never leaks to
outsiders and a role check is never forgotten.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from llmwiki.models import ROLE_RANK, Membership, Project, Role


def role_in(user: AbstractBaseUser | AnonymousUser, project: Project) -> str | None:
    """The user's role in the project; superusers are maintainers everywhere."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.MAINTAINER
    membership = Membership.objects.filter(user=user, project=project).only("role").first()
    return membership.role if membership else None


def has_role(user: AbstractBaseUser | AnonymousUser, project: Project, role: str) -> bool:
    actual = role_in(user, project)
    return actual is not None and ROLE_RANK[actual] >= ROLE_RANK[role]


def projects_for(user: AbstractBaseUser) -> QuerySet[Project]:
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user)


def get_project_for(user: AbstractBaseUser, slug: str, role: str = Role.VIEWER) -> Project:
    """Load a project the user belongs to with at least `role`, else 404 / 403."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404("No such project")
    actual = role_in(user, project)
    if actual is None:
        raise Http404("No such project")
    if ROLE_RANK[actual] < ROLE_RANK[role]:
        raise PermissionDenied(f"This needs the {role} role on {project.name}; you are {actual}.")
    # Templates decide which controls to show from these; the services check again.
    project.user_role = actual
    project.can_review = ROLE_RANK[actual] >= ROLE_RANK[Role.REVIEWER]
    project.can_maintain = actual == Role.MAINTAINER
    return project
