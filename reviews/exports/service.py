"""Building, storing, listing and checking exports."""

from __future__ import annotations

import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from llmwiki.access import Do, has_role, may, role_in
from llmwiki.errors import InputError, Refused
from llmwiki.models import (
    SECURITY_RANK,
    AuditEvent,
    Claim,
    Export,
    PageRevision,
    Project,
    SecurityClass,
)
from llmwiki.vocabulary import export_kind, export_kind_names
from reviews.exports import documents, pack, selection
from reviews.exports.selection import select_state

GENERATOR = "llmwiki exports/1"


@dataclass(frozen=True)
class Writer:
    """How an export kind (declared in `llmwiki.vocabulary`) is written."""

    write: Callable[[documents.State, documents.Ledger, int], tuple[dict[str, str], dict]]
    # Pages used whole even when no claim of theirs is cited ("*": every page).
    whole: frozenset[str] = frozenset()
    lists_questions: bool = False  # its files speak of the open questions (list or count)
    zipped: bool = False  # its files also go out as one zip


def _without_budget(
    write: Callable[[documents.State, documents.Ledger], dict[str, str]],
) -> Callable[[documents.State, documents.Ledger, int], tuple[dict[str, str], dict]]:
    return lambda state, ledger, _budget: (write(state, ledger), {})


def _startup_packet(state, ledger, budget):
    texts, left_out = documents.startup_packet(state, ledger, budget)
    return texts, {"left_out": left_out}


WRITERS: dict[str, Writer] = {
    "system-profile": Writer(_without_budget(documents.system_profile)),
    "receiver-brief": Writer(
        _without_budget(documents.receiver_brief),
        whole=frozenset({"OPEN_QUESTIONS"}),
        lists_questions=True,
    ),
    "startup-packet": Writer(_startup_packet, lists_questions=True),
    "handoff": Writer(
        _without_budget(documents.handoff), whole=frozenset("*"), lists_questions=True, zipped=True
    ),
}


def lists_questions(kind: str) -> bool:
    writer = WRITERS.get(kind)
    return writer is not None and writer.lists_questions


@dataclass(frozen=True)
class ExportOptions:
    """What to build. `episode_ids` scopes episodic context in explicitly (default: none)."""

    kind: str
    audience: str = SecurityClass.INTERNAL
    budget: int = documents.DEFAULT_BUDGET
    episode_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        kind = export_kind(self.kind)
        if kind is None:
            names = "|".join(export_kind_names(aliases=True))
            raise InputError("kind", f"unknown kind {self.kind!r} ({names})")
        if self.audience not in SECURITY_RANK:
            raise InputError("audience", f"unknown audience {self.audience!r}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "episode_ids", tuple(sorted(set(self.episode_ids))))


@dataclass
class Rendered:
    """An export's files (MANIFEST.json included) and what it was built from."""

    files: dict[str, bytes]
    manifest: dict
    claim_ids: list[int]
    revision_ids: list[int]
    zip_name: str = ""
    zip: bytes = b""

    @property
    def all_files(self) -> dict[str, bytes]:
        """What goes on disk: the files, and a handoff bundle's zip of them."""
        return {**self.files, **({self.zip_name: self.zip} if self.zip_name else {})}


def export_render(*, project: Project, options: ExportOptions) -> Rendered:
    """The files `options` gives on the project's current reviewed state; writes nothing."""
    state = select_state(project, options.audience, options.episode_ids)
    ledger = documents.Ledger()
    writer = WRITERS[options.kind]
    try:
        texts, extra = writer.write(state, ledger, options.budget)
    except ValueError as exc:
        raise InputError("budget", str(exc)) from None
    # Only what a statement cites counts as used: a claim left out of a startup packet
    # does not make it stale.
    cited = {s["claim_id"] for s in ledger.statements if s["kind"] == "claim"}
    claim_ids = [pk for pk in state.claim_ids if pk in cited]
    # The revisions used: those the cited claims come from; a page an export shows whole
    # (OPEN_QUESTIONS in a brief, every page of a bundle) counts even when empty.
    used = {s["revision_id"] for s in ledger.statements if s["kind"] == "claim"}
    whole = set(state.pages) if "*" in writer.whole else writer.whole
    revisions = [p for p in state.pages.values() if p.revision_id in used or p.key in whole]
    generated_at = state.as_of.strftime("%Y-%m-%dT%H:%M:%SZ")
    files = {name: text.encode() for name, text in texts.items()}
    files[pack.LEDGER] = pack.canonical_json(
        {"project": project.slug, "audience": options.audience, "statements": ledger.statements}
    ).encode()
    manifest = {
        "project": project.slug,
        "kind": options.kind,
        "audience": options.audience,
        "generated_at": generated_at,
        "generator": GENERATOR,
        "claims": claim_ids,
        "revisions": sorted(p.revision_id for p in revisions),
        "episodes": [s["episode_id"] for s in ledger.statements if s["kind"] == "episode"],
        "rollback_targets": [
            {
                "page": p.key,
                "revision": p.revision,
                "revision_id": p.revision_id,
                "sha256": p.content_hash,
            }
            for p in sorted(revisions, key=lambda p: p.key)
        ],
        "withheld": dict(sorted(state.withheld.items())),
        **extra,
    }
    if writer.lists_questions:
        manifest["open_questions"] = [q.conflict_id for q in state.questions]
    files, manifest = pack.with_manifest(files, manifest)
    rendered = Rendered(files, manifest, claim_ids, manifest["revisions"])
    if writer.zipped:
        rendered.zip_name = f"{project.slug}-{options.kind}-{options.audience}.zip"
        rendered.zip = pack.zip_bytes(files, state.as_of)
    return rendered


def check_may_export(project: Project, actor: Any, audience: str) -> None:
    """Reviewers export; restricted audiences need the project's restricted clearance.

    A string actor (`cli:NAME`, `system`) is someone with the server's shell: trusted, as
    every command of §12 is.
    """
    if isinstance(actor, str):
        return
    role = role_in(actor, project)
    if not may(role, Do.EXPORT):
        raise Refused("exporting needs the reviewer role", 403)
    if audience == SecurityClass.RESTRICTED and not has_role(
        actor, project, project.restricted_clearance
    ):
        raise Refused(
            f"a restricted export needs the {project.restricted_clearance} role on this project",
            403,
        )


def export_create(
    *, project: Project, options: ExportOptions, actor: Any, out: Path | None = None
) -> Export:
    """Render, store under EXPORT_DIR, and record the export with what it depends on.

    The files are written first and the row in one transaction after; if the row cannot be
    saved the files are removed again, so no export exists half-made.
    """
    check_may_export(project, actor, options.audience)
    rendered = export_render(project=project, options=options)
    relative = f"{project.slug}/{options.kind}-{options.audience}-{uuid.uuid4().hex[:12]}"
    folder = Path(settings.EXPORT_DIR) / relative
    _write(folder, rendered.all_files)
    try:
        with transaction.atomic():
            export = Export.objects.create(
                project=project,
                kind=options.kind,
                audience=options.audience,
                generated_at=timezone.now(),
                generated_by=None if isinstance(actor, str) else actor,
                generator_version=GENERATOR,
                files=pack.file_entries(rendered.all_files),
                manifest_sha256=pack.sha256(rendered.files[pack.MANIFEST]),
                path=relative,
            )
            export.claims.set(rendered.claim_ids)
            export.revisions.set(rendered.revision_ids)
            AuditEvent.record(
                actor=actor,
                action="export.create",
                obj=export,
                project=project,
                after={
                    "kind": options.kind,
                    "audience": options.audience,
                    "manifest_sha256": export.manifest_sha256,
                    "withheld": rendered.manifest["withheld"],
                },
            )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if out is not None:
        _write(Path(out), rendered.all_files)
    export.rendered = rendered
    return export


def _write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


def export_folder(export: Export) -> Path:
    return Path(settings.EXPORT_DIR) / export.path


def export_verify(folder: Path) -> pack.Verification:
    """Check a folder of export files against its MANIFEST.json (and its zip, if any)."""
    zips = tuple(sorted(p.name for p in Path(folder).glob("*-handoff-*.zip")))
    return pack.verify_folder(Path(folder), zips)


def export_stored_status(export: Export) -> str:
    """`ok`, `erased` (erasure removed its files) or what differs on disk."""
    if not export.files:
        return "erased"
    folder = export_folder(export)
    try:
        result = export_verify(folder)
    except ValueError as exc:
        return str(exc)
    recorded = {e["name"]: e["sha256"] for e in export.files}
    for name, digest in recorded.items():
        path = folder / name
        if not path.is_file():
            result.missing.append(name)
        elif name.endswith(".zip") and pack.sha256(path.read_bytes()) != digest:
            result.differs.append(name)
    return "ok" if result.ok else result.summary()


def export_manifest(export: Export) -> dict:
    """The stored MANIFEST.json of an export ({} when its files are gone or unreadable)."""
    try:
        return pack.read_manifest(export_folder(export))
    except ValueError:
        return {}


def export_document(export: Export, *, stale: bool | None = None) -> dict:
    """An export as JSON (command line, wizard, API): files, manifest, verify, stale."""
    manifest = getattr(getattr(export, "rendered", None), "manifest", None)
    manifest = manifest if manifest is not None else export_manifest(export)
    return {
        "export_id": export.pk,
        "kind": export.kind,
        "audience": export.audience,
        "files": export.files,
        "manifest_sha256": export.manifest_sha256,
        "claims": manifest.get("claims", []),
        "revisions": manifest.get("revisions", []),
        "withheld": manifest.get("withheld", {}),
        "generated_at": manifest.get("generated_at"),
        "verify": export_stored_status(export),
        "stale": export.pk in stale_export_ids([export.pk]) if stale is None else stale,
    }


def exports_quoting(project_id: int, episode_ids: list[int]) -> set[int]:
    """Exports whose files quote any of these episodes (scoped in as episodic context).

    Claims and revisions are linked rows; scoped episodes are listed only in the stored
    MANIFEST.json, so erasure reads the manifests (erasure is rare, exports few).
    """
    wanted = set(episode_ids)
    return {
        export.pk
        for export in Export.objects.filter(project=project_id).only("id", "path", "files")
        if export.files and wanted.intersection(export_manifest(export).get("episodes") or [])
    }


# --- Staleness: one rule for the Exports page, the API, the wizard, metrics and --verify ---


@dataclass(frozen=True)
class Basis:
    """The reviewed state an export was built from, as its row and MANIFEST.json record it."""

    project: Project
    kind: str
    audience: str
    claims: frozenset[int]
    revisions: frozenset[int]
    open_questions: frozenset[int]

    @classmethod
    def of_manifest(cls, project: Project, manifest: dict) -> Basis:
        return cls(
            project,
            manifest.get("kind", ""),
            manifest.get("audience", ""),
            frozenset(manifest.get("claims") or ()),
            frozenset(manifest.get("revisions") or ()),
            frozenset(manifest.get("open_questions") or ()),
        )


def stale_reasons(bases: dict[Any, Basis]) -> dict[Any, list[str]]:
    """Why each export is stale, in words (an empty list: it is current).

    Stale when a rebuild would read other reviewed state than the export did: a claim it
    cites is no longer approved, a page revision it used is no longer its page's current
    one, or (for the kinds that speak of them) the open questions a rebuild would list are
    not the ones it listed. A constant number of queries, plus a few for each project
    and audience whose open questions are compared.
    """
    project_ids = {b.project.pk for b in bases.values()}
    approved = set(
        Claim.objects.filter(project_id__in=project_ids, status=Claim.Status.APPROVED)
        .values_list("pk", flat=True)
        .order_by()
    )
    used = set().union(*(b.revisions for b in bases.values()))
    revisions = {
        r.pk: r
        for r in PageRevision.objects.filter(pk__in=used).select_related("page__current_revision")
    }
    listed = _listed_questions(
        {b.project.pk: b.project for b in bases.values()},
        {
            (b.project.pk, b.audience)
            for b in bases.values()
            if lists_questions(b.kind) and b.audience in SECURITY_RANK
        },
    )
    out: dict[Any, list[str]] = {}
    for key, basis in bases.items():
        reasons = [f"claim {pk} is no longer approved" for pk in sorted(basis.claims - approved)]
        for pk in sorted(basis.revisions):
            was = revisions.get(pk)
            if was is None:
                reasons.append(f"page revision {pk} is gone")
                continue
            now = was.page.current_revision
            if now != was:
                reasons.append(
                    f"{was.page.key} r{was.number} is no longer current"
                    + (f" (now r{now.number})" if now else "")
                )
        now_listed = listed.get((basis.project.pk, basis.audience))
        if lists_questions(basis.kind) and now_listed is not None:
            if added := sorted(now_listed - basis.open_questions):
                reasons.append(
                    "open questions it does not list: " + ", ".join(f"#{pk}" for pk in added)
                )
            if dropped := sorted(basis.open_questions - now_listed):
                reasons.append(
                    "open questions no longer open: " + ", ".join(f"#{pk}" for pk in dropped)
                )
        out[key] = reasons
    return out


def _listed_questions(
    projects: dict[int, Project], wanted: set[tuple[int, str]]
) -> dict[tuple[int, str], set[int]]:
    """The conflicts a rebuild would list as open questions, per (project, audience):
    the exports' own rule (`selection.as_question`), in a constant number of queries."""
    listed: dict[tuple[int, str], set[int]] = {key: set() for key in wanted}
    if not wanted:
        return listed
    for conflict in selection.unresolved_conflicts({pk for pk, _ in wanted}):
        project = projects[conflict.project_id]
        for pk, audience in wanted:
            if pk == project.pk and selection.as_question(conflict, project, audience, Counter()):
                listed[pk, audience].add(conflict.pk)
    return listed


def stale_export_ids(export_ids: list[int]) -> set[int]:
    """Which of these stored exports are stale (`stale_reasons`)."""
    return _stale(list(Export.objects.filter(pk__in=export_ids).select_related("project")))


def _stale(exports: list[Export]) -> set[int]:
    """`stale_reasons` for loaded exports: what they used is read from their rows, the
    open questions (which only the manifest lists) from their MANIFEST.json."""
    used: dict[int, tuple[set[int], set[int]]] = {e.pk: (set(), set()) for e in exports}
    claims = Export.claims.through.objects.filter(export__in=exports)
    for export_id, claim_id in claims.values_list("export_id", "claim_id"):
        used[export_id][0].add(claim_id)
    revisions = Export.revisions.through.objects.filter(export__in=exports)
    for export_id, revision_id in revisions.values_list("export_id", "pagerevision_id"):
        used[export_id][1].add(revision_id)
    bases = {
        e.pk: Basis(
            e.project,
            e.kind,
            e.audience,
            frozenset(used[e.pk][0]),
            frozenset(used[e.pk][1]),
            frozenset(export_manifest(e).get("open_questions") or ())
            if lists_questions(e.kind)
            else frozenset(),
        )
        for e in exports
    }
    return {pk for pk, reasons in stale_reasons(bases).items() if reasons}


def exports_for_list(project: Project) -> list[Export]:
    """The project's exports, newest first, each with `stale` and `status` set."""
    exports = list(Export.objects.filter(project=project).select_related("generated_by", "project"))
    stale = _stale(exports)
    for export in exports:
        export.stale = export.pk in stale
        export.status = export_stored_status(export)
    return exports
