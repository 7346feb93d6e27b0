"""One permission table (`llmwiki.access.PERMISSIONS`) decides what each role may do; views,
services, the API and navigation ask it, so no page offers a member a link that answers 403."""

from __future__ import annotations

import re
from collections import deque
from itertools import pairwise

import pytest
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki import access
from llmwiki.access import PERMISSIONS, Do
from llmwiki.models import ROLE_RANK, Role
from llmwiki.services import membership_set
from reviews import actions
from tests.dreaming_data import seed


def test_every_action_needs_a_role_and_roles_only_add_powers():
    assert set(PERMISSIONS) == set(Do)
    ranked = sorted(ROLE_RANK, key=ROLE_RANK.get)
    for lower, higher in pairwise(ranked):
        assert {a for a in Do if access.may(lower, a)} <= {a for a in Do if access.may(higher, a)}
    assert not any(access.may(None, a) for a in Do)


@pytest.mark.parametrize("role", list(Role))
def test_the_project_carries_what_the_role_may_do(client, project, alice, bob, role):
    membership_set(project=project, user=bob, role=role, actor="system")
    loaded = access.get_project_for(bob, project.slug)
    assert loaded.can == {a.value: ROLE_RANK[role] >= ROLE_RANK[PERMISSIONS[a]] for a in Do}


@pytest.fixture
def lived_in(project, alice, bob):
    """A project with episodes, a sweep, a claim, a conflict and an export."""
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    staging = Candidate.objects.get(project=project, text__contains="db-staging-2")
    actions.candidate_approve(candidate=staging, reviewer=bob, seen=actions.form_state(staging))
    return project


LINK = re.compile(r'href="(/p/[^"#?]+)[^"]*"')
# Links that do something when followed are forms, not links; these only read.
LIMIT = 120


def crawl(client, start: str) -> dict[str, int]:
    """Follow every link inside the project from `start`; the status of each page."""
    seen: dict[str, int] = {}
    todo = deque([start])
    while todo and len(seen) < LIMIT:
        path = todo.popleft()
        if path in seen:
            continue
        response = client.get(path)
        seen[path] = response.status_code
        if response.status_code == 200 and response.get("Content-Type", "").startswith("text/html"):
            for link in LINK.findall(response.content.decode()):
                if link not in seen:
                    todo.append(link)
    return seen


@pytest.mark.parametrize("role", [Role.VIEWER, Role.CONTRIBUTOR, Role.REVIEWER])
def test_no_page_offers_a_member_a_link_that_answers_403(client, lived_in, carol, role):
    membership_set(project=lived_in, user=carol, role=role, actor="system")
    client.force_login(carol)
    statuses = crawl(client, reverse("project_home", args=[lived_in.slug]))
    assert len(statuses) > 10  # the crawl reached the project's pages
    refused = {path: status for path, status in statuses.items() if status >= 400}
    assert not refused, refused
