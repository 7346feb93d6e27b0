"""Approved claims carry the highest class of their evidence (and its PII and secret flags),
a page section the highest class of its claims; every surface that shows claim text
withholds it above the caller's clearance, with the reason, as it does episode text."""

from __future__ import annotations

import pytest
from django.urls import reverse

from llmwiki import access
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Claim, Episode, Page, PageKey, Role, SecurityClass
from llmwiki.search.documents import claim_ids_in, page_docs
from llmwiki.search.pack import Caller as RetrievalCaller
from llmwiki.search.retrieval import retrieve
from llmwiki.wiki import claim_create, page_recompile, readable_markdown, withhold_claims
from tests.api_data import bearer, url

EMAIL = "harbour.master@tidewater.example"
# What each claim says, reworded by its reviewer from its note, so a leak of either is found.
TEXTS = {
    "internal": "Berth four closes for dredging every spring.",
    "restricted": "The pilot boat keeps its spare keys in locker nine.",
    "pii": "Night arrivals are announced to the harbour master first.",
}
NOTES = {
    "internal": "Every spring berth four is closed while it is dredged.",
    "restricted": "Spare keys of the pilot boat: locker nine.",
    "pii": f"Night arrivals go to {EMAIL} before anyone else.",
}
WITHHELD = "Text withheld"


@pytest.fixture
def claims(project, alice):
    """One approved claim per class on SYSTEM_OVERVIEW, each citing its own episode."""
    ingest_files(
        project=project,
        files=[
            RawFile(f"{kind}.md", f"# {kind}\n\n{text}\n".encode()) for kind, text in NOTES.items()
        ],
        actor="system",
    )
    page = Page.objects.get(project=project, key=PageKey.SYSTEM_OVERVIEW)
    page_recompile(page=page, actor=alice, reason="empty")  # r1, so r2's diff adds every claim
    made = {}
    for kind, text in TEXTS.items():
        episode = Episode.objects.get(project=project, source__path=f"{kind}.md")
        made[kind] = claim_create(
            page=page,
            text=text,
            evidence=[episode.pk],
            reviewer=alice,
            section=kind.title(),
            # A reviewer's class is a floor: the pii claim asks for public and still
            # inherits its evidence's.
            security_class={"restricted": SecurityClass.RESTRICTED, "pii": "public"}.get(kind),
        )
    page_recompile(page=page, actor=alice, reason="test")
    return made


SENSITIVE = ("restricted", "pii")


def test_a_claim_inherits_its_evidences_class_and_flags(claims):
    pii = claims["pii"]
    assert pii.security_class == SecurityClass.RESTRICTED
    assert any(f.startswith("pii:") for f in pii.flags)
    assert claims["restricted"].security_class == SecurityClass.RESTRICTED
    assert claims["internal"].security_class == SecurityClass.INTERNAL
    assert claims["internal"].flags == []


def test_restricted_evidence_and_sensitive_flags_are_inherited():
    plain = access.Labels("internal", ("injection:role-tag",))
    pii = access.Labels("restricted", ("pii:email",))
    assert access.inherited(access.Labels("public"), [plain, pii]) == access.Labels(
        "restricted", ("pii:email",)
    )
    # Public or internal is the reviewer's call on the claim's own words.
    assert access.inherited(access.Labels("public"), [plain]) == access.Labels("public")
    assert access.highest([access.Labels("public"), plain]).security_class == "internal"


def test_withholding_replaces_only_the_cited_line():
    markdown = "# P\n\n## S\n\n- secret thing _(claim 7; evidence #1)_\n- fine _(claim 8)_\n"
    out = withhold_claims(markdown, {7: "Text withheld: because."})
    assert "secret thing" not in out and "- _Text withheld: because._ _(claim 7)_" in out
    assert "- fine _(claim 8)_" in out and out.endswith("\n")


PERSONAS = [("carol", False), ("bob", True), ("alice", True)]


def body(client, user, name, *args, **params) -> str:
    client.force_login(user)
    response = client.get(reverse(name, args=args), params)
    assert response.status_code == 200, (name, response.status_code)
    return response.content.decode()


def assert_readable(text: str, claims, sees: bool) -> None:
    assert TEXTS["internal"] in text
    for kind in SENSITIVE:
        assert (TEXTS[kind] in text) is sees, (kind, sees)
    assert (WITHHELD in text) is not sees
    assert EMAIL not in text


SURFACES = {
    "reviews:page": lambda p, c: [p.slug, PageKey.SYSTEM_OVERVIEW],
    "reviews:page_diff": lambda p, c: [p.slug, PageKey.SYSTEM_OVERVIEW],
}


@pytest.mark.parametrize("name", list(SURFACES))
@pytest.mark.parametrize(("persona", "sees"), PERSONAS)
def test_wiki_pages_withhold_claims_above_the_callers_clearance(
    client, request, project, claims, name, persona, sees
):
    user = request.getfixturevalue(persona)
    assert_readable(body(client, user, name, *SURFACES[name](project, claims)), claims, sees)


@pytest.mark.parametrize(("persona", "sees"), PERSONAS)
@pytest.mark.parametrize("kind", list(TEXTS))
def test_the_claim_page_and_the_episode_page_apply_the_rule(
    client, request, project, claims, persona, sees, kind
):
    user = request.getfixturevalue(persona)
    claim = claims[kind]
    readable = kind == "internal" or sees
    claim_page = body(client, user, "reviews:claim", project.slug, claim.pk)
    assert (TEXTS[kind] in claim_page) is readable
    episode = claim.evidence.get()
    episode_page = body(client, user, "episode", project.slug, episode.pk)
    assert (TEXTS[kind] in episode_page) is readable  # its "Cited by" list
    assert (EMAIL in episode_page + claim_page) is (kind == "pii" and sees)
    if not readable:
        assert WITHHELD in claim_page and WITHHELD in episode_page


@pytest.mark.parametrize(
    ("persona", "scopes", "sees"),
    [("alice", ("read",), False), ("carol", ("read",), False), ("alice", ("read", "review"), True)],
)
def test_the_api_page_and_provenance_apply_the_rule(
    client, request, project, claims, carol, persona, scopes, sees
):
    if persona == "carol":
        # A token is made by a maintainer; carol's was made while she was one.
        project.memberships.filter(user=carol).update(role=Role.MAINTAINER)
    user = request.getfixturevalue(persona)
    headers = bearer(project, user, *scopes)
    if persona == "carol":
        project.memberships.filter(user=carol).update(role=Role.VIEWER)
        sees = False
    page = client.get(url(project, f"pages/{PageKey.SYSTEM_OVERVIEW}"), headers=headers).json()
    assert_readable(page["markdown"], claims, sees)
    by_id = {c["claim_id"]: c for c in page["claims"]}
    for kind, claim in claims.items():
        readable = kind == "internal" or sees
        assert (by_id[claim.pk]["text"] == TEXTS[kind]) is readable
        assert bool(by_id[claim.pk]["withheld"]) is not readable
        prov = client.get(url(project, f"provenance/claim/{claim.pk}"), headers=headers).json()
        assert (prov["text"] == TEXTS[kind]) is readable
        assert (TEXTS[kind] in str(prov)) is readable


def test_retrieval_labels_a_section_with_the_class_of_its_claims(project, claims, alice, carol):
    cleared = RetrievalCaller.for_user(alice, project)
    restricted = claims["restricted"].pk
    sections = {d.key: d for d in page_docs(project.pk) if restricted in claim_ids_in(d.text)}
    assert sections and {d.security_class for d in sections.values()} == {"restricted"}
    # Retrieval returns the claim, with the section it matched through as its context.
    pack = retrieve(project, "pilot boat spare keys locker", caller=cleared, record=False)
    hit = next(h for h in pack.hits if h.id == restricted and h.kind == "claim")
    assert hit.security_class == "restricted" and hit.context in {d.text for d in sections.values()}
    assert not [h for h in pack.hits if h.kind == "page" and restricted in h.claim_ids]
    viewer = RetrievalCaller.for_user(carol, project)
    for query in ("pilot boat spare keys locker", "night arrivals harbour master"):
        pack = retrieve(project, query, caller=viewer, record=False)
        assert all(TEXTS["restricted"] not in h.text for h in pack.hits)
        assert all(TEXTS["pii"] not in h.text and EMAIL not in h.text for h in pack.hits)


def test_masking_a_page_costs_one_query_for_any_number_of_claims(
    project, claims, django_assert_num_queries
):
    page = Page.objects.get(project=project, key=PageKey.SYSTEM_OVERVIEW)
    markdown = page.current_revision.markdown
    with django_assert_num_queries(1):
        shown = readable_markdown(project, markdown, markdown, role=Role.VIEWER)
    assert shown[0] == shown[1] and TEXTS["restricted"] not in shown[0]


def test_existing_claims_inherit_on_migration(project, claims):
    """The migration's rule, run on a claim stored before claims had flags."""
    from importlib import import_module

    from django.apps import apps

    pii = claims["pii"]
    Claim.objects.filter(pk=pii.pk).update(security_class="internal", flags=[])
    import_module("llmwiki.migrations.0012_claim_flags").inherit(apps, None)
    pii.refresh_from_db()
    assert pii.security_class == "restricted" and pii.flags
