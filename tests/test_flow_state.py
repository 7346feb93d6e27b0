"""The review queue and the wizard leave the right state behind.

The queue sends a reviewer to what they may decide; the wizard's commit step ticks
nothing by itself; its preview and its sweep agree on what is new; a run is started only
by someone who can walk it, and resumes where it stands; an export is stale when the open
questions a rebuild would list have changed.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.models import SecurityClass
from llmwiki.vocabulary import export_kind_names
from reviews.exports import ExportOptions, export_create, export_document, export_folder
from reviews.exports.service import exports_for_list, stale_export_ids
from tests.dreaming_data import seed
from tests.export_data import build_wiki
from tests.test_views_review import action_data, url
from tests.test_views_wizard import make_run, step, upload
from tests.test_wizard_steps import commit_form, walked  # noqa: F401 (a fixture)
from wizard.models import WizardRun
from wizard.selectors import preview_outcome


@pytest.fixture
def dreamed(project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return project


def a_candidate(project, key, *, score, **fields):
    episode = project.episodes.filter(source__isnull=False).first()
    candidate = Candidate.objects.create(
        project=project,
        text=f"Planted fact {key}.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key=key,
        score=score,
        **fields,
    )
    CandidateEvidence.objects.create(candidate=candidate, episode=episode)
    return candidate


# --- 12. The review queue -----------------------------------------------------------------------


@pytest.fixture
def risky_first(dreamed):
    """The queue's top: restricted, then PII-flagged (maintainers only); then a plain fact."""
    restricted = a_candidate(
        dreamed, "restricted", score=0.99, security_class=SecurityClass.RESTRICTED
    )
    pii = a_candidate(dreamed, "pii", score=0.98, flags=["pii:email"])
    plain = a_candidate(dreamed, "plain", score=0.999)
    return restricted, pii, plain


def test_after_an_action_a_reviewer_goes_to_the_next_candidate_they_may_decide(
    client, bob, alice, dreamed, risky_first
):
    restricted, pii, plain = risky_first
    client.force_login(bob)
    # Bob decides the plain fact at the top of what he may decide; the queue's top is
    # the restricted one, which he may not.
    response = client.post(url("candidate_action", dreamed, plain.pk, "defer"), action_data(plain))
    assert response.status_code == 302
    landed = Candidate.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert landed.pk not in (restricted.pk, pii.pk, plain.pk)
    assert landed.get_actions(bob)
    # A maintainer goes to the riskiest, which is hers to decide.
    client.force_login(alice)
    response = client.post(
        url("candidate_action", dreamed, landed.pk, "defer"), action_data(landed)
    )
    assert response["Location"] == url("candidate", dreamed, restricted.pk)


def test_a_reviewer_with_nothing_left_to_decide_goes_back_to_the_queue(
    client, bob, dreamed, risky_first
):
    restricted, pii, plain = risky_first
    others = Candidate.objects.filter(project=dreamed).exclude(
        pk__in=[restricted.pk, pii.pk, plain.pk]
    )
    others.update(status=Candidate.Status.REJECTED)
    client.force_login(bob)
    response = client.post(url("candidate_action", dreamed, plain.pk, "defer"), action_data(plain))
    assert response["Location"] == url("queue", dreamed)


def test_the_queue_marks_what_needs_a_maintainer(client, bob, alice, dreamed, risky_first):
    restricted, pii, plain = risky_first
    client.force_login(bob)
    body = client.get(url("queue", dreamed)).content.decode()

    def row(candidate):
        start = body.index(f'data-href="{url("candidate", dreamed, candidate.pk)}"')
        return body[start : body.index("</tr>", start)]

    for sensitive in (restricted, pii):
        assert 'data-testid="needs-role"' in row(sensitive) and "needs maintainer" in row(sensitive)
    assert "needs-role" not in row(plain)
    client.force_login(alice)
    assert "needs-role" not in client.get(url("queue", dreamed)).content.decode()
    # The mark and the candidate page's buttons are one answer.
    assert not restricted.get_actions(bob) and plain.get_actions(bob)


# --- 13. The wizard's commit step ticks nothing by itself ------------------------------------


def ticked(page: str) -> list[str]:
    """The approve boxes that are checked on the commit page."""
    boxes = [tag for tag in page.split("<input")[1:] if 'name="approve"' in tag.split(">")[0]]
    return [tag for tag in boxes if " checked" in tag.split(">")[0]]


def test_the_commit_step_ticks_nothing_even_after_a_partial_commit(client, walked):  # noqa: F811
    page = client.get(step(walked, "commit")).content.decode()
    items, form = commit_form(walked)
    assert len(items) >= 2 and page.count('name="approve"') == len(items)
    assert ticked(page) == []
    first = items[0]
    only = {k: v for k, v in form.items() if k != "approve"} | {"approve": [first.pk]}
    client.post(step(walked, "commit"), only)
    first.refresh_from_db()
    assert first.status == "approved"
    page = client.get(step(walked, "commit")).content.decode()
    assert page.count('name="approve"') == len(items) - 1
    assert ticked(page) == []


# --- 22. Starting and resuming a wizard run --------------------------------------------------


def test_going_back_then_resuming_returns_to_the_furthest_step_shown(client, bob, project):
    client.force_login(bob)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=bob)
    client.post(step(run, "project"), {"project": project.slug, "boundary": "reviewed-memory"})
    client.get(step(run, "import"))
    client.get(step(run, "classify"))
    client.get(step(run, "project"))  # back, to look at what was chosen
    client.get(step(run, "import"))
    resume = reverse("wizard:resume", args=[run.pk])
    assert client.get(resume)["Location"] == step(run, "classify")
    listing = client.get(reverse("wizard:start")).content.decode()
    assert f'<a href="{step(run, "classify")}">Resume #{run.pk}</a>' in listing
    assert "3. Classify memory type" in listing


def test_a_viewer_is_told_the_role_a_run_needs_and_no_run_is_made(client, carol, project):
    client.force_login(carol)
    page = client.get(reverse("wizard:start"))
    assert page.status_code == 200
    assert b'data-testid="start-refusal"' in page.content
    assert b"Start a new run" not in page.content
    response = client.post(reverse("wizard:start"))
    assert response.status_code == 403
    assert b"needs the reviewer role" in response.content and b"Tidewater" in response.content
    assert not WizardRun.objects.exists()


def test_an_outsider_gets_404_and_no_run_is_made(client, mallory, project):
    client.force_login(mallory)
    assert client.post(reverse("wizard:start")).status_code == 404
    assert not WizardRun.objects.exists()


def test_a_run_left_from_before_explains_instead_of_an_empty_choice(client, carol, project):
    run = WizardRun.objects.create(user=carol)  # made before starting was refused
    client.force_login(carol)
    response = client.get(step(run, "project"))
    assert response.status_code == 403 and b"needs the reviewer role" in response.content


def test_a_reviewer_and_someone_who_may_create_projects_start_runs(client, bob, project, db):
    from tests.conftest import make_user

    client.force_login(bob)
    assert client.post(reverse("wizard:start")).status_code == 302
    admin = make_user("root", is_superuser=True, is_staff=True)  # in no project
    client.force_login(admin)
    assert client.post(reverse("wizard:start")).status_code == 302
    assert WizardRun.objects.count() == 2


# --- 15. Exports go stale when the open questions a rebuild would list change -----------------


@pytest.fixture
def exported(project, alice, settings, tmp_path):
    """One export of each kind for internal readers, and a receiver brief for the public."""
    settings.EXPORT_DIR = tmp_path / "exports"
    build_wiki(project, alice)
    made = {
        kind: export_create(project=project, options=ExportOptions(kind), actor=alice)
        for kind in export_kind_names()
    }
    made["public-brief"] = export_create(
        project=project, options=ExportOptions("receiver-brief", "public"), actor=alice
    )
    return made


def open_conflict(project, key="k2") -> Conflict:
    conflict = Conflict.objects.create(
        project=project, subject="worker host", kind="value", dedupe_key=key
    )
    ConflictSide.objects.create(conflict=conflict, position=1, text="The worker runs on tw-app-1.")
    ConflictSide.objects.create(conflict=conflict, position=2, text="The worker runs on tw-app-3.")
    return conflict


def stale_kinds(project, exported) -> set[str]:
    by_pk = {e.pk: kind for kind, e in exported.items()}
    return {by_pk[e.pk] for e in exports_for_list(project) if e.stale}


def test_a_new_open_question_makes_the_exports_that_would_list_it_stale(
    client, bob, project, exported, capsys, tmp_path
):
    assert stale_kinds(project, exported) == set()
    conflict = open_conflict(project)
    # The kinds that speak of open questions; the profile does not, and the public brief
    # would not list an internal question.
    assert stale_kinds(project, exported) == {"receiver-brief", "startup-packet", "handoff"}
    brief = exported["receiver-brief"]
    assert export_document(brief)["stale"] is True
    assert export_document(exported["system-profile"])["stale"] is False
    assert stale_export_ids([brief.pk, exported["public-brief"].pk]) == {brief.pk}
    # The Exports page says so too.
    client.force_login(bob)
    body = client.get(reverse("reviews:exports", args=[project.slug])).content.decode()
    card = body.split(f'data-testid="export-{brief.pk}"')[1].split("</tr>")[0]
    assert 'data-testid="stale"' in card
    # And `export --verify` on the brief's files, by the same rule and in words.
    call_command(
        "export", "--project", project.slug, "--verify", str(export_folder(brief)), "--json"
    )
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] and document["stale"] == [
        f"open questions it does not list: #{conflict.pk}"
    ]


def test_a_resolved_open_question_makes_the_exports_that_listed_it_stale(project, exported, capsys):
    listed = Conflict.objects.get(project=project, dedupe_key="k1")
    Conflict.objects.filter(pk=listed.pk).update(status=Conflict.Status.RESOLVED)
    assert stale_kinds(project, exported) == {"receiver-brief", "startup-packet", "handoff"}
    folder = export_folder(exported["handoff"])
    call_command("export", "--project", project.slug, "--verify", str(folder), "--json")
    assert json.loads(capsys.readouterr().out)["stale"] == [
        f"open questions no longer open: #{listed.pk}"
    ]


# --- 14. The wizard's preview and its sweep agree on what is new ------------------------------


def test_material_restating_a_waiting_candidate_adds_evidence_in_the_preview_and_the_sweep(
    client, bob, project, django_capture_on_commit_callbacks
):
    from tests.test_wizard_steps import GATEWAY

    seed(project, ["memory/2026-11-02.md"])  # material from before the run
    waiting = a_candidate(project, "gateway-before", score=0.5)
    Candidate.objects.filter(pk=waiting.pk).update(text="The API gateway runs on tw-gw-1.")
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run, ["memory/2026-11-04.md", "memory/2026-11-06.md", "memory/2026-11-09.md"])
    files = [SimpleUploadedFile(name, text.encode()) for name, text in GATEWAY.items()]
    client.post(step(run, "import"), {"files": files})
    before = set(Candidate.objects.values_list("pk", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(run, "preview"))
    run.refresh_from_db()
    outcome = preview_outcome(run)
    assert [i["adds_evidence_to"] for i in outcome["adds_evidence"]] == [waiting.pk]
    previewed = {i["text"] for i in outcome["proposed"] + outcome["deferred"] + outcome["blocked"]}
    assert previewed and "The API gateway runs on tw-gw-1." not in previewed
    page = client.get(step(run, "preview")).content.decode()
    assert 'data-testid="n-adds-evidence">1<' in page
    assert "adds evidence to <a href=" in page and f">#{waiting.pk}</a>" in page

    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(run, "proposals"))
    run.refresh_from_db()
    made = Candidate.objects.exclude(pk__in=before)
    # The sweep made what the preview said it would, and only that.
    assert {c.text for c in made} == previewed
    assert set(made.values_list("run__wizard_run_id", flat=True)) == {run.pk}
    assert waiting.episodes.filter(wizard_run_id=run.pk).exists()
    page = client.get(step(run, "proposals")).content.decode()
    shown = page.split('data-testid="adds-evidence"')[1].split("</section>")[0]
    assert f'data-candidate="{waiting.pk}"' in shown and f">#{waiting.pk}</a>" in shown
    proposals = page.split('data-testid="adds-evidence"')[0]
    explain = reverse("dreaming:explain", args=[project.slug, waiting.pk])
    assert f'href="{explain}">' not in proposals.split('data-testid="page-')[1]
    for candidate in made.filter(status__in=Candidate.OPEN_STATUSES):
        assert reverse("dreaming:explain", args=[project.slug, candidate.pk]) in proposals
    # The commit step names it for what it is.
    page = client.get(step(run, "commit")).content.decode()
    row = page.split(f'data-candidate="{waiting.pk}"')[1].split("</tr>")[0]
    assert f"proposed before this run; it adds evidence to #{waiting.pk}" in row
    # The preview, run again after the sweep, still agrees: its proposals are this run's.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(run, "preview"))
    run.refresh_from_db()
    again = preview_outcome(run)
    assert [i["adds_evidence_to"] for i in again["adds_evidence"]] == [waiting.pk]
    assert {
        i["text"] for i in again["proposed"] + again["deferred"] + again["blocked"]
    } == previewed
