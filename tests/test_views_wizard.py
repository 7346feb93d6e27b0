"""The wizard's step pages: who may see them, resuming, going back, the authority boundary."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.models import AuditEvent, Claim, Episode, Project, Role
from llmwiki.services import membership_set
from tests.conftest import make_user
from tests.dreaming_data import DAYS
from wizard import services
from wizard.models import STEPS, WizardRun

SLUGS = [slug for _, slug, _ in STEPS]
Authority = Project.Authority


def step(run, slug):
    return reverse(f"wizard:{slug}", args=[run.pk])


def make_run(user, project, boundary=Authority.REVIEWED):
    """A run with its project chosen and every step open."""
    run = services.wizard_start(user=user)
    services.wizard_choose(run=run, actor=user, boundary=boundary, project=project)
    WizardRun.objects.filter(pk=run.pk).update(reached=len(STEPS))
    run.refresh_from_db()
    return run


def upload(client, run, names=None):
    files = [
        SimpleUploadedFile(path.rsplit("/", 1)[-1], text.encode())
        for path, text in DAYS.items()
        if names is None or path in names
    ]
    return client.post(step(run, "import"), {"files": files})


# --- Permission edges -------------------------------------------------------------------------


@pytest.mark.parametrize("slug", SLUGS)
def test_it_shows_each_step_to_the_reviewer_who_owns_the_run(client, bob, project, slug):
    run = make_run(bob, project)
    client.force_login(bob)
    response = client.get(step(run, slug))
    assert response.status_code == 200
    assert b'aria-current="step"' in response.content
    assert b"Wizard steps" in response.content


@pytest.mark.parametrize("slug", SLUGS)
def test_it_hides_a_run_from_everyone_but_its_owner(
    client, alice, bob, carol, mallory, project, slug
):
    run = make_run(bob, project)
    for other in (alice, carol, mallory):  # maintainer, viewer, outsider
        client.force_login(other)
        assert client.get(step(run, slug)).status_code == 404
        assert client.post(step(run, slug), {}).status_code == 404


@pytest.mark.parametrize("slug", SLUGS[1:])
def test_it_refuses_an_owner_who_is_now_only_a_viewer_or_an_outsider(client, bob, project, slug):
    run = make_run(bob, project)
    client.force_login(bob)
    membership_set(project=project, user=bob, role=Role.VIEWER, actor="system")
    assert client.get(step(run, slug)).status_code == 403
    assert client.post(step(run, slug), {}).status_code == 403
    project.memberships.filter(user=bob).delete()
    assert client.get(step(run, slug)).status_code == 404


def test_it_needs_a_login(client, bob, project):
    run = make_run(bob, project)
    response = client.get(step(run, "project"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_step_one_offers_only_projects_the_user_reviews(client, carol, bob, project, other_project):
    # Carol views Tidewater and reviews Elsewhere.
    membership_set(project=other_project, user=carol, role=Role.REVIEWER, actor="system")
    client.force_login(carol)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=carol)
    response = client.post(
        step(run, "project"), {"project": project.slug, "boundary": "reviewed-memory"}
    )
    assert response.status_code == 200
    assert b"Select a valid choice" in response.content
    run.refresh_from_db()
    assert run.project is None


def test_a_maintainer_walks_the_whole_run(client, alice, project):
    """Alice (maintainer) may approve what a reviewer may not: sensitive material."""
    run = make_run(alice, project)
    client.force_login(alice)
    upload(client, run)
    client.post(step(run, "proposals"))
    assert DreamRun.objects.filter(wizard_run_id=run.pk, trigger="manual").exists()
    for slug in SLUGS:
        assert client.get(step(run, slug)).status_code == 200


# --- Step 1 ---------------------------------------------------------------------------------


def test_step_one_rerenders_with_what_was_typed(client, db, project):
    admin = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=admin)
    response = client.post(
        step(run, "project"), {"project": "", "new_name": "Harbour", "new_slug": "tidewater"}
    )
    assert response.status_code == 200
    assert b'value="Harbour"' in response.content
    assert b"exists" in response.content  # the slug is taken
    assert b"This field is required" in response.content  # no boundary chosen
    assert not Project.objects.filter(name="Harbour").exists()


def test_step_one_creates_a_project_with_the_boundary(client, db):
    admin = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=admin)
    response = client.post(
        step(run, "project"),
        {"project": "", "new_name": "Harbour", "new_slug": "harbour", "boundary": "experimental"},
    )
    assert response.status_code == 302 and response["Location"] == step(run, "import")
    run.refresh_from_db()
    assert run.project.slug == "harbour" and run.project.authority == "experimental"
    assert run.boundary == "experimental"
    assert AuditEvent.objects.filter(action="wizard.choose", object_id=str(run.pk)).exists()


def test_a_slug_the_project_model_refuses_is_an_error_not_a_crash(client, db):
    admin = make_user("root", is_superuser=True, is_staff=True)
    client.force_login(admin)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=admin)
    form = {"project": "", "new_name": "Harbour", "new_slug": "Harbour", "boundary": "experimental"}
    response = client.post(step(run, "project"), form)
    assert response.status_code == 200 and b"lowercase" in response.content
    assert not Project.objects.exists()


def test_a_reviewer_cannot_create_a_project(client, bob, project):
    client.force_login(bob)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=bob)
    response = client.post(step(run, "project"), {"project": "", "boundary": "experimental"})
    assert response.status_code == 200
    assert b"This field is required" in response.content
    assert Project.objects.count() == 1


# --- Resume and navigate back ---------------------------------------------------------------


def test_a_run_resumes_where_it_was_left_and_goes_back(client, bob, project):
    client.force_login(bob)
    client.post(reverse("wizard:start"))
    run = WizardRun.objects.get(user=bob)
    # A step not reached yet sends the user back to where the run stands.
    assert client.get(step(run, "commit"))["Location"] == step(run, "project")
    client.post(step(run, "project"), {"project": project.slug, "boundary": "reviewed-memory"})
    upload(client, run, ["memory/2026-11-02.md"])
    client.get(step(run, "classify"))
    assert client.get(step(run, "preview"))["Location"] == step(run, "classify")

    client.logout()
    client.force_login(bob)
    listing = client.get(reverse("wizard:start"))
    assert step(run, "classify").encode() in listing.content
    assert client.get(reverse("wizard:resume", args=[run.pk]))["Location"] == step(run, "classify")

    # Back to step 1: what was chosen is still selected, and the later steps stay open.
    back = client.get(step(run, "project"))
    assert b'value="reviewed-memory" id="id_boundary_0" required checked' in back.content
    assert b'<option value="tidewater" selected>' in back.content
    again = client.get(step(run, "import"))
    assert b"2026-11-02.md" in again.content  # the import's result table is kept
    assert client.get(step(run, "classify")).status_code == 200


# --- Step 2 ---------------------------------------------------------------------------------


def test_step_two_imports_through_ingest_and_marks_the_runs_material(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    response = upload(client, run, ["memory/2026-11-02.md", "memory/2026-11-04.md"])
    assert response.status_code == 200
    assert response.content.count(b'data-status="new"') == 2
    episodes = Episode.objects.filter(project=project)
    assert episodes.count() > 0
    assert set(episodes.values_list("wizard_run_id", flat=True)) == {run.pk}
    # A second upload adds to the one table.
    again = upload(client, run, ["memory/2026-11-06.md"])
    assert again.content.count(b'data-status="new"') == 3


def test_step_two_shows_an_empty_upload_error_without_storing(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    response = client.post(step(run, "import"), {})
    assert response.status_code == 200
    assert b"Choose at least one file" in response.content
    assert not Episode.objects.exists()


def test_step_two_answers_htmx_with_the_result_table(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    response = client.post(
        step(run, "import"),
        {"files": [SimpleUploadedFile("a.md", DAYS["memory/2026-11-02.md"].encode())]},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert b'id="upload-results"' in response.content and b"<html" not in response.content


# --- The authority boundary -----------------------------------------------------------------


def test_handoff_only_writes_nothing_into_the_project(client, bob, project):
    run = make_run(bob, project, Authority.HANDOFF)
    client.force_login(bob)
    page = client.get(step(run, "import"))
    assert b'data-testid="refusal"' in page.content and b'id="upload-form"' not in page.content
    response = upload(client, run)
    assert b"does not allow importing sources" in response.content
    assert not Episode.objects.exists()
    client.post(step(run, "proposals"))
    client.post(step(run, "preview"))
    assert not DreamRun.objects.exists()
    denied = AuditEvent.objects.filter(action="wizard.denied", object_id=str(run.pk))
    assert denied.count() == 3


def test_experimental_memory_dreams_but_commits_nothing(
    client, bob, project, django_capture_on_commit_callbacks
):
    run = make_run(bob, project, Authority.EXPERIMENTAL)
    client.force_login(bob)
    upload(client, run)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(run, "proposals"))
    candidates = list(Candidate.objects.filter(project=project, status="proposed"))
    assert candidates
    page = client.get(step(run, "commit"))
    assert b"does not allow committing reviewed memory" in page.content
    post = {"approve": [c.pk for c in candidates]}
    for c in candidates:
        post[f"version_{c.pk}"] = c.version
        post[f"revision_{c.pk}"] = ""
    client.post(step(run, "commit"), post)
    assert not Claim.objects.exists()
    assert AuditEvent.objects.filter(action="wizard.denied").count() == 1
    conflict = Conflict.objects.get(project=project)
    client.post(step(run, "conflicts"), {"conflict": conflict.pk, "resolution": "keep-existing"})
    conflict.refresh_from_db()
    assert conflict.status == "open"
    assert AuditEvent.objects.filter(action="wizard.denied").count() == 2


def test_a_run_with_material_cannot_move_to_another_project(client, bob, project, other_project):
    from llmwiki.services import membership_set

    membership_set(project=other_project, user=bob, role=Role.REVIEWER, actor="system")
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run, ["memory/2026-11-02.md"])
    form = {"project": other_project.slug, "boundary": "reviewed-memory"}
    response = client.post(step(run, "project"), form)
    assert response.status_code == 200
    assert b"already imported material into another project" in response.content
    run.refresh_from_db()
    assert run.project == project
    # The boundary may still change.
    client.post(step(run, "project"), {"project": project.slug, "boundary": "experimental"})
    run.refresh_from_db()
    assert run.boundary == "experimental"
