"""What each wizard step does: thin calls into the services that own the work.

Import is `llmwiki.ingest`, relabelling `llmwiki.services`, sweeps `dreaming.services`,
conflicts `reviews.conflicts`, approvals `reviews.actions`: the wizard adds only its run
(what was chosen, what came of it) and the authority boundary, checked before each write.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from dreaming import services as dreaming
from dreaming.models import Candidate, DreamRun
from llmwiki.access import PERMISSIONS, Do, can, may
from llmwiki.errors import Refused
from llmwiki.ingest import IngestReport, RawFile, SourceResult, ingest_files
from llmwiki.models import (
    AuditEvent,
    Episode,
    Export,
    Membership,
    Page,
    Project,
)
from llmwiki.services import episode_relabel, project_create
from llmwiki.vocabulary import export_kind_names
from reviews.actions import FormState, candidate_approve
from reviews.conflicts import conflict_resolve
from reviews.exports import ExportOptions, export_create
from reviews.exports.service import check_may_export
from wizard.models import STEPS, WizardRun


class BoundaryRefused(Refused):
    """The run's authority boundary does not allow this write."""


def _require(run: WizardRun, action: str, actor: AbstractBaseUser) -> None:
    """Refuse (and audit the refusal) when the boundary does not allow `action`."""
    reason = run.refusal(action)
    if reason:
        AuditEvent.record(
            actor=actor, action="wizard.denied", obj=run, project=run.project, note=reason
        )
        raise BoundaryRefused(reason, 403)


def _save(run: WizardRun, *fields: str) -> None:
    run.updated_at = timezone.now()
    run.save(update_fields=[*fields, "updated_at"])


def start_refusal(user: AbstractBaseUser) -> Refused | None:
    """Why `user` cannot walk a run, or None when they can.

    Step 1 needs a project the user reviews, or the permission to create one: anyone else
    would get an empty choice and leave a run that can never go on. A viewer is told the
    role it takes (403); someone in no project is told nothing about any (404).
    """
    if user.has_perm("llmwiki.add_project"):
        return None
    roles = list(
        Membership.objects.filter(user=user)
        .order_by("project__name")
        .values_list("role", "project__name")
    )
    if any(may(role, Do.REVIEW) for role, _ in roles):
        return None
    if not roles:
        return Refused("you are not a member of any project", 404)
    held = ", ".join(f"{role} of {name}" for role, name in roles)
    return Refused(
        f"The wizard needs the {PERMISSIONS[Do.REVIEW]} role on a project; you are "
        f"{held}. Ask a maintainer of the project for the role.",
        403,
    )


def wizard_start(*, user: AbstractBaseUser) -> WizardRun:
    """A new run, only for someone who can walk it (`start_refusal`)."""
    refusal = start_refusal(user)
    if refusal is not None:
        raise refusal
    return WizardRun.objects.create(user=user)


def wizard_visit(*, run: WizardRun, number: int) -> None:
    """Remember how far the user went, so leaving and coming back resumes there.

    Seeing a step opens the next one: every step after the first may be passed over (a
    handoff-only run imports nothing), and any step up to the furthest may be revisited.
    Going back to look at an earlier step does not move where the run resumes.
    """
    reached = min(len(STEPS), number + 1) if run.project_id else run.reached
    step, reached = max(run.step, number), max(run.reached, reached)
    if (run.step, run.reached) != (step, reached):
        run.step, run.reached = step, reached
        _save(run, "step", "reached")


@transaction.atomic
def wizard_choose(
    *,
    run: WizardRun,
    actor: AbstractBaseUser,
    boundary: str,
    project: Project | None = None,
    new_project: dict[str, str] | None = None,
) -> WizardRun:
    """Step 1: the project (an existing one, or a new one) and the authority boundary."""
    if new_project is not None:
        if not actor.has_perm("llmwiki.add_project"):
            raise Refused("creating a project needs the permission to add projects", 403)
        project = project_create(
            slug=new_project["slug"],
            name=new_project["name"],
            actor=actor,
            authority=boundary,
            owner=actor,
        )
    if project is None or not can(actor, project, Do.REVIEW):
        raise Refused("choose a project you review or maintain", 403)
    if run.project_id not in (None, project.pk) and run_episodes(run).exists():
        raise Refused(
            "this run already imported material into another project; start a new run", 409
        )
    before = {"project": run.project_id, "boundary": run.boundary}
    run.project, run.boundary = project, boundary
    run.choices["project"] = {"project": project.slug, "boundary": boundary}
    _save(run, "project", "boundary", "choices")
    AuditEvent.record(
        actor=actor,
        action="wizard.choose",
        obj=run,
        project=project,
        before=before,
        after={"project": project.pk, "boundary": boundary},
    )
    wizard_visit(run=run, number=1)
    return run


def run_episodes(run: WizardRun):
    """This run's material: the episodes its imports created."""
    return Episode.objects.filter(project_id=run.project_id, wizard_run_id=run.pk)


def wizard_import(*, run: WizardRun, files: list[RawFile], actor: AbstractBaseUser) -> IngestReport:
    """Step 2: import through the ingest service; the run keeps every file's result."""
    _require(run, "import", actor)
    report = ingest_files(project=run.project, files=files, actor=actor, wizard_run_id=run.pk)
    kept = run.results.setdefault("import", {"sources": [], "episodes_created": 0, "skipped": []})
    for source in report.sources:
        kept["sources"].append(asdict(source))
    kept["episodes_created"] += report.episodes_created
    kept["skipped"] += report.skipped
    _save(run, "results")
    return report


def imported_report(run: WizardRun) -> IngestReport | None:
    """Everything this run imported, as one report (the import page's result table)."""
    kept = run.result("import")
    if not kept:
        return None
    return IngestReport(
        sources=[SourceResult(**s) for s in kept["sources"]],
        episodes_created=kept["episodes_created"],
        skipped=kept["skipped"],
    )


def wizard_relabel(
    *, run: WizardRun, episode_ids: list[int], memory_type: str, actor: AbstractBaseUser
) -> int:
    """Step 3: correct the memory type of some of this run's episodes."""
    _require(run, "relabel", actor)
    episodes = list(run_episodes(run).filter(pk__in=episode_ids))
    if len(episodes) != len(set(episode_ids)):
        raise Refused("some of the chosen episodes are not this run's material", 400)
    moved = episode_relabel(
        episodes=episodes, memory_type=memory_type, actor=actor, wizard_run_id=run.pk
    )
    run.results.setdefault("classify", {"relabelled": 0})["relabelled"] += moved
    _save(run, "results")
    return moved


SWEEPS = {"propose": DreamRun.Trigger.MANUAL, "preview": DreamRun.Trigger.PREVIEW}


def wizard_dream(*, run: WizardRun, action: str, actor: AbstractBaseUser) -> DreamRun:
    """Steps 4 and 5: a sweep of this run's material, queued on the worker.

    "propose" writes candidates (never claims); "preview" writes nothing and says why.
    """
    _require(run, action, actor)
    if not can(actor, run.project, Do.REVIEW):
        raise Refused("starting a sweep needs the reviewer role", 403)
    try:
        sweep = dreaming.dream_request(
            project=run.project, trigger=SWEEPS[action], actor=actor, wizard_run_id=run.pk
        )
    except dreaming.DreamBusy as busy:
        raise Refused(str(busy), 409) from None
    if action == "propose":
        run.proposal_run = sweep
    else:
        run.preview_run = sweep
    _save(run, "proposal_run" if action == "propose" else "preview_run")
    return sweep


def wizard_resolve(*, run: WizardRun, actor: AbstractBaseUser, **resolution: Any):
    """Step 6: resolve a conflict with the conflict queue's own service and gates."""
    _require(run, "resolve", actor)
    conflict = conflict_resolve(actor=actor, **resolution)
    done = run.results.setdefault("conflicts", {"resolved": []})
    done["resolved"].append({"conflict": conflict.pk, "resolution": conflict.resolution})
    _save(run, "results")
    return conflict


def wizard_commit(
    *,
    run: WizardRun,
    actor: AbstractBaseUser,
    chosen: list[tuple[Candidate, FormState, bool]],
) -> dict[str, list]:
    """Step 7: approve the chosen candidates through the review gates, one by one.

    Each approval is its own transaction, as in the review queue: one refusal (a stale
    form, a sensitive item without its confirmation) leaves the others approved, and the
    summary names it. Revisions this commit made are its own, not a change behind the
    reviewer's back: a later candidate on the same page is re-based onto them.
    """
    _require(run, "commit", actor)
    shown: dict[str, int | None] = {}  # page → the revision the form showed
    latest: dict[str, int | None] = {}  # page → the revision this commit made last
    approved, refused = [], []
    for candidate, seen, sensitive_confirmed in chosen:
        key = candidate.page_target
        if key in latest and shown[key] == seen.page_revision_id:
            seen = FormState(seen.candidate_version, latest[key])
        try:
            claim = candidate_approve(
                candidate=candidate,
                reviewer=actor,
                seen=seen,
                sensitive_confirmed=sensitive_confirmed,
                note=f"wizard run #{run.pk}",
            )
        except Refused as exc:
            refused.append({"candidate": candidate.pk, "reason": str(exc)})
            continue
        revision = Page.objects.select_related("current_revision").get(pk=claim.page_id)
        revision = revision.current_revision
        shown.setdefault(key, seen.page_revision_id)
        latest[key] = revision.pk
        approved.append(
            {
                "candidate": candidate.pk,
                "claim": claim.pk,
                "page": key,
                "revision": revision.pk,
                "number": revision.number,
            }
        )
    summary = run.results.setdefault("commit", {"approved": [], "refused": []})
    summary["approved"] += approved
    summary["refused"] = refused
    _save(run, "results")
    return {"approved": approved, "refused": refused}


def wizard_export(
    *,
    run: WizardRun,
    actor: AbstractBaseUser,
    audience: str,
    budget: int,
    with_episodes: bool = False,
) -> list[Export]:
    """Step 8: one export of each kind, built by the exports module from the reviewed layer.

    `with_episodes` scopes this run's active episodes in as episodic context; nothing else
    of the raw or episodic layers is read.
    """
    _require(run, "export", actor)
    episode_ids = ()
    if with_episodes:
        episode_ids = tuple(run_episodes(run).dreamable().values_list("id", flat=True))
    # Refused once for all kinds: a refusal must not leave the first kinds built.
    check_may_export(run.project, actor, audience)
    built = [
        export_create(
            project=run.project,
            options=ExportOptions(kind, audience, budget=budget, episode_ids=episode_ids),
            actor=actor,
        )
        for kind in export_kind_names()
    ]
    run.results["exports"] = {
        "ids": [e.pk for e in built],
        "audience": audience,
        "episodes": len(episode_ids),
    }
    _save(run, "results")
    return built
