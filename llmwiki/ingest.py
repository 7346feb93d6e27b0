"""Ingest: raw files → gate → sources (blob store) and episodes, in one transaction.

Everything is parsed and gated in memory first; only then are blobs written and rows
inserted, so a rejected file stores nothing and a crash leaves no half import. A file
whose bytes were already imported into the project is reported `unchanged` and skipped.
"""

from __future__ import annotations

import logging
import mimetypes
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from llmwiki import archives, versions
from llmwiki.blobs import blob_discard, blob_write_many
from llmwiki.bulk import bulk_insert
from llmwiki.errors import InputError
from llmwiki.gate import Scanned, gate, mb, screen
from llmwiki.importers import detect, registry, safejson
from llmwiki.importers.base import EpisodeDraft, TextFile
from llmwiki.models import AuditEvent, Episode, Project, Source, sha256_hex
from llmwiki.security.raw import redacted_file

log = logging.getLogger(__name__)

# Importers that read a whole tree at once; every other importer takes one file at a time.
TREE_IMPORTERS = registry.TREE

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv"}


@dataclass(frozen=True)
class RawFile:
    """One input: its path relative to what the user gave us, and its bytes."""

    path: str
    data: bytes


@dataclass
class SourceResult:
    path: str
    sha256: str | None
    status: str  # new | unchanged | updated | rejected | quarantined (every episode)
    episodes: int = 0
    flags: list[str] = field(default_factory=list)
    error: str | None = None
    quarantined: int = 0
    note: str | None = None
    superseded: int = 0  # episodes of earlier versions this one replaced

    @property
    def outcome(self) -> str:
        """The status in words: "imported, 1 of 7 quarantined" is not "quarantined"."""
        if self.status in ("new", "updated"):
            imported = "imported" if self.status == "new" else "imported as a new version"
            if self.superseded:
                imported += f" ({self.superseded} earlier episode(s) superseded)"
            if self.quarantined:
                return f"{imported}, {self.quarantined} of {self.episodes} quarantined"
            return imported
        if self.status == "quarantined":
            return "quarantined" if self.episodes == 1 else f"quarantined, all {self.episodes}"
        return self.status


@dataclass
class IngestReport:
    sources: list[SourceResult] = field(default_factory=list)
    episodes_created: int = 0
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sources": [asdict(s) for s in self.sources],
            "episodes_created": self.episodes_created,
            "skipped": self.skipped,
        }

    @property
    def rejected(self) -> list[SourceResult]:
        return [s for s in self.sources if s.status == "rejected"]


@dataclass
class _Member:
    """A file inside a unit that becomes one Source row (a zip is one member)."""

    path: str
    data: bytes
    sha256: str
    texts: list[TextFile]
    previous: Source | None = None
    existing: Source | None = None
    redacted: bool = False  # stored with its secrets redacted (llmwiki.security.raw)
    hashes: set[str] = field(default_factory=set)  # of every paragraph, for versions


@dataclass
class _Unit:
    """What is imported or rejected as a whole: a file, a zip, or a bundle/vault tree."""

    importer: str
    members: list[_Member]
    # For a zip: which importer takes which entries (a zip may hold logs and notes).
    groups: list[tuple[str, list[str]]] | None = None
    drafts: list[tuple[_Member, Scanned]] = field(default_factory=list)


def limits() -> archives.Limits:
    return archives.Limits(
        max_file_bytes=settings.LLMWIKI_MAX_FILE_BYTES,
        max_upload_bytes=settings.LLMWIKI_MAX_UPLOAD_BYTES,
        max_entry_uncompressed=settings.LLMWIKI_MAX_FILE_BYTES,
        allowed_suffixes=frozenset(registry.SUFFIXES),
    )


def collect_paths(paths: Iterable[Path]) -> list[RawFile]:
    """Read files and walk directories (recursively, sorted); paths are relative to each root."""
    files: list[RawFile] = []
    for root in paths:
        root = Path(root)
        if root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
                for name in sorted(filenames):
                    full = Path(dirpath) / name
                    if full.is_symlink():
                        continue  # never follow links out of the tree the user named
                    rel = full.relative_to(root).as_posix()
                    files.append(RawFile(rel, full.read_bytes()))
        elif root.is_file():
            files.append(RawFile(root.name, root.read_bytes()))
        else:
            raise InputError(str(root), "no such file or directory")
    return files


def ingest_files(
    *,
    project: Project,
    files: list[RawFile],
    actor: Any,
    importer: str | None = None,
    workers: int = 1,
    wizard_run_id: int | None = None,
    columns: dict[str, str] | None = None,
) -> IngestReport:
    """Gate and store `files` into `project`; see the module docstring.

    `wizard_run_id` marks the new episodes as that wizard run's material; `columns`
    names the time, actor and text columns of CSV files ({"text": "What", …}).

    `workers` > 1 lets a big import parse in that many processes (command line and tasks
    only: see `PARALLEL_MIN_BYTES`).
    """
    lim = limits()
    total = sum(len(f.data) for f in files)
    if total > lim.max_upload_bytes:
        raise InputError(
            "upload",
            f"{mb(total)} in all, over the {mb(lim.max_upload_bytes)} limit per upload",
        )
    if importer is not None:
        if detect.canonical(importer) not in detect.IMPORTERS:
            raise InputError(
                "--importer",
                f"unknown importer {importer!r}; choose {', '.join(sorted(detect.IMPORTERS))}",
            )
        importer = detect.canonical(importer)

    report = IngestReport()
    units = _drop_repeats(_plan_units(files, importer, lim, report), report)
    _attach_existing_sources(project, units)
    todo: list[_Unit] = []
    for unit in units:
        if all(m.existing for m in unit.members):
            for m in unit.members:
                report.sources.append(SourceResult(m.path, m.sha256, "unchanged"))
        else:
            todo.append(unit)
    ready: list[_Unit] = []
    for unit, outcome in zip(todo, _analyse_all(todo, workers, columns), strict=True):
        if isinstance(outcome, InputError):
            for m in unit.members:
                report.sources.append(
                    SourceResult(m.path, m.sha256, "rejected", error=str(outcome))
                )
            continue
        unit.drafts = [(unit.members[i], scanned) for i, scanned in outcome]
        ready.append(unit)
    if ready:
        report.episodes_created = _store(project, ready, actor, report, wizard_run_id)
    return report


def _plan_units(
    files: list[RawFile], importer: str | None, lim: archives.Limits, report: IngestReport
) -> list[_Unit]:
    units: list[_Unit] = []
    plain: dict[str, RawFile] = {}
    for f in files:
        if f.path.lower().endswith(".zip"):
            try:
                units.append(_zip_unit(f, lim, importer))
            except InputError as exc:
                report.sources.append(_rejected(f, str(exc)))
        else:
            plain[f.path] = f
    if not plain:
        return units
    # Skipped and unsupported files are known by their path: they are never decoded (a
    # binary under .git/ is skipped, not refused as "not UTF-8").
    by_path = [] if importer else detect.route(list(plain)).groups
    for name, paths in by_path:
        if name == detect.SKIPPED:
            report.skipped.extend(paths)
        elif name == detect.UNSUPPORTED:
            for p in paths:
                report.sources.append(_rejected(plain[p], f"{p}: {detect.rejection_reason(p)}"))
    outside = {p for name, paths in by_path if name in (detect.SKIPPED, detect.UNSUPPORTED)
               for p in paths}  # fmt: skip
    texts: dict[str, TextFile] = {}
    for p, raw in plain.items():
        if p in outside:
            continue
        try:
            text = archives.decode_text(p, raw.data, lim)
            if not text.strip():
                raise InputError(p, "the file is empty: nothing to import")
        except InputError as exc:
            report.sources.append(_rejected(raw, str(exc)))
            continue
        texts[p] = TextFile(p, text)
    if importer:
        groups = [(importer, list(texts))]
    else:
        # Now by content too: each JSON file is sniffed for the export it is.
        routing = detect.route(list(texts.values()))
        for p, reason in routing.refused.items():
            report.sources.append(_rejected(plain[p], f"{p}: {reason}"))
        groups = routing.groups
    for name, paths in groups:
        members = [_member(plain[p], [texts[p]]) for p in paths]
        if name in TREE_IMPORTERS:
            if members:
                units.append(_Unit(name, members))
        else:
            units.extend(_Unit(name, [m]) for m in members)
    return units


def _drop_repeats(units: list[_Unit], report: IngestReport) -> list[_Unit]:
    """Keep the first of several files with the same bytes: one source per blob."""
    first: dict[str, str] = {}
    kept: list[_Unit] = []
    for unit in units:
        members = []
        for m in unit.members:
            if m.sha256 in first:
                note = f"same bytes as {first[m.sha256]} in this upload"
                report.sources.append(SourceResult(m.path, m.sha256, "unchanged", note=note))
            else:
                first[m.sha256] = m.path
                members.append(m)
        if members:
            unit.members = members
            kept.append(unit)
    return kept


def _rejected(raw: RawFile, error: str) -> SourceResult:
    return SourceResult(raw.path, sha256_hex(raw.data), "rejected", error=error)


def _member(raw: RawFile, texts: list[TextFile]) -> _Member:
    return _Member(path=raw.path, data=raw.data, sha256=sha256_hex(raw.data), texts=texts)


def _zip_unit(raw: RawFile, lim: archives.Limits, importer: str | None) -> _Unit:
    if len(raw.data) > lim.max_upload_bytes:
        raise InputError(
            raw.path, f"{mb(len(raw.data))}, over the {mb(lim.max_upload_bytes)} limit"
        )
    texts = [
        TextFile(name, text) for name, text in archives.read_zip_texts(raw.path, raw.data, lim)
    ]
    if importer:
        groups = [(importer, [t.path for t in texts])]
    else:
        routing = detect.route(texts)
        if routing.refused:
            entry, reason = next(iter(routing.refused.items()))
            more = len(routing.refused) - 1
            also = f" (and {more} more entries refused)" if more else ""
            raise InputError(f"{raw.path}!{entry}", f"{reason}{also}")
        groups = routing.groups
    names = {g for g, _ in groups}
    if detect.UNSUPPORTED in names:
        bad = next(paths for g, paths in groups if g == detect.UNSUPPORTED)
        raise InputError(raw.path, f"unsupported entries: {', '.join(bad[:5])}")
    groups = [(g, paths) for g, paths in groups if g != detect.SKIPPED]
    # One zip is one source and one unit; its importer is the tree importer if any.
    name = next((g for g in names if g in TREE_IMPORTERS), None) or (
        groups[0][0] if groups else "note"
    )
    return _Unit(name, [_member(raw, texts)], groups=groups)


def _attach_existing_sources(project: Project, units: list[_Unit]) -> None:
    """One query for identical bytes, one for earlier versions of the same paths."""
    members = [m for u in units for m in u.members]
    if not members:
        return
    by_sha = {
        s.sha256: s
        for s in Source.objects.filter(project=project, sha256__in={m.sha256 for m in members})
    }
    latest: dict[str, Source] = {}
    for s in Source.objects.filter(project=project, path__in={m.path for m in members}).order_by(
        "retrieved_at", "id"
    ):
        latest[s.path] = s
    for m in members:
        m.existing = by_sha.get(m.sha256)
        m.previous = latest.get(m.path)


# Parsing and scanning are pure CPU work, about half of an import; a big import from the
# command line or a task spreads them over worker processes while this one keeps the
# database work. A web request never does: forking a threaded server copies its locks.
PARALLEL_MIN_BYTES = 2 * 1024 * 1024
_Analysed = list[tuple[int, Scanned]]


def parallel_workers() -> int:
    """How many processes a command-line or task import may parse in."""
    return min(os.cpu_count() or 1, 4)


class _Job(NamedTuple):
    """What parsing one unit needs, as plain values, so it can be sent to a worker."""

    importer: str
    groups: list[tuple[str, list[str]]] | None
    members: list[tuple[int, str, list[TextFile]]]  # (index in the unit, path, texts)
    # A tree importer reads the whole tree (a Slack export's users.json names the people
    # of every channel file), even the members already imported.
    tree: tuple[TextFile, ...] = ()
    options: dict[str, Any] | None = None  # for the importers that take them (CSV columns)

    @classmethod
    def of(cls, unit: _Unit, columns: dict[str, str] | None = None) -> _Job:
        tree = unit.groups is None and unit.importer in TREE_IMPORTERS
        return cls(
            unit.importer,
            unit.groups,
            [(i, m.path, m.texts) for i, m in enumerate(unit.members) if not m.existing],
            tuple(t for m in unit.members for t in m.texts) if tree else (),
            {"columns": columns} if columns else None,
        )


def _scanned(draft: EpisodeDraft) -> Scanned:
    """The gate's scan of a draft's content, and of the other text it carries from the file.

    Speaker names and tags come from the source as much as the content does, and the cut
    tail of a long tool output is where a pasted credential hides; their secrets are
    redacted and flag the episode like the content's. Locators are not scanned: they hold
    session, message and call ids that read as random tokens.
    """
    meta = screen([draft.actor, list(draft.tags), draft.omitted])
    if not meta.secrets:
        return Scanned.of(draft)
    actor, tags, _ = meta.value
    draft = replace(draft, actor=actor, tags=tuple(tags))
    # Only secrets count here: personal data in a cut tail is not stored anywhere.
    secrets = frozenset(f for f in meta.flags if f.startswith("secret:"))
    return Scanned.of(draft).including(meta._replace(flags=secrets))


def _analyse(job: _Job) -> _Analysed | InputError:
    """Parse a unit's new members and scan every draft; bad input is returned, not raised."""
    out: _Analysed = []
    if job.tree:
        owner = {path: index for index, path, _ in job.members}
        try:
            drafts = detect.parse(job.importer, list(job.tree), **(job.options or {}))
        except InputError as exc:
            return exc
        except RecursionError:
            return InputError(job.tree[0].path, str(safejson.TooDeep()))
        for d in drafts:
            index = owner.get(d.locator.get("path"))
            if index is not None:  # drafts of members imported before are not new
                out.append((index, _scanned(d)))
        return out
    for index, path, texts in job.members:
        try:
            if job.groups is None:
                drafts = detect.parse(job.importer, texts, **(job.options or {}))
            else:
                by_path = {t.path: t for t in texts}
                drafts = []
                for name, paths in job.groups:
                    files = [by_path[p] for p in paths]
                    drafts.extend(detect.parse(name, files, **(job.options or {})))
                # Locators of zip members name the archive too: bundle.zip!SYSTEM_OVERVIEW.md
                drafts = [_prefixed(d, path) for d in drafts]
            out.extend((index, _scanned(d)) for d in drafts)
        except InputError as exc:
            return exc
        except RecursionError:
            # A defence: the JSON readers refuse deep nesting first, but no parser's
            # recursion may turn one file into a 500 that sinks the whole upload.
            return InputError(path, str(safejson.TooDeep()))
    return out


def _analyse_all(
    units: list[_Unit], workers: int, columns: dict[str, str] | None = None
) -> list[_Analysed | InputError]:
    jobs = [_Job.of(u, columns) for u in units]
    size = sum(len(t.text) for job in jobs for _, _, texts in job.members for t in texts)
    if workers < 2 or size < PARALLEL_MIN_BYTES or len(jobs) < 2:
        return [_analyse(job) for job in jobs]
    # fork: the children start with Django set up and never touch the database connection;
    # each job travels as an argument, so nothing is handed over through module state.
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(_analyse, jobs, chunksize=8))


def _prefixed(draft: EpisodeDraft, archive: str) -> EpisodeDraft:
    locator = dict(draft.locator)
    locator["path"] = f"{archive}!{locator.get('path', '')}"
    return replace(draft, locator=locator)


def _store(
    project: Project,
    units: list[_Unit],
    actor: Any,
    report: IngestReport,
    wizard_run_id: int | None = None,
) -> int:
    now = timezone.now()
    written: list[str] = []
    try:
        fresh = [
            (m.sha256, _raw_blob(unit, m)) for unit in units for m in unit.members if not m.existing
        ]
        written.extend(sha for sha, new in blob_write_many(fresh) if new)
        with transaction.atomic():
            created = _store_rows(project, units, actor, now, report, wizard_run_id)
    except BaseException:
        # The transaction rolled back: remove the blobs this call added, so nothing
        # from a failed import remains anywhere.
        for sha in written:
            blob_discard(sha)
        raise
    return created


def _raw_blob(unit: _Unit, member: _Member) -> bytes:
    """The bytes the raw layer keeps: as received, or redacted when the gate found secrets."""
    expected = {fp for owner, s in unit.drafts if owner is member for _, fp in s.secrets}
    if not expected:
        return member.data
    member.redacted = True
    texts = [(t.path, t.text) for t in member.texts]
    return redacted_file(texts, expected, is_zip=member.path.lower().endswith(".zip"))


def _store_rows(
    project: Project,
    units: list[_Unit],
    actor: Any,
    now: datetime,
    report: IngestReport,
    wizard_run_id: int | None,
) -> int:
    pending: list[tuple[_Member, Source, list[dict[str, Any]], str]] = []
    for unit in units:
        for m in unit.members:
            if m.existing:
                report.sources.append(SourceResult(m.path, m.sha256, "unchanged"))
            else:
                pending.append(_gated_source(project, unit, m, actor, now))
    # One statement each for sources and audit rows: per-row saves cost ~1 ms apiece.
    Source.objects.bulk_create([source for _, source, _, _ in pending], batch_size=500)
    events = []
    episodes: list[dict[str, Any]] = []
    for m, source, rows, status in pending:
        for row in rows:
            row["source_id"] = source.pk
            row["wizard_run_id"] = wizard_run_id
        episodes.extend(rows)
        superseded = versions.supersede_earlier(source, m.hashes) if m.previous else 0
        summary = source.security_summary
        flags = sorted(summary["flags"])
        report.sources.append(
            SourceResult(
                m.path,
                m.sha256,
                status,
                len(rows),
                flags,
                quarantined=summary["quarantined"],
                superseded=superseded,
            )
        )
        after = {"sha256": m.sha256, "status": status, "episodes": len(rows)}
        after.update(quarantined=summary["quarantined"], superseded=superseded, flags=flags)
        events.append(
            AuditEvent.build(actor=actor, action="source.ingest", obj=source, after=after)
        )
    AuditEvent.objects.bulk_create(events, batch_size=500)
    bulk_insert(Episode, episodes)
    return len(episodes)


def _gated_source(
    project: Project, unit: _Unit, m: _Member, actor: Any, now: datetime
) -> tuple[_Member, Source, list[dict[str, Any]], str]:
    """A new file through the gate: its unsaved Source, its episode rows and its status."""
    # A bundle is reviewed memory exported from a governed wiki; the rest is draft.
    trust = Episode.Trust.REVIEWED if unit.importer in registry.REVIEWED else Episode.Trust.DRAFT
    analysed = [scanned for owner, scanned in unit.drafts if owner is m]
    m.hashes = {sha256_hex(item.text) for item in analysed}
    known = versions.still_current(project, m.path, m.hashes) if m.previous else set()
    rows, summary = gate(project, analysed, trust, now, known)
    summary["raw"] = "redacted" if m.redacted else "as received"
    source = Source(
        project=project,
        sha256=m.sha256,
        size=len(m.data),
        media_type=mimetypes.guess_type(m.path)[0] or "text/plain",
        original_name=PurePosixPath(m.path).name,
        path=m.path,
        importer=unit.importer,
        retrieved_at=now,
        previous=m.previous,
        imported_by=actor if getattr(actor, "pk", None) else None,
        security_summary=summary,
    )
    # "quarantined" only when nothing of the file reached the memory.
    status = (
        "quarantined"
        if rows and summary["quarantined"] == len(rows)
        else ("updated" if m.previous else "new")
    )
    return m, source, rows, status
