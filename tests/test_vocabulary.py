"""Page keys, episode kinds and export kinds are declared once (`llmwiki.vocabulary`), and
every place that lists them reads that declaration: an entry added there shows on the web,
in the API schema, on the command line and in the wizard."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dreaming.engine import route, types
from llmwiki import vocabulary
from llmwiki.errors import InputError
from llmwiki.importers import EpisodeDraft
from llmwiki.importers.bundle import BUNDLE_FILES
from llmwiki.models import Episode, Export, Page, PageKey
from llmwiki.services import project_create
from llmwiki.vocabulary import ExportKind
from reviews.exports import ExportOptions, export_create, service
from reviews.exports.documents import BUNDLE_PAGES
from reviews.forms import QueueFilterForm
from reviews.management.commands.export import Command as ExportCommand
from tests.test_views_wizard import make_run, step

# --- Page keys ------------------------------------------------------------------------------


def test_the_page_keys_of_the_model_are_the_vocabulary():
    assert PageKey.choices == [(p.key, p.title) for p in vocabulary.PAGES]


def test_a_new_project_has_every_standard_page_with_its_title(db):
    project = project_create(slug="fresh", name="Fresh", actor="t")
    pages = list(Page.objects.filter(project=project).values_list("key", "title"))
    assert sorted(pages) == sorted(
        (k, vocabulary.PAGE_TITLES[k]) for k in vocabulary.STANDARD_PAGES
    )


def test_the_engine_routes_only_to_standard_pages():
    assert types.PAGES == vocabulary.STANDARD_PAGES
    assert set(route.PAGE_ORDER) | set(route._CUES) <= set(vocabulary.STANDARD_PAGES)


def test_the_page_filter_offers_the_standard_pages():
    offered = [key for key, _ in QueueFilterForm().fields["page_target"].choices if key]
    assert offered == list(vocabulary.STANDARD_PAGES)


def test_a_bundle_may_hold_every_page_and_an_export_writes_only_known_ones():
    assert {f"{key}.md" for key in vocabulary.PAGE_KEYS} <= BUNDLE_FILES
    assert set(BUNDLE_PAGES) <= set(vocabulary.PAGE_KEYS)


# --- Episode kinds --------------------------------------------------------------------------


def test_the_episode_kinds_of_the_model_are_the_vocabulary():
    assert Episode.Kind.choices == [(k.value, k.label) for k in vocabulary.EPISODE_KINDS]
    assert Episode.AGENT_KINDS == vocabulary.AGENT_KINDS
    assert Episode.BOOKKEEPING_KINDS == ("approval", "retrieval", "source_ingest")


def test_an_importer_draft_takes_exactly_the_imported_kinds():
    assert types.KINDS == vocabulary.IMPORTED_KINDS
    for kind in vocabulary.EPISODE_KINDS:
        make = lambda k=kind: EpisodeDraft("x", k.value, "system", {})  # noqa: E731
        if kind.imported:
            assert make().kind == kind.value
        else:
            with pytest.raises(ValueError):
                make()


def test_the_api_schema_offers_agents_the_posted_kinds(client):
    schema = client.get("/api/openapi.json").json()
    enum = schema["components"]["schemas"]["EventIn"]["properties"]["kind"]["enum"]
    assert enum == list(vocabulary.AGENT_KINDS)


# --- Export kinds ---------------------------------------------------------------------------

FAKE = ExportKind("fact-sheet", "Fact sheet")


def kind_choices() -> list[str]:
    """`manage.py export --kind` choices, as argparse is given them now."""
    parser = ExportCommand().create_parser("manage.py", "export")
    return next(a.choices for a in parser._actions if a.dest == "kind")


def surfaces(client, project, bob) -> dict[str, str]:
    """What each surface listing export kinds shows, as text to look for labels in."""
    client.force_login(bob)
    form = client.get(reverse("reviews:exports", args=[project.slug])).content.decode()
    form = form.split('name="kind"')[1].split("</select>")[0]
    schema = client.get("/api/openapi.json").json()
    enum = schema["components"]["schemas"]["ExportIn"]["properties"]["kind"]["enum"]
    run = make_run(bob, project)
    wizard = client.get(step(run, "exports")).content.decode()
    wizard = wizard.split('data-testid="export-kinds"')[1].split("</form>")[0]
    return {"form": form, "api": " ".join(enum), "cli": " ".join(kind_choices()), "wizard": wizard}


def test_every_export_kind_is_stored_written_and_listed_everywhere(client, project, bob):
    kinds = vocabulary.export_kinds()
    assert Export.Kind.choices == vocabulary.stored_export_kinds()
    assert set(service.WRITERS) == {k.value for k in kinds}
    shown = surfaces(client, project, bob)
    for kind in kinds:
        assert f'value="{kind.value}">{kind.label}<' in shown["form"]
        assert kind.value in shown["api"].split() and kind.value in shown["cli"].split()
        assert kind.label.lower() in shown["wizard"]
    assert "bundle" in shown["api"].split() and "bundle" in shown["cli"].split()
    assert "Build the four exports" in shown["wizard"]


def test_an_export_kind_added_to_the_vocabulary_shows_everywhere_and_builds(
    client, project, bob, alice, settings, tmp_path, monkeypatch
):
    settings.EXPORT_DIR = tmp_path / "exports"
    monkeypatch.setitem(service.WRITERS, FAKE.value, service.WRITERS["system-profile"])
    with vocabulary.export_kind_registered(FAKE):
        shown = surfaces(client, project, bob)
        assert 'value="fact-sheet">Fact sheet<' in shown["form"]
        assert "fact-sheet" in shown["api"].split() and "fact-sheet" in shown["cli"].split()
        assert "and fact sheet" in shown["wizard"] and "Build the five exports" in shown["wizard"]
        built = export_create(project=project, options=ExportOptions("fact-sheet"), actor=alice)
        assert built.kind == "fact-sheet" and built.manifest_sha256
    # Gone with its registration.
    assert "fact-sheet" not in kind_choices()
    with pytest.raises(InputError, match="unknown kind 'fact-sheet'"):
        ExportOptions("fact-sheet")


def test_the_api_refuses_an_undeclared_export_kind_naming_the_kinds(client, project, alice):
    from tests.api_data import bearer, post, url

    response = post(
        client, url(project, "exports"), {"kind": "fact-sheet"}, bearer(project, alice, "review")
    )
    assert response.status_code == 422
    assert "unknown kind 'fact-sheet'" in response.json()["message"]
    assert "receiver-brief" in response.json()["message"]


def test_every_importer_that_writes_sources_declares_its_trust_and_a_bundle_reaches_it():
    """Dreaming's trust is the importer registry's: a bundle's 1.0 is reached (its reviewed
    label no longer lowers it to 0.9), and the API's events are declared, not defaulted."""
    from dreaming.sweep_input import source_trust
    from llmwiki.importers import registry
    from llmwiki.models import Episode

    assert registry.EVENT_IMPORTER in registry.SOURCE_TRUST
    assert source_trust(Episode.Trust.REVIEWED, "bundle") == registry.SOURCE_TRUST["bundle"] == 1.0
    assert source_trust(Episode.Trust.DRAFT, "api") == registry.EVENT_TRUST
    assert source_trust(Episode.Trust.APPROVED, "transcript") == 1.0
    assert source_trust(Episode.Trust.DRAFT, "note") == registry.SOURCE_TRUST["note"]


def test_the_sweep_engine_reads_its_concept_word_lists_from_here():
    # One spelling of each list: a word added here reaches every reader in the engine.
    from dreaming.engine import conflicts, disputes, reflect, text, worth

    assert text.NEGATIONS is vocabulary.NEGATIONS
    assert conflicts.NEGATIONS is disputes.NEGATIONS is vocabulary.NEGATIONS
    assert text.DECIDE_CUES is vocabulary.DECIDE_CUES
    assert text.LIFE_CUES is vocabulary.LIFE_CUES
    assert worth.HEDGES is vocabulary.HEDGES
    assert worth.SECOND_PERSON is vocabulary.SECOND_PERSON
    assert disputes.PROPOSALS is vocabulary.PROPOSALS
    assert reflect.RECURRENCE is vocabulary.RECURRENCE
