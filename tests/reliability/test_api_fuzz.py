"""Bad input: requests generated from the API's own OpenAPI schema (schemathesis).

Expected: every answer is a deliberate one (2xx, or a 4xx with a JSON message), never a
500, whatever the body, query or path parameters hold: both values the schema allows and
values it does not; and every answer fits the response schema its route declares. The
project slug is held fixed, and path ids are often the ids of real candidates, claims,
runs, pages and exports (with the candidate's current version in a review body), so the
fuzzing reaches past the 404s into the services' gates and writes. Afterwards nothing
half-written is left: every episode has its source, every claim its page.
"""

from __future__ import annotations

import traceback

import pytest
import schemathesis
from django.core.signals import got_request_exception, request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from api.services import token_create
from dreaming import services as dreaming
from dreaming.models import Candidate, DreamRun
from llmwiki.ingest import collect_paths, ingest_files
from llmwiki.management.commands.load_demo import CORPUS
from llmwiki.models import Claim, Episode, Export, Page, PageRevision
from reviews import actions
from reviews.exports import ExportOptions, export_create

# Examples per operation and generation mode. `make test` runs the "repeatable" profile
# (derandomized, the same examples every run) and stays well under a minute on both
# databases; HYPOTHESIS_PROFILE=explore searches afresh with five times as many.
EXAMPLES = {GenerationMode.POSITIVE: 40, GenerationMode.NEGATIVE: 15}
# Every answer's body fits the schema declared for its status, with the headers declared.
ANSWER_CHECKS = [
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
]


def examples(mode: GenerationMode) -> int:
    return max(EXAMPLES[mode], hypothesis_settings.default.max_examples * EXAMPLES[mode] // 100)


@pytest.fixture
def api_schema(db):
    # As Django's test client does: the test's transaction must outlive each request.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def memory(project, alice):
    """The demo corpus swept once: candidates and conflicts, a claim on a page, an export."""
    files = [f for f in collect_paths([CORPUS]) if f.path != "SEEDED.md"]
    ingest_files(project=project, files=files, actor="system")
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    first = Candidate.objects.filter(project=project, status=Candidate.Status.PROPOSED).first()
    actions.candidate_approve(
        candidate=first, reviewer=alice, seen=actions.form_state(first), note="checked"
    )
    export_create(project=project, options=ExportOptions("startup-packet", "internal"), actor=alice)
    return project


def known_values(project) -> dict[str, list]:
    """Real values for each path parameter, read afresh as the fuzzing changes things.

    Candidates awaiting review come first: Hypothesis leans towards the first choices.
    """

    def ids(model) -> list[int]:
        return list(
            model.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
        )

    candidates = Candidate.objects.filter(project=project).values_list("pk", "status")
    waiting = Candidate.Status.PROPOSED
    exports = Export.objects.filter(project=project).order_by("pk")
    return {
        "candidate_id": [pk for pk, _ in sorted(candidates, key=lambda c: (c[1] != waiting, c[0]))],
        "run_id": ids(DreamRun),
        "object_id": [*ids(Claim), *ids(Candidate), *ids(Episode)],
        "export_id": [e.pk for e in exports],
        "key": list(
            Page.objects.filter(project=project).order_by("key").values_list("key", flat=True)
        ),
        "name": sorted({f["name"] for e in exports for f in e.files}),
    }


def often(data, label: str) -> bool:
    """True three times in four: a real row most of the time, a generated value otherwise."""
    return data.draw(st.integers(0, 3), label=label) > 0


def aim(case, project, data) -> None:
    """Point some of the generated path ids at real rows, and review bodies at their version."""
    params = case.path_parameters or {}
    if "slug" in params:
        params["slug"] = project.slug
    known = known_values(project)
    for name in params:
        if known.get(name) and often(data, f"real {name}"):
            params[name] = data.draw(st.sampled_from(known[name]), label=name)
    candidate = (
        Candidate.objects.filter(project=project, pk=params["candidate_id"]).first()
        if isinstance(params.get("candidate_id"), int)
        else None
    )
    if candidate and isinstance(case.body, dict) and often(data, "current version"):
        state = actions.form_state(candidate)
        case.body["candidate_version"] = state.candidate_version
        case.body["page_revision_id"] = state.page_revision_id
        claims = list(
            Claim.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
        )
        if claims and "claim" in case.body:
            case.body["claim"] = data.draw(st.sampled_from(claims), label="claim")
    if case.query and "revision" in case.query and often(data, "real revision"):
        numbers = sorted(set(PageRevision.objects.values_list("number", flat=True))) or [1]
        case.query["revision"] = data.draw(st.sampled_from(numbers), label="revision")


def test_no_generated_request_gets_a_500_or_an_answer_off_its_schema(
    api_schema, memory, alice, settings, request
):
    # The write rate has its own tests; here it would turn every later write into a 429.
    settings.LLMWIKI_API_WRITES_PER_MINUTE = 1_000_000
    _, token = token_create(
        project=memory, name="fuzz", scopes=("read", "write-events", "review"), actor=alice
    )
    answered: dict[int, int] = {}
    crashes: list[str] = []

    def keep(sender, request, **kwargs):
        crashes.append(traceback.format_exc())

    got_request_exception.connect(keep)
    request.addfinalizer(lambda: got_request_exception.disconnect(keep))
    # Each operation in turn: schemathesis's pytest plugin does not load under pytest 9.
    for result in api_schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
            @hypothesis_settings(
                max_examples=examples(mode),
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )
            def fuzz(case, data):
                aim(case, memory, data)
                # Each request in a savepoint of its own, as each runs in autocommit in
                # production: a refused write must not leave the test's transaction
                # aborted (PostgreSQL) for the requests after it.
                with transaction.atomic():
                    response = case.call(headers={"Authorization": f"Bearer {token}"})
                answered[response.status_code] = answered.get(response.status_code, 0) + 1
                assert response.status_code < 500, (
                    case.method,
                    case.formatted_path,
                    case.query,
                    case.body,
                    crashes[-1:],
                )
                if response.status_code >= 400:
                    assert response.json()["message"]
                # The body fits the schema declared for its status (raises naming the field).
                case.validate_response(response, checks=ANSWER_CHECKS)

            fuzz()
    # The fuzzing reached past authentication and validation, into the writes too.
    assert {200, 201, 202} <= set(answered), answered
    assert sum(answered.values()) >= 500, answered
    # Nothing half-written: no episode without its source, no claim without its page.
    assert not Episode.objects.filter(project=memory, source__isnull=True).exclude(
        kind__in=Episode.BOOKKEEPING_KINDS
    )
    assert not Claim.objects.filter(project=memory, page__isnull=True)
