"""A backlog of any size is swept in bounded batches, and the index fold writes in chunks."""

from __future__ import annotations

import json
from types import SimpleNamespace

from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dreaming import services, sweep_persist, tasks
from dreaming.engine import pipeline
from dreaming.engine.restate import restating
from dreaming.models import Candidate, CandidateTerm, DreamRun
from llmwiki.ingest import RawFile, ingest_files
from llmwiki.models import Episode, Project
from llmwiki.search import index
from llmwiki.search.backends import backend
from llmwiki.search.index import index_check, index_fold, index_rebuild
from tests.dreaming_data import DAYS

CAP = 4


def one_day(project) -> None:
    """Every planted note of the dreaming corpus, written on one day (2026-11-02)."""
    bullets = [line for text in DAYS.values() for line in text.splitlines() if line.startswith("-")]
    body = "# 2026-11-02 — agent:builder\n\n## Notes\n" + "\n".join(bullets) + "\n"
    ingest_files(
        project=project, files=[RawFile("memory/2026-11-02.md", body.encode())], actor="system"
    )


def a_note(project) -> None:
    """A note of the same day, on another subject: the project keeps notes, not only logs."""
    body = "# Release checklist\n\nDate: 2026-11-02\n\nThe release checklist lives in the ops handbook.\n"
    ingest_files(
        project=project, files=[RawFile("notes/release.md", body.encode())], actor="system"
    )


def dream(project) -> DreamRun:
    run = services.dream_request(project=project, trigger="manual", actor="test", enqueue=False)
    return services.dream_execute(run_id=run.pk)


def sweep_all(project) -> list[DreamRun]:
    """Runs until the watermark reaches the newest episode (what the schedule does night
    after night)."""
    newest = Episode.objects.filter(project=project).order_by("-id").first().pk
    runs = []
    while Project.objects.get(pk=project.pk).dream_watermark < newest:
        runs.append(dream(project))
        assert runs[-1].status == DreamRun.Status.SUCCEEDED, runs[-1].error
        assert len(runs) < 50, "the sweep does not advance"
    return runs


def capped(project, cap=CAP) -> None:
    services.policy_update(project=project, policy={"max_episodes": cap}, actor="test")
    project.refresh_from_db()


def swept_ranges(runs) -> list[set[int]]:
    """The episode ids each run read: everything between its watermark before and after."""
    return [
        set(
            Episode.objects.dreamable()
            .filter(project=r.project, id__gt=r.watermark_before, id__lte=r.watermark_after)
            .values_list("id", flat=True)
        )
        for r in runs
    ]


def outcome(project) -> set[tuple[str, str, frozenset[str]]]:
    return {
        (c.text, c.status, frozenset(c.evidence.values_list("episode__content", flat=True)))
        for c in Candidate.objects.filter(project=project)
    }


def test_a_day_larger_than_the_cap_is_swept_in_several_runs_each_episode_once(
    project, other_project
):
    capped(project)
    one_day(project)
    a_note(project)  # swept in the last batch, after the logs
    total = Episode.objects.dreamable().filter(project=project).count()
    assert total > 2 * CAP

    runs = sweep_all(project)

    assert len(runs) == -(-total // CAP)
    assert all(r.counts["selected"] <= CAP for r in runs)
    ranges = swept_ranges(runs)
    assert [len(r) for r in ranges] == [r.counts["selected"] for r in runs]
    assert set().union(*ranges) == set(
        Episode.objects.dreamable().filter(project=project).values_list("id", flat=True)
    )
    assert sum(len(r) for r in ranges) == total  # none read twice
    first = runs[0].phases["light"]["note"]
    assert "day 2026-11-02 alone exceeds the cap and was split" in first
    assert f"{total - CAP} remain for the next runs" in first
    assert runs[-1].counts["remaining"] == 0

    # The engine reads a batch, not the backlog: a fact said five times over four
    # batches, in logs only, is never said often enough in one of them to be proposed,
    # though the project keeps notes. The one run over the whole day proposes it.
    one_day(other_project)
    a_note(other_project)
    assert len(sweep_all(other_project)) == 1
    assert [c[0] for c in outcome(other_project) if "db-staging-2" in c[0]]
    assert not [c[0] for c in outcome(project) if "db-staging-2" in c[0]]


STAGING = [line for text in DAYS.values() for line in text.splitlines() if "staging" in line]


def test_a_fact_proposed_by_two_batches_is_one_candidate_as_in_one_run(project, other_project):
    """Each batch proposes the fact; the second adds its evidence to the first's candidate
    (persisting folds a draft into the candidate with its key or one it restates)."""
    assert len(STAGING) == 5
    lines = STAGING + [f"{line} (again)" for line in STAGING]
    body = "# 2026-11-02 — agent:builder\n\n## Notes\n" + "\n".join(lines) + "\n"
    for p in (project, other_project):
        ingest_files(
            project=p, files=[RawFile("memory/2026-11-02.md", body.encode())], actor="system"
        )
    capped(project, len(STAGING))

    runs = sweep_all(project)
    assert [r.counts["selected"] for r in runs] == [5, 5]
    assert [r.counts["new_candidates"] for r in runs] == [1, 0]
    assert len(sweep_all(other_project)) == 1
    [(text, status, evidence)] = outcome(project)
    [(whole_text, whole_status, whole_evidence)] = outcome(other_project)
    assert (status, evidence) == (whole_status, whole_evidence) and len(evidence) == 10
    # What differs: the wording is the one the first batch chose from its five, where the
    # one run chose from all ten.
    assert "db-staging-2" in text and "db-staging-2" in whole_text


def test_an_older_backlog_is_swept_too_oldest_first_a_day_at_a_time(project):
    capped(project, 3)
    files = [RawFile(path, text.encode()) for path, text in DAYS.items()]
    ingest_files(project=project, files=files, actor="system")

    runs = sweep_all(project)

    days = [tuple(sorted({e.occurred_at.date() for e in batch})) for batch in _episodes(runs)]
    assert all(r.counts["selected"] <= 3 and not r.counts["older_left"] for r in runs)
    # Whole days while a day fits: a batch ends at a day boundary rather than split one.
    assert all(len(d) == 1 for d in days)
    assert [d[0] for d in days] == sorted(d[0] for d in days)
    assert sum(r.counts["selected"] for r in runs) == (
        Episode.objects.dreamable().filter(project=project).count()
    )


def _episodes(runs):
    return [list(Episode.objects.filter(id__in=ids).order_by("id")) for ids in swept_ranges(runs)]


def test_a_batch_that_fails_is_taken_again_by_the_next_run(project, monkeypatch):
    capped(project)
    one_day(project)
    first = dream(project)
    mark = Project.objects.get(pk=project.pk).dream_watermark
    assert first.watermark_after == mark

    def broken(*args, **kwargs):
        raise RuntimeError("worker died")

    monkeypatch.setattr(pipeline, "run_sweep", broken)
    assert dream(project).status == DreamRun.Status.FAILED
    assert Project.objects.get(pk=project.pk).dream_watermark == mark
    monkeypatch.undo()

    again = dream(project)
    assert again.watermark_before == mark
    assert again.counts["selected"] == CAP


def test_a_backlog_within_the_cap_is_one_first_run_as_before(project):
    one_day(project)
    run = dream(project)
    assert run.phases["light"]["note"].startswith("first run: took the newest 1 day(s)")
    assert run.watermark_after == Episode.objects.filter(project=project).latest("id").pk


TURNS = 23


def transcript(n: int, start: int = 0) -> RawFile:
    rows = [
        {
            "id": f"T{i}",
            "role": "Maya" if i % 2 else "Tom",
            "content": f"Turn {i}: the kiln at bay {i % 5} fires at {900 + i} degrees.",
            "timestamp": f"2026-05-08T13:{i // 60:02d}:{i % 60:02d}+00:00",
        }
        for i in range(start, start + n)
    ]
    return RawFile(f"chat-{start}.jsonl", "\n".join(json.dumps(r) for r in rows).encode())


def test_a_fold_in_chunks_writes_the_same_index_as_one_pass(project, monkeypatch):
    ingest_files(project=project, files=[transcript(5)], actor="system")
    assert index_fold(project) == 5
    # New turns of a new source, and one more of the first source's turns in the same file.
    ingest_files(project=project, files=[transcript(TURNS, start=5)], actor="system")
    using = backend()
    writes = []
    apply = type(using).apply

    def spy(self, project_id, upserts, *args, **kwargs):
        writes.append(len(upserts))
        return apply(self, project_id, upserts, *args, **kwargs)

    monkeypatch.setattr(index, "REBUILD_CHUNK", 4)
    monkeypatch.setattr(type(using), "apply", spy)

    assert index_fold(project) == TURNS
    assert max(writes) <= 4 and sum(writes) == TURNS
    chunked = using.digests(project.pk)
    assert index_check(project).ok

    monkeypatch.undo()
    index_rebuild(project)
    assert using.digests(project.pk) == chunked


WAITING = [
    "Invoices are stored in the ledger schema on billing-db-3.",
    "The sync interval for mobile clients is 10 minutes.",
    "Nightly backups of the ledger schema go to bucket cold-store-2.",
]
DRAFTS = [
    "billing-db-3 holds the invoices in its ledger schema.",  # restates the first
    "The sync interval for mobile clients is 5 minutes.",  # a change, not more evidence
    "Invoices are stored in the ledger schema on billing-db-7.",  # another host
    "cold-store-2 receives the nightly ledger schema backups.",  # restates the third
    "Lunch on Friday is at the usual place.",
]


def unrelated(k: int) -> str:
    """A waiting fact sharing no rare term with the drafts (only common queue words)."""
    return f"The worker q{k}x copies batch b{k}y into shelf s{k}z every night."


def waiting_queue(project, texts, first=0) -> list[int]:
    Candidate.objects.bulk_create(
        Candidate(
            project=project,
            text=t,
            page_target="SYSTEM_OVERVIEW",
            memory_type="fact",
            dedupe_key=f"w{first + i}",
            status=Candidate.Status.DEFERRED if i % 2 else Candidate.Status.PROPOSED,
        )
        for i, t in enumerate(texts)
    )
    return list(
        Candidate.objects.filter(project=project).order_by("id").values_list("id", flat=True)
    )


def drafted(texts):
    return [
        SimpleNamespace(text=t, dedupe_key=f"d{i}", conflict_keys=(), status="proposed")
        for i, t in enumerate(texts)
    ]


def test_drafts_fold_into_the_waiting_candidates_restating_finds_among_the_whole_queue(project):
    texts = [unrelated(k) for k in range(40)]
    texts[7:7] = WAITING[:1]
    texts[30:30] = WAITING[1:]
    ids = waiting_queue(project, texts)

    found = sweep_persist._restating_open(project, drafted(DRAFTS))

    whole = restating(DRAFTS, texts)
    assert found == {f"d{d}": ids[o] for d, o in whole.items()}
    assert found == {"d0": ids[7], "d3": ids[31]}


def test_a_restatement_is_found_reading_the_drafts_neighbours_not_the_queue(project, monkeypatch):
    ids = waiting_queue(project, [*WAITING, *(unrelated(k) for k in range(300))])
    sweep_persist._index_terms(project, Candidate.objects.filter(project=project))
    # A decided candidate leaves the queue and the term index.
    Candidate.objects.filter(pk=ids[1]).update(status=Candidate.Status.APPROVED)
    read = []
    parsed = sweep_persist._parsed
    monkeypatch.setattr(sweep_persist, "_parsed", lambda text: read.append(text) or parsed(text))

    with CaptureQueriesContext(connection) as queries:
        found = sweep_persist._restating_open(project, drafted(DRAFTS))

    assert found == {"d0": ids[0], "d3": ids[2]}
    # The drafts, and the waiting texts sharing one of their rare terms: the first
    # candidate, the backup one (ledger schema) and nothing of the 300 others.
    assert sorted(read[len(DRAFTS) :]) == sorted([WAITING[0], WAITING[2]])
    # Finding restatements only reads; the next indexing drops the decided candidate.
    assert CandidateTerm.objects.filter(candidate=ids[1]).exists()
    waiting = Candidate.objects.filter(project=project, status__in=Candidate.OPEN_STATUSES)
    sweep_persist._index_terms(project, waiting)
    assert not CandidateTerm.objects.filter(candidate=ids[1]).exists()
    assert CandidateTerm.objects.filter(project=project).values("candidate").distinct().count() == (
        302
    )

    # A queue twice as long: the same queries, the same texts read.
    waiting_queue(project, [unrelated(k) for k in range(300, 600)], first=1000)
    sweep_persist._index_terms(project, Candidate.objects.filter(project=project))
    read.clear()
    with CaptureQueriesContext(connection) as longer:
        assert sweep_persist._restating_open(project, drafted(DRAFTS)) == found
    assert len(longer) == len(queries)
    assert sorted(read[len(DRAFTS) :]) == sorted([WAITING[0], WAITING[2]])


def test_a_worker_run_that_leaves_backlog_queues_the_next_until_it_drains(
    project, django_capture_on_commit_callbacks
):
    capped(project)
    one_day(project)
    total = Episode.objects.dreamable().filter(project=project).count()
    first = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)

    with django_capture_on_commit_callbacks(execute=True):
        tasks.dream_run(first.pk)

    runs = list(DreamRun.objects.filter(project=project).order_by("id"))
    assert len(runs) == -(-total // CAP) > 2
    assert all(r.status == DreamRun.Status.SUCCEEDED for r in runs)
    assert [r.counts.get("next_run") for r in runs] == [r.pk for r in runs[1:]] + [None]
    assert sum(r.counts["selected"] for r in runs) == total
    assert runs[-1].counts["remaining"] == 0
    newest = Episode.objects.filter(project=project).latest("id").pk
    assert Project.objects.get(pk=project.pk).dream_watermark == newest


def test_the_next_batch_is_queued_once_never_beside_an_open_run(project):
    capped(project)
    one_day(project)
    first = dream(project)
    assert first.counts["remaining"] > 0

    # A run someone asked for meanwhile takes the next batch: nothing is queued beside it.
    asked = services.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    assert services.dream_continue(first) is None
    asked = services.dream_execute(run_id=asked.pk)

    # Its continuation is queued once; a redelivered task of either run queues nothing.
    queued = services.dream_continue(asked)
    assert queued is not None and queued.status == DreamRun.Status.QUEUED
    assert services.dream_continue(asked) is None
    assert services.dream_continue(first) is None
    assert DreamRun.objects.filter(project=project, status__in=DreamRun.OPEN_STATUSES).count() == 1
    assert DreamRun.objects.get(pk=asked.pk).counts["next_run"] == queued.pk


def test_a_run_that_drains_the_backlog_or_reads_a_scope_queues_nothing(project):
    one_day(project)
    whole = dream(project)  # within the cap
    assert not whole.counts["remaining"]
    assert services.dream_continue(whole) is None
    capped(project)
    one_day(project)  # the same day again: nothing new past the watermark
    preview = services.dream_request(project=project, trigger="preview", actor="t", enqueue=False)
    assert services.dream_continue(services.dream_execute(run_id=preview.pk)) is None
    assert not DreamRun.objects.filter(project=project, status__in=DreamRun.OPEN_STATUSES).exists()


def test_the_run_page_and_the_cli_say_how_much_backlog_is_left(client, carol, project, capsys):
    capped(project)
    one_day(project)
    call_command("dream", "--project", project.slug)
    out = capsys.readouterr().out
    first = DreamRun.objects.get(project=project)
    left = first.counts["remaining"]
    assert f"backlog: {left} episodes remain past the watermark" in out
    queued = services.dream_continue(first)

    client.force_login(carol)
    page = client.get(reverse("dreaming:run", args=[project.slug, first.pk])).content.decode()
    assert "Backlog left" in page and f"run #{queued.pk}</a> takes the next batch" in page
