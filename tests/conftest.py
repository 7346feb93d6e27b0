"""Named personas and a demo-like project, built through the real services."""

from __future__ import annotations

import os

import pytest
from django.contrib.auth import get_user_model
from hypothesis import settings as hypothesis_settings

from llmwiki.models import Role
from llmwiki.services import membership_set, project_create

PASSWORD = "correct-horse-battery-staple"

# `make test` gates every commit, so its property tests draw the same examples each run and a
# red build always reproduces. HYPOTHESIS_PROFILE=explore searches afresh on every run.
hypothesis_settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", max_examples=500)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def make_user(username: str, **extra):
    return get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture
def alice(db):
    return make_user("alice")


@pytest.fixture
def bob(db):
    return make_user("bob")


@pytest.fixture
def carol(db):
    return make_user("carol")


@pytest.fixture
def mallory(db):
    return make_user("mallory")


@pytest.fixture
def project(alice, bob, carol):
    """Alice maintains it, Bob reviews, Carol views; Mallory is an outsider."""
    p = project_create(slug="tidewater", name="Tidewater", actor="system", owner=alice)
    membership_set(project=p, user=bob, role=Role.REVIEWER, actor="system")
    membership_set(project=p, user=carol, role=Role.VIEWER, actor="system")
    return p


@pytest.fixture
def other_project(mallory):
    return project_create(slug="elsewhere", name="Elsewhere", actor="system", owner=mallory)


@pytest.fixture(autouse=True)
def isolated_blobs(settings, tmp_path_factory):
    """Each test gets its own blob store, so "nothing was written" can be checked."""
    settings.BLOB_DIR = tmp_path_factory.mktemp("blobs")


@pytest.fixture(autouse=True)
def isolated_index(settings, tmp_path_factory):
    """Each test gets its own search index: ids are reused after a test's rollback."""
    settings.INDEX_DIR = tmp_path_factory.mktemp("index")
