"""Steps 3–7 on planted material: relabel, proposals, preview, conflicts, commit."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate, Conflict, DreamRun
from llmwiki.models import (
    AuditEvent,
    ChangelogEntry,
    Claim,
    Episode,
    EpisodeRelabel,
    Export,
    ImmutableError,
    ManifestVersion,
)
from tests.test_views_conflicts import against_a_claim, flag_pii
from tests.test_views_wizard import make_run, step, upload
from wizard.models import WizardRun

HANDOFF = Episode.MemoryType.HANDOFF
# A second system fact, stated three times, so a commit has two candidates on one page.
GATEWAY = {
    f"2026-11-{day:02d}.md": f"# 2026-11-{day:02d} — agent:builder\n\n## Notes\n- {text}\n"
    for day, text in (
        (3, "The API gateway runs on tw-gw-1."),
        (5, "api gateway is on tw-gw-1"),
        (7, "Reminder: the API gateway lives on tw-gw-1."),
    )
}


@pytest.fixture
def walked(client, bob, project, django_capture_on_commit_callbacks):
    """Bob's run on Tidewater with the planted days imported and proposals generated."""
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run)
    files = [SimpleUploadedFile(name, text.encode()) for name, text in GATEWAY.items()]
    client.post(step(run, "import"), {"files": files})
    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(run, "proposals"))
    run.refresh_from_db()
    return run


def staging_episodes(project):
    return list(Episode.objects.filter(project=project, content__icontains="db-staging-2"))


# --- 3. Classify ------------------------------------------------------------------------------


def test_a_relabel_is_audited_and_keeps_the_original_label(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run, ["memory/2026-11-02.md"])
    episode = Episode.objects.filter(project=project).order_by("id").first()
    original = episode.memory_type
    response = client.post(
        step(run, "classify"), {"one": episode.pk, f"label_{episode.pk}": HANDOFF}
    )
    assert response.status_code == 302
    episode.refresh_from_db()
    assert episode.memory_type == original  # history is not rewritten
    relabel = EpisodeRelabel.objects.get(episode=episode)
    assert (relabel.previous, relabel.memory_type) == (original, HANDOFF)
    assert relabel.actor == "user:bob" and relabel.wizard_run_id == run.pk
    event = AuditEvent.objects.get(action="episode.relabel", object_id=str(episode.pk))
    assert event.before == {"memory_type": original, "original": original}
    assert event.after == {"memory_type": HANDOFF}
    with pytest.raises(ImmutableError):
        relabel.save()
    page = client.get(step(run, "classify")).content.decode()
    group = page.split('data-testid="group-handoff-only"')[1].split("</section>")[0]
    assert f'data-episode="{episode.pk}"' in group and "corrected" in group


def test_a_bulk_relabel_moves_every_ticked_episode(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run, ["memory/2026-11-02.md", "memory/2026-11-04.md"])
    ids = list(Episode.objects.filter(project=project).values_list("id", flat=True))
    client.post(step(run, "classify"), {"episodes": ids, "memory_type": "working"})
    assert EpisodeRelabel.in_force(episode__project=project) == {i: "working" for i in ids}
    # Relabelling again to the same label writes nothing.
    client.post(step(run, "classify"), {"episodes": ids, "memory_type": "working"})
    assert EpisodeRelabel.objects.count() == len(ids)
    assert AuditEvent.objects.filter(action="episode.relabel").count() == len(ids)


def test_a_bad_relabel_rerenders_with_what_was_ticked(client, bob, project, other_project):
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run, ["memory/2026-11-02.md"])
    mine = Episode.objects.filter(project=project).first()
    response = client.post(step(run, "classify"), {"episodes": [mine.pk], "memory_type": "nope"})
    assert response.status_code == 200
    assert b"Select a valid choice" in response.content
    assert (
        f'value="{mine.pk}" aria-label="Tick episode {mine.pk}" checked'.encode()
        in response.content
    )
    # Another run's (or project's) episode is not this run's material.
    stranger = upload_elsewhere(other_project)
    response = client.post(
        step(run, "classify"), {"episodes": [stranger], "memory_type": "working"}
    )
    assert b"is not this run" in response.content
    assert not EpisodeRelabel.objects.exists()


def upload_elsewhere(project) -> int:
    from tests.dreaming_data import seed

    seed(project, ["memory/2026-11-02.md"])
    return Episode.objects.filter(project=project).first().pk


def test_the_next_sweep_honours_the_corrected_label(client, bob, project):
    """Handoff-only material is set aside by a sweep: relabelled, it no longer becomes a fact."""
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run)
    before = dreaming.dream_request(
        project=project, trigger="preview", actor=bob, enqueue=False, wizard_run_id=run.pk
    )
    before = dreaming.dream_execute(run_id=before.pk)
    texts = " ".join(c["text"] for c in before.preview["candidates"])
    assert "db-staging-2" in texts
    ids = [e.pk for e in staging_episodes(project)]
    client.post(step(run, "classify"), {"episodes": ids, "memory_type": HANDOFF})
    after = dreaming.dream_request(project=project, trigger="manual", actor=bob, enqueue=False)
    after = dreaming.dream_execute(run_id=after.pk)
    assert after.status == "succeeded"
    assert not Candidate.objects.filter(project=project, text__icontains="db-staging-2").exists()
    assert after.counts["engine_handoff_only"] == len(ids)


# --- 4. Proposals -----------------------------------------------------------------------------


def test_proposals_are_grouped_by_destination_page(client, walked, project):
    sweep = DreamRun.objects.get(pk=walked.proposal_run_id)
    assert sweep.wizard_run_id == walked.pk and sweep.status == "succeeded"
    assert sweep.watermark_after == sweep.watermark_before  # the watermark is left alone
    page = client.get(step(walked, "proposals")).content.decode()
    for candidate in Candidate.objects.filter(project=project).open():
        group = page.split(f'data-testid="page-{candidate.page_target}"')[1].split("</section>")[0]
        assert reverse("dreaming:explain", args=[project.slug, candidate.pk]) in group
    for key in ("SYSTEM_OVERVIEW", "DECISION_LOG", "OPEN_QUESTIONS", "RUNBOOKS", "GOVERNANCE"):
        assert f'data-testid="page-{key}"' in page


def test_the_sweep_progress_polls_until_done(client, bob, project):
    run = make_run(bob, project)
    client.force_login(bob)
    upload(client, run)
    client.post(step(run, "proposals"))  # on_commit not run: the sweep stays queued
    page = client.get(step(run, "proposals"))
    assert b'hx-trigger="every 2s"' in page.content and b"Queued" in page.content
    dreaming.dream_execute(run_id=WizardRun.objects.get(pk=run.pk).proposal_run_id)
    poll = client.get(step(run, "proposals") + "?partial=progress", headers={"HX-Request": "true"})
    assert b"<html" not in poll.content and b"Succeeded" in poll.content
    assert b"every 2s" not in poll.content and b'data-testid="page-SYSTEM_OVERVIEW"' in poll.content


# --- 5. Preview -------------------------------------------------------------------------------


def test_the_preview_gives_each_outcome_with_its_reason(
    client, walked, project, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        client.post(step(walked, "preview"))
    walked.refresh_from_db()
    assert walked.preview_run.trigger == "preview" and walked.preview_run.status == "succeeded"
    page = client.get(step(walked, "preview")).content.decode()
    outcome = walked.preview_run.preview
    assert f'data-testid="n-duplicates">{outcome["duplicates_folded"]}<' in page
    proposed = sum(1 for c in outcome["candidates"] if c["status"] == "proposed")
    assert f'data-testid="n-proposed">{proposed}<' in page
    for s in outcome["stays_episodic"]:
        assert s["reason"] in page


# --- 6. Conflicts -----------------------------------------------------------------------------


def test_a_conflict_is_resolved_inline_and_sensitive_sides_need_the_confirmation(
    client, walked, project, alice, bob
):
    conflict = Conflict.objects.get(project=project)
    old, side = against_a_claim(conflict, bob)
    page = client.get(step(walked, "conflicts")).content.decode()
    assert f'data-testid="conflict-{conflict.pk}"' in page and "Sensitive content" not in page
    flag_pii(side.evidence.all())
    assert "Sensitive content reviewed" in client.get(step(walked, "conflicts")).content.decode()
    form = {"conflict": conflict.pk, "resolution": "accept-new", "winner": side.position}
    client.post(step(walked, "conflicts"), form)  # Bob, a reviewer: not for sensitive text
    WizardRun.objects.filter(pk=walked.pk).update(user=alice)
    client.force_login(alice)
    client.post(step(walked, "conflicts"), form)  # Alice, but without the confirmation
    conflict.refresh_from_db()
    assert conflict.status == "open"
    notes = AuditEvent.objects.filter(action="review.denied", object_id=str(conflict.pk))
    assert len(notes) == 2
    client.post(step(walked, "conflicts"), {**form, "sensitive_confirmed": "on"})
    conflict.refresh_from_db()
    assert conflict.status == "resolved" and conflict.accepted_claim.supersedes == old
    walked.refresh_from_db()
    assert walked.results["conflicts"]["resolved"][0]["conflict"] == conflict.pk
    after = client.get(step(walked, "conflicts")).content.decode()
    assert f'data-testid="conflict-{conflict.pk}"' not in after


# --- 7. Commit --------------------------------------------------------------------------------


def commit_form(run):
    from wizard.selectors import committable

    run.refresh_from_db()
    items = committable(run)
    form = {"approve": [c.pk for c in items]}
    for c in items:
        form[f"version_{c.pk}"] = c.version
        form[f"revision_{c.pk}"] = c.page_revision or ""
    return items, form


def test_commit_approves_through_the_review_gates_and_links_the_revisions(client, walked, project):
    items, _ = commit_form(walked)
    assert len(items) >= 2
    # In one section of one page: the second approval lands on the revision the first
    # made, which is this commit's own change, not one behind the reviewer's back.
    Candidate.objects.filter(pk__in=[c.pk for c in items]).update(
        page_target="SYSTEM_OVERVIEW", section="Hosts"
    )
    items, form = commit_form(walked)
    manifests = ManifestVersion.objects.filter(project=project).count()
    response = client.post(step(walked, "commit"), form)
    assert response.status_code == 302
    claims = Claim.objects.filter(project=project).approved()
    assert claims.count() == len(items)
    assert ManifestVersion.objects.filter(project=project).count() == manifests + len(items)
    assert ChangelogEntry.objects.filter(project=project).count() >= len(items)
    page = client.get(step(walked, "commit")).content.decode()
    summary = page.split('data-testid="commit-summary"')[1]
    walked.refresh_from_db()
    approved = walked.results["commit"]["approved"]
    assert {a["claim"] for a in approved} == set(claims.values_list("id", flat=True))
    diff = reverse("reviews:page_diff", args=[project.slug, "SYSTEM_OVERVIEW"])
    for a in approved:
        assert reverse("reviews:claim", args=[project.slug, a["claim"]]) in summary
        if a["number"] > 1:
            assert f"{diff}?a={a['number'] - 1}&amp;b={a['number']}" in summary
        else:
            assert reverse("reviews:page", args=[project.slug, "SYSTEM_OVERVIEW"]) in summary
    assert len({a["number"] for a in approved}) == len(approved)


def test_commit_refuses_a_stale_form_and_a_reviewer_approving_sensitive_text(
    client, walked, project
):
    items, form = commit_form(walked)
    sensitive, stale = items[0], items[1]
    Candidate.objects.filter(pk=sensitive.pk).update(flags=["pii:email"])
    form[f"version_{stale.pk}"] = stale.version - 1
    client.post(step(walked, "commit"), {**form, f"sensitive_{sensitive.pk}": "on"})
    for candidate in (sensitive, stale):
        candidate.refresh_from_db()
        assert candidate.status == "proposed" and candidate.claim_id is None
    walked.refresh_from_db()
    refused = {r["candidate"]: r["reason"] for r in walked.results["commit"]["refused"]}
    assert "needs a maintainer" in refused[sensitive.pk]
    assert "no longer awaiting review" in refused[stale.pk]
    denied = AuditEvent.objects.filter(action="review.denied")
    assert set(denied.values_list("object_id", flat=True)) == {str(sensitive.pk), str(stale.pk)}


# --- Constant queries -------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["classify", "proposals", "conflicts", "commit"])
def test_list_steps_read_a_constant_number_of_queries(
    client, bob, project, slug, django_assert_max_num_queries, django_capture_on_commit_callbacks
):
    run = make_run(bob, project)
    client.force_login(bob)
    counts = []
    for names in (["memory/2026-11-02.md", "memory/2026-11-09.md"], None):
        upload(client, run, names)
        with django_capture_on_commit_callbacks(execute=True):
            client.post(step(run, "proposals"))
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        # The first visit writes down how far the run went; count a visit after it.
        client.get(step(run, slug))
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(step(run, slug)).status_code == 200
        counts.append(len(ctx))
    assert counts[0] == counts[1], counts


# --- 8. Exports -------------------------------------------------------------------------------


@pytest.fixture
def export_dir(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return settings.EXPORT_DIR


def test_step_eight_builds_the_four_exports_with_manifests_that_verify(
    client, walked, project, export_dir
):
    from reviews.exports import export_folder, export_verify

    _, form = commit_form(walked)
    client.post(step(walked, "commit"), form)
    response = client.post(
        step(walked, "exports"), {"audience": "internal", "budget": 12000, "with_episodes": "on"}
    )
    assert response.status_code == 302
    walked.refresh_from_db()
    exports = list(Export.objects.filter(pk__in=walked.results["exports"]["ids"]))
    kinds = {e.kind for e in exports}
    assert kinds == {"system-profile", "receiver-brief", "startup-packet", "handoff"}
    assert (
        walked.results["exports"]["episodes"]
        == Episode.objects.filter(wizard_run_id=walked.pk, status="active").count()
    )
    page = client.get(step(walked, "exports")).content.decode()
    for export in exports:
        assert export_verify(export_folder(export)).ok
        card = page.split(f'data-testid="export-{export.kind}"')[1].split("</article>")[0]
        assert 'data-testid="verify">verified' in card and "current" in card
        for entry in export.files:
            link = reverse("reviews:export_download", args=[project.slug, export.pk, entry["name"]])
            assert link in card
        assert client.get(link).status_code == 200
    assert "Rollback targets: SYSTEM_OVERVIEW r" in page


def test_step_eight_rerenders_a_bad_budget_and_builds_nothing(client, walked, export_dir):
    response = client.post(step(walked, "exports"), {"audience": "internal", "budget": "5"})
    assert response.status_code == 200
    assert b'value="5"' in response.content and b"greater than or equal to 1000" in response.content
    assert not Export.objects.exists()


def test_step_eight_refuses_all_four_when_the_audience_is_beyond_the_users_clearance(
    client, walked, project, export_dir
):
    project.restricted_clearance = "maintainer"
    project.save()
    response = client.post(step(walked, "exports"), {"audience": "restricted", "budget": 12000})
    assert response.status_code == 200
    assert b"a restricted export needs the maintainer role" in response.content
    assert not Export.objects.exists()


def test_a_handoff_only_run_exports_the_reviewed_layer(client, bob, project, export_dir):
    run = make_run(bob, project, "handoff-only")
    client.force_login(bob)
    client.post(step(run, "exports"), {"audience": "public", "budget": 12000})
    assert Export.objects.filter(project=project, audience="public").count() == 4


def test_a_maintainer_commits_sensitive_text_only_with_its_confirmation(
    client, walked, project, alice
):
    items, form = commit_form(walked)
    sensitive = items[0]
    Candidate.objects.filter(pk=sensitive.pk).update(flags=["pii:email"])
    WizardRun.objects.filter(pk=walked.pk).update(user=alice)
    client.force_login(alice)
    page = client.get(step(walked, "commit")).content.decode()
    assert f'name="sensitive_{sensitive.pk}"' in page
    only = {k: v for k, v in form.items() if k != "approve"} | {"approve": [sensitive.pk]}
    client.post(step(walked, "commit"), only)
    sensitive.refresh_from_db()
    assert sensitive.status == "proposed"
    client.post(step(walked, "commit"), {**only, f"sensitive_{sensitive.pk}": "on"})
    sensitive.refresh_from_db()
    assert sensitive.status == "approved" and sensitive.claim_id is not None
