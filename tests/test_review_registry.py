"""The review actions are declared once (`reviews/registry.py`, registered with
`dreaming.review_actions`); every front end lists what the registry holds, so an action
added there shows on the web, in the API and its schema, and in the command line."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from dreaming import review_actions
from dreaming import services as dreaming
from dreaming.models import Candidate
from dreaming.review_actions import Outcome, ReviewAction
from llmwiki.models import AuditEvent
from reviews.models import Review
from tests.api_data import bearer, post, url
from tests.dreaming_data import seed


@pytest.fixture
def staging(project) -> Candidate:
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return Candidate.objects.get(project=project, text__contains="db-staging-2")


def split(candidate, reviewer, seen, decision) -> Outcome:
    """A stand-in for a new action: it records that it ran, with what it was given."""
    AuditEvent.record(actor=reviewer, action="candidate.split", obj=candidate, note=decision.note)
    return Outcome("proposed", f"Split candidate #{candidate.pk}.")


SPLIT = ReviewAction(name="split", label="Split", perform=split, key="S", help="split it in two")


def test_every_stored_action_is_declared_once_with_its_label():
    declared = {a.name: a.label for a in review_actions.all_actions()}
    assert declared == {value: label for value, label in Review.Action.choices}


def test_every_action_reaches_the_web_the_api_schema_and_the_command_line(
    client, bob, project, staging
):
    client.force_login(bob)
    page = client.get(reverse("reviews:candidate", args=[project.slug, staging.pk])).content
    schema = client.get("/api/openapi.json").json()
    enum = next(
        p["schema"]["enum"]
        for p in schema["paths"]["/api/projects/{slug}/candidates/{candidate_id}/{action}"]["post"][
            "parameters"
        ]
        if p["name"] == "action"
    )
    for action in review_actions.all_actions():
        assert f'data-action="{action.name}"'.encode() in page
        assert f'data-key="{action.key}"'.encode() in page
        assert (action.name in enum) is action.everywhere
    assert enum == [a.name for a in review_actions.all_actions(everywhere_only=True)]


def test_an_action_added_to_the_registry_shows_everywhere_and_runs(
    client, bob, alice, project, staging, capsys
):
    with review_actions.registered(SPLIT):
        # The web: a button with its key, and the form view runs it.
        client.force_login(bob)
        panel = reverse("reviews:candidate", args=[project.slug, staging.pk])
        page = client.get(panel).content.decode()
        assert (
            'data-action="split"' in page and 'data-key="S"' in page and ">Split</button>" in page
        )
        posted = client.post(
            reverse("reviews:candidate_action", args=[project.slug, staging.pk, "split"]),
            {"candidate_version": staging.version, "note": "from the web"},
            follow=True,
        )
        assert f"Split candidate #{staging.pk}." in posted.content.decode()
        # The API: its schema lists it, and the route runs it.
        schema = client.get("/api/openapi.json").json()
        operation = schema["paths"]["/api/projects/{slug}/candidates/{candidate_id}/{action}"]
        assert "`split`: split it in two" in operation["post"]["description"]
        headers = bearer(project, alice, "read", "review")
        done = post(
            client,
            url(project, f"candidates/{staging.pk}/split"),
            {"candidate_version": staging.version, "note": "from the api"},
            headers,
        )
        assert done.status_code == 200, done.content
        # The command line: a flag of its own.
        call_command(
            "review", "--project", project.slug, "--candidate", str(staging.pk), "--split",
            "--as", "bob", "--note", "from the cli", "--json",
        )  # fmt: skip
        assert json.loads(capsys.readouterr().out)["action"] == "split"
    notes = AuditEvent.objects.filter(action="candidate.split").values_list("note", flat=True)
    assert sorted(notes) == ["from the api", "from the cli", "from the web"]
    # Gone with its registration.
    assert "split" not in [a.name for a in review_actions.all_actions()]


def test_an_action_needing_a_higher_role_is_not_offered_below_it(bob, alice, staging):
    from llmwiki.access import Do

    with review_actions.registered(
        ReviewAction(name="purge", label="Purge", perform=split, permission=Do.SETTINGS)
    ):
        assert "purge" not in staging.get_actions(bob)
        assert "purge" in staging.get_actions(alice)
