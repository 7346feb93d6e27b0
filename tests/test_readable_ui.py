"""What a person reads: stored codes in words, file names as sent, links a role can use."""

from __future__ import annotations

import html
import re

from django.core.files.uploadedfile import SimpleUploadedFile
from django.template import Context, Template
from django.urls import reverse

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.labels import label, labels_in
from llmwiki.models import Episode, Page, Role
from llmwiki.services import membership_set
from llmwiki.wiki import page_publish
from tests.conftest import make_user
from tests.dreaming_data import seed

RAW_CODES = ("junk:points_back", "too_few_evidence", "secret_redacted", "both-valid")


def visible(response) -> str:
    """The text a reader sees: tags and their attributes (titles included) removed."""
    return html.unescape(re.sub(r"<[^>]*>", " ", response.content.decode()))


# --- the one table --------------------------------------------------------------------------


def test_the_codes_the_issue_names_read_as_words():
    assert [label(c) for c in RAW_CODES] == [
        "Junk: points back at what came before",
        "Too little evidence",
        "Only redacted secrets",
        "Both valid in different scopes",
    ]
    assert label("secret:aws_access_key") == "Secret: AWS access key"
    assert label("pii:email") == "Personal data: email address"
    assert label("lifecycle:done") == "Work done"


def test_an_unknown_code_reads_as_words_not_as_the_code():
    assert label("risk:brand_new_trick") == "Risk: brand new trick"
    assert label("secret:acme_key") == "Secret: acme key"
    assert label("some_new-reason") == "Some new reason"
    assert label("junk:") == "Junk"


def test_codes_inside_a_sentence_are_put_in_words_and_other_words_are_left_alone():
    assert (
        labels_in("evidence flag risk:role_tag is blocked by the project policy")
        == "evidence flag risk: role or control tag is blocked by the project policy"
    )
    assert labels_in("conflict 7: both-valid") == "conflict 7: both valid in different scopes"
    assert labels_in("a well-known step_two of SYSTEM_OVERVIEW") == (
        "a well-known step_two of SYSTEM_OVERVIEW"
    )


def test_a_flag_badge_shows_words_and_keeps_the_code_in_its_title():
    rendered = Template("{% load marks %}{% flag_badge f %}").render(
        Context({"f": "risk:injection_phrase"})
    )
    assert rendered == (
        '<span class="badge bad" title="risk:injection_phrase">Risk: instruction-like phrase</span>'
    )


# --- pages ----------------------------------------------------------------------------------


def test_an_episode_shows_its_flags_in_words(client, bob, project):
    text = "# Contacts\n\n- Ask maya.chen@example.com about the staging database.\n"
    ingest_files(project=project, files=[RawFile("contacts.md", text.encode())], actor="t")
    episode = Episode.objects.get(project=project)
    client.force_login(bob)
    for address in (
        reverse("episode", args=[project.slug, episode.pk]),
        reverse("episode_list", args=[project.slug]),
    ):
        seen = visible(client.get(address))
        assert "Personal data: email address" in seen, address
        assert "pii:email" not in seen, address


def test_the_upload_result_shows_flags_in_words(client, bob, project):
    client.force_login(bob)
    data = b"# Keys\n\nThe deploy key is AKIAIOSFODNN7EXAMPLE for the bucket.\n"
    response = client.post(
        reverse("upload", args=[project.slug]),
        {"files": [SimpleUploadedFile("keys.md", data)]},
    )
    seen = visible(response)
    assert "Secret: AWS access key" in seen
    assert "secret:aws_access_key" not in seen


def test_a_preview_run_says_why_material_stays_episodic_in_words(client, bob, project):
    seed(project)
    run = dreaming.dream_request(project=project, trigger="preview", actor="t", enqueue=False)
    run = dreaming.dream_execute(run_id=run.pk)
    reasons = [s["reason"] for s in run.preview["stays_episodic"]]
    assert reasons
    client.force_login(bob)
    seen = visible(client.get(reverse("dreaming:run", args=[project.slug, run.pk])))
    for reason in reasons:
        assert f"— {label(reason)}" in seen
        assert f"— {reason}\n" not in seen and f"— {reason} " not in seen


def test_a_blocked_candidate_names_the_flag_in_words(client, carol, project):
    candidate = Candidate.objects.create(
        project=project,
        text="Staging runs PostgreSQL 16.",
        page_target="SYSTEM_OVERVIEW",
        memory_type="semantic-candidate",
        dedupe_key="blocked-1",
        status=Candidate.Status.BLOCKED,
        blocked_reason="evidence flag risk:injection_phrase is blocked by the project policy",
    )
    client.force_login(carol)
    seen = visible(client.get(reverse("dreaming:explain", args=[project.slug, candidate.pk])))
    assert "evidence flag risk: instruction-like phrase is blocked" in seen
    assert "risk:injection_phrase" not in seen


def test_a_revision_reason_names_the_resolution_in_words(client, carol, alice, project):
    page = Page.objects.get(project=project, key="OPEN_QUESTIONS")
    page_publish(
        page=page,
        markdown="# Open questions\n",
        claim_ids=[],
        actor=alice,
        reason="conflict 3: both-valid",
    )
    client.force_login(carol)
    for name in ("page", "page_history"):
        seen = visible(
            client.get(reverse(f"reviews:{name}", args=[project.slug, "OPEN_QUESTIONS"]))
        )
        assert "conflict 3: both valid in different scopes" in seen, name
        assert "both-valid" not in seen, name


# --- file names -----------------------------------------------------------------------------

RLO_NAME = "invoice\u202egnp.exe.md"  # shows as "invoiceexe.png" with the override obeyed


def test_a_file_name_is_isolated_with_its_bidi_controls_shown_and_its_whole_self_in_the_title():
    rendered = Template("{% load marks %}{{ name|filename }}").render(
        Context({"name": RLO_NAME + "<b>"})
    )
    assert "\u202e" not in rendered
    assert rendered == (
        '<bdi class="filename" title="invoice⟨U+202E⟩gnp.exe.md&lt;b&gt;">invoice'
        '<span class="invisible-char">⟨U+202E⟩</span>gnp.exe.md&lt;b&gt;</bdi>'
    )


def test_pages_show_a_source_name_with_its_bidi_override_neutralised(client, carol, project):
    # The command line reads names from disk, where nothing strips the override.
    ingest_files(
        project=project,
        files=[RawFile(RLO_NAME, b"# Billing\n\nInvoices go out monthly.\n")],
        actor="t",
    )
    episode = Episode.objects.get(project=project)
    client.force_login(carol)
    for address in (
        reverse("episode", args=[project.slug, episode.pk]),
        reverse("episode_list", args=[project.slug]),
    ):
        page = client.get(address).content.decode()
        assert "\u202e" not in page, address
        assert '<bdi class="filename" title="invoice⟨U+202E⟩gnp.exe.md' in page, address


# --- links a role can use -------------------------------------------------------------------


def test_a_viewer_is_not_offered_the_import_link_that_would_answer_403(
    client, alice, bob, carol, project
):
    upload = reverse("upload", args=[project.slug])
    client.force_login(carol)
    assert client.get(upload).status_code == 403
    for address in (
        reverse("project_home", args=[project.slug]),
        reverse("episode_list", args=[project.slug]),  # the empty list's "Import files" too
    ):
        assert f'href="{upload}"'.encode() not in client.get(address).content, address
    contributor = make_user("dave")
    membership_set(project=project, user=contributor, role=Role.CONTRIBUTOR, actor="system")
    for who in (contributor, bob, alice):
        client.force_login(who)
        assert client.get(upload).status_code == 200
        assert (
            f'href="{upload}"'.encode()
            in client.get(reverse("project_home", args=[project.slug])).content
        )
