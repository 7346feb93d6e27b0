"""What the step pages show: this run's episodes, candidates and conflicts, grouped.

Each reads a fixed number of queries whatever the run's size; the pages show the first
`SHOWN` items of a group with the group's full count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef

from dreaming.models import Candidate, CandidateEvidence, Conflict, ConflictSide
from llmwiki.models import Episode, Export
from llmwiki.vocabulary import PAGE_TITLES, STANDARD_PAGES
from reviews.conflicts import needs_sensitive_confirmation
from reviews.exports import export_folder
from reviews.exports.pack import read_manifest
from reviews.exports.service import export_stored_status, stale_export_ids
from reviews.views.exports import may_download
from wizard.models import WizardRun
from wizard.services import run_episodes

SHOWN = 100


@dataclass
class Group:
    key: str
    label: str
    count: int = 0
    items: list[Any] = field(default_factory=list)


def episodes_by_label(run: WizardRun) -> list[Group]:
    """This run's episodes under the label in force: a correction, else the automatic one."""
    groups = {value: Group(value, label) for value, label in Episode.MemoryType.choices}
    episodes = run_episodes(run).select_related("source").with_label_in_force().order_by("id")
    for episode in episodes.iterator(chunk_size=2000):
        group = groups[episode.label_in_force]
        group.count += 1
        if len(group.items) < SHOWN:
            group.items.append(episode)
    return list(groups.values())


def run_candidates(run: WizardRun):
    """Candidates whose evidence includes this run's material."""
    cited = CandidateEvidence.objects.filter(
        candidate=OuterRef("pk"), episode__wizard_run_id=run.pk
    )
    return Candidate.objects.filter(project_id=run.project_id).filter(Exists(cited))


def proposals_by_page(run: WizardRun) -> list[Group]:
    """This run's own proposals (made by its sweeps), open, by destination page."""
    groups = {key: Group(key, PAGE_TITLES[key]) for key in STANDARD_PAGES}
    other = Group("other", "Other pages")
    candidates = (
        run_candidates(run)
        .open()
        .filter(run__wizard_run_id=run.pk)
        .order_by("page_target", "-score", "id")
    )
    for c in candidates.iterator(chunk_size=2000):
        group = groups.get(c.page_target, other)
        group.count += 1
        if len(group.items) < SHOWN:
            group.items.append(c)
    return [*groups.values(), *([other] if other.count else [])]


def evidence_added(run: WizardRun) -> Group:
    """Candidates this run's material only added evidence to: made before it, by another
    sweep or run, they are not its proposals."""
    others = run_candidates(run).exclude(run__wizard_run_id=run.pk)
    return Group(
        "evidence",
        "Adds evidence to candidates already there",
        count=others.count(),
        items=list(others.order_by("id")[:SHOWN]),
    )


def preview_outcome(run: WizardRun) -> dict[str, Any] | None:
    """The finished preview's answer, with every item's reason: proposed, stays episodic,
    folded as a duplicate, blocked, or only adding evidence to a candidate already there.

    An item that would add evidence to one of this run's own proposals (made by an earlier
    sweep of the run) is still this run's proposal; to any other candidate, it is not.
    """
    sweep = run.preview_run
    if sweep is None or sweep.preview is None:
        return None
    targets = {i["adds_evidence_to"] for i in sweep.preview["candidates"]} - {None}
    own = set(
        Candidate.objects.filter(pk__in=targets, run__wizard_run_id=run.pk).values_list(
            "pk", flat=True
        )
    )
    items, adds_evidence = [], []
    for item in sweep.preview["candidates"]:
        target = item.get("adds_evidence_to")
        (adds_evidence if target is not None and target not in own else items).append(item)
    by_status = Counter(item["status"] for item in items)
    return {
        "adds_evidence": adds_evidence,
        "proposed": [i for i in items if i["status"] == "proposed"],
        "deferred": [i for i in items if i["status"] == "deferred"],
        "blocked": [i for i in items if i["status"] == "blocked"],
        "stays_episodic": sweep.preview["stays_episodic"],
        "duplicates_folded": sweep.preview["duplicates_folded"],
        "counts": by_status,
    }


def run_conflicts(run: WizardRun) -> list[Conflict]:
    """Unresolved conflicts a side of which rests on this run's material."""
    cited = ConflictSide.evidence.through.objects.filter(
        conflictside__conflict=OuterRef("pk"), episode__wizard_run_id=run.pk
    )
    conflicts = list(
        Conflict.objects.filter(project_id=run.project_id)
        .unresolved()
        .filter(Exists(cited))
        .prefetch_related("sides__evidence", "sides__candidate", "sides__claim__evidence")
        .order_by("detected_at", "id")[:SHOWN]
    )
    for conflict in conflicts:
        conflict.sensitive = needs_sensitive_confirmation(conflict.sides.all())
    return conflicts


def uncertain(run: WizardRun) -> list[Candidate]:
    """Deferred candidates of this run: they wait for a person, as OPEN_QUESTIONS do."""
    qs = run_candidates(run).filter(status=Candidate.Status.DEFERRED).order_by("-score", "id")
    return list(qs[:SHOWN])


def committable(run: WizardRun) -> list[Candidate]:
    """Proposed candidates of this run, with the page revision each would land on."""
    items = list(
        run_candidates(run)
        .filter(status=Candidate.Status.PROPOSED)
        .select_related("run")
        .order_by("page_target", "-score", "id")[:SHOWN]
    )
    pages = dict(run.project.pages.values_list("key", "current_revision_id"))
    for c in items:
        c.page_revision = pages.get(c.page_target)
    return items


def run_exports(run: WizardRun, user) -> list[Export]:
    """This run's exports, each with its manifest, stale mark, verify status and whether
    the user may download it (a constant number of queries; one folder read each)."""
    ids = run.result("exports").get("ids", [])
    exports = list(Export.objects.filter(project_id=run.project_id, pk__in=ids).order_by("id"))
    stale = stale_export_ids(ids)
    for export in exports:
        export.stale = export.pk in stale
        export.status = export_stored_status(export)
        export.downloadable = may_download(run.project, user, export)
        try:
            export.manifest = read_manifest(export_folder(export))
        except ValueError:
            export.manifest = None
    return exports
