"""Bad input: requests generated from the API's own OpenAPI schema (schemathesis).

Expected: every answer is a deliberate one (2xx, or a 4xx with a JSON message), never a
500, whatever the body, query or path parameters hold. The project slug is held fixed so
the fuzzing reaches past the 404 for an unknown project.
"""

from __future__ import annotations

import traceback

import pytest
import schemathesis
from django.core.signals import got_request_exception, request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given, settings

from api.services import token_create
from tests.dreaming_data import seed


@pytest.fixture
def api_schema(db, project, alice):
    # As Django's test client does: the test's transaction must outlive each request.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def agent(project, alice):
    seed(project)
    _, text = token_create(
        project=project, name="fuzz", scopes=("read", "write-events", "review"), actor=alice
    )
    return project.slug, text


def test_no_generated_request_gets_a_500(api_schema, agent, request):
    slug, token = agent
    answered: dict[int, int] = {}
    crashes: list[str] = []

    def keep(sender, request, **kwargs):
        crashes.append(traceback.format_exc())

    got_request_exception.connect(keep)
    request.addfinalizer(lambda: got_request_exception.disconnect(keep))
    # Each operation in turn (schemathesis's pytest plugin does not load under pytest 9).
    for result in api_schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=20, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def fuzz(case):
            if case.path_parameters and "slug" in case.path_parameters:
                case.path_parameters["slug"] = slug
            # Each request in a savepoint of its own, as each runs in autocommit in
            # production: a refused write must not leave the test's transaction aborted
            # (PostgreSQL) for the requests after it.
            with transaction.atomic():
                response = case.call(headers={"Authorization": f"Bearer {token}"})
            answered[response.status_code] = answered.get(response.status_code, 0) + 1
            assert response.status_code < 500, (case.method, case.formatted_path, crashes[-1:])
            if response.status_code >= 400:
                assert response.json()["message"]

        fuzz()
    # The fuzzing reached past authentication and validation, too.
    assert any(200 <= code < 300 for code in answered), answered
    assert sum(answered.values()) >= 100
