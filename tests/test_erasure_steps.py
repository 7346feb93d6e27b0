"""The erasure orchestrator (llmwiki.erasure): apps register steps, one transaction runs them."""

from __future__ import annotations

import pytest

from llmwiki import erasure
from llmwiki.blobs import blob_path
from llmwiki.erasure import ErasureStep, erasure_scope, source_erase
from llmwiki.models import AuditEvent, Episode, Source
from tests.dreaming_data import seed

ERASED_PATH = "memory/2026-11-02.md"


@pytest.fixture
def source(project) -> Source:
    seed(project, [ERASED_PATH])
    return Source.objects.get(project=project, path=ERASED_PATH)


class Recorder(ErasureStep):
    """A step that notes which hook ran and what it could see."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.seen_texts: set[str] = set()

    def select(self, e):
        self.calls.append("select")
        e.rows["recorded"] = list(e.episode_ids)
        e.preview["recorded"] = len(e.episode_ids)

    def select_dependents(self, e):
        self.calls.append("select_dependents")

    def collect(self, e):
        self.calls.append("collect")
        self.seen_texts = set(e.texts["episodes"])

    def erase(self, e):
        self.calls.append("erase")
        e.changed["recorded"] = len(e.rows["recorded"])

    def republish(self, e):
        self.calls.append("republish")
        return 1

    def scrub(self, e):
        self.calls.append("scrub")


def test_each_app_registers_its_own_step_in_app_order():
    from dreaming.erasure import DreamingErasure
    from reviews.erasure import ReviewsErasure

    kinds = [type(step) for step in erasure._steps]
    assert kinds.index(DreamingErasure) < kinds.index(ReviewsErasure)


def test_the_preview_runs_only_the_selection_hooks(source, monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(erasure, "_steps", [*erasure._steps, recorder])
    scope = erasure_scope(source)
    assert recorder.calls == ["select", "select_dependents"]
    assert scope.counts()["recorded"] == 3 == scope.counts()["episodes"]
    assert scope.counts()["candidates"] == 0  # dreaming's count, from dreaming's step


def test_a_step_runs_every_hook_in_order_and_its_counts_reach_the_audit_row(
    source, alice, monkeypatch
):
    recorder = Recorder()
    monkeypatch.setattr(erasure, "_steps", [*erasure._steps, recorder])
    contents = set(Episode.objects.filter(source=source).values_list("content", flat=True))
    counts = source_erase(source=source, actor=alice, note="subject access request")
    assert recorder.calls == [
        "select",
        "select_dependents",
        "collect",
        "erase",
        "republish",
        "scrub",
    ]
    assert recorder.seen_texts == contents  # read before the tombstones were written
    assert counts["recorded"] == 3 and counts["pages_republished"] == 1
    assert AuditEvent.objects.get(action="source.erase").after["recorded"] == 3


def test_a_failing_step_rolls_every_app_back(
    source, alice, monkeypatch, django_capture_on_commit_callbacks
):
    class Failing(ErasureStep):
        def scrub(self, e):
            raise RuntimeError("disk full")

    monkeypatch.setattr(erasure, "_steps", [*erasure._steps, Failing()])
    before = list(Episode.objects.filter(source=source).values_list("content", "status"))
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError):
        source_erase(source=source, actor=alice, note="subject access request")
    source.refresh_from_db()
    assert source.status == Source.Status.ACTIVE
    assert list(Episode.objects.filter(source=source).values_list("content", "status")) == before
    assert not AuditEvent.objects.filter(action="source.erase").exists()
    assert blob_path(source.sha256).exists()
