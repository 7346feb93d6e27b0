"""Erasure (right to be forgotten): the one audited exception to immutable history.

A maintainer erases a source. Its content is removed from everywhere it propagated —
episodes, candidates, review records, claims, page history, conflicts, dream diaries and
previews, exports, the blob store — and tombstones without content remain, so ids, hashes
and the audit trail still line up. The rows change in one transaction; files are deleted
only after it commits (a rollback must not leave rows pointing at deleted files).

`llmwiki` runs the erasure and scrubs the rows it owns (sources, episodes, claims, page
history, exports, blobs). The apps above it own the rest and register an `ErasureStep`
in their AppConfig.ready(), as they register counts with `llmwiki.project_counts`.
"""

from __future__ import annotations

import logging
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q

from llmwiki.access import Do, can
from llmwiki.blobs import blob_path
from llmwiki.errors import Refused
from llmwiki.models import (
    AuditEvent,
    Claim,
    Episode,
    Export,
    Page,
    PageRevision,
    Source,
    sha256_hex,
)
from llmwiki.wiki import GENERAL_SECTION, page_recompile, record_change

log = logging.getLogger(__name__)

# What stands where erased text was: the state lives in the rows' status fields, this only
# keeps the tombstones readable.
ERASED = "[erased]"

# Free text (diaries, previews, page history) is scrubbed of fragments at least this long;
# shorter ones are generic words that identify nothing and would blank unrelated text.
MIN_FRAGMENT = 12


@dataclass
class Erasure:
    """What erasing one source touches, and the texts it removes.

    The selection (ids) is the same for the confirmation page and the erasure; the texts
    are read only when erasing, before anything is overwritten.
    """

    source: Source
    actor: Any = None  # who erases; None while previewing
    episode_ids: list[int] = field(default_factory=list)
    claim_ids: set[int] = field(default_factory=set)
    page_ids: set[int] = field(default_factory=set)
    export_ids: set[int] = field(default_factory=set)
    # Rows the apps above llmwiki own, under names they choose ("candidates", ...).
    rows: dict[str, list[int]] = field(default_factory=dict)
    # Pages an app compiles itself (OPEN_QUESTIONS): llmwiki does not recompile them.
    compiled_elsewhere: set[int] = field(default_factory=set)
    # What the confirmation page counts beyond llmwiki's own rows.
    preview: dict[str, int] = field(default_factory=dict)
    # Erased texts by kind ("episodes", "claims", and the apps' own kinds).
    texts: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    # Page history: exact line replacements, and texts to remove wherever they occur.
    history_exact: list[tuple[str, str]] = field(default_factory=list)
    history_texts: set[str] = field(default_factory=set)
    # What erasing changed, by the apps' own names, for the audit row.
    changed: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """What the confirmation page says erasing will touch."""
        return {
            "episodes": len(self.episode_ids),
            "claims": len(self.claim_ids),
            "pages": len(self.page_ids),
            "exports": len(self.export_ids),
            **self.preview,
        }

    def all_texts(self) -> list[str]:
        return [t for kind in self.texts.values() for t in kind]


class ErasureStep:
    """One app's part of every erasure; override the hooks the app needs.

    Each hook runs for every registered step, in registration order (INSTALLED_APPS order),
    so a step may read what the steps of the apps below it added.
    """

    def select(self, erasure: Erasure) -> None:
        """Add the app's rows built on `erasure.episode_ids`, and claims born from them."""

    def select_dependents(self, erasure: Erasure) -> None:
        """Add the app's rows that quote the selected claims (and pages they compile)."""

    def collect(self, erasure: Erasure) -> None:
        """Read the texts about to go into `erasure.texts` and the history fields."""

    def erase(self, erasure: Erasure) -> None:
        """Overwrite the app's rows; put what changed in `erasure.changed`."""

    def republish(self, erasure: Erasure) -> int:
        """Republish the pages the app compiles; return how many got a new revision."""
        return 0

    def scrub(self, erasure: Erasure) -> None:
        """Scrub the app's free text of every erased text (after page history)."""


_steps: list[ErasureStep] = []


def register_step(step: ErasureStep) -> ErasureStep:
    _steps.append(step)
    return step


def erasure_scope(source: Source) -> Erasure:
    """Select everything the source's content reached (read-only; the confirmation page)."""
    erasure = Erasure(
        source=source,
        episode_ids=sorted(Episode.objects.filter(source=source).values_list("id", flat=True)),
    )
    for step in _steps:
        step.select(erasure)
    erasure.claim_ids.update(
        Claim.objects.filter(project=source.project_id, evidence__in=erasure.episode_ids)
        .values_list("id", flat=True)
        .distinct()
    )
    for step in _steps:
        step.select_dependents(erasure)
    erasure.page_ids.update(
        Claim.objects.filter(pk__in=erasure.claim_ids).values_list("page_id", flat=True)
    )
    # |=: a step may have added exports that quote the episodes themselves.
    erasure.export_ids |= _affected_exports(
        source.project_id,
        erasure.claim_ids,
        _revisions_citing(erasure.page_ids, erasure.claim_ids),
    )
    return erasure


def _revisions_citing(page_ids: Iterable[int], claim_ids: Iterable[int]) -> set[int]:
    wanted = set(claim_ids)
    return {
        pk
        for pk, ids in PageRevision.objects.filter(page__in=page_ids).values_list("id", "claim_ids")
        if wanted.intersection(ids or [])
    }


def _affected_exports(
    project_id: int, claim_ids: Iterable[int], revision_ids: Iterable[int]
) -> set[int]:
    return set(
        Export.objects.filter(project=project_id)
        .filter(Q(claims__in=list(claim_ids)) | Q(revisions__in=list(revision_ids)))
        .values_list("id", flat=True)
    )


def source_erase(*, source: Source, actor: AbstractBaseUser, note: str) -> dict[str, int]:
    """Erase `source` everywhere its content went; return counts of what changed.

    Refuses with 403 unless `actor` maintains the project, and with 400 when the note is
    empty or the source is already erased; a refusal changes nothing.
    """
    project = source.project
    if not can(actor, project, Do.ERASE):
        raise Refused("erasing a source needs the maintainer role", 403)
    if not note or not note.strip():
        raise Refused("say why the source is erased (a note is required)", 400)
    note = note.strip()
    with transaction.atomic():
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if locked.status == Source.Status.ERASED:
            raise Refused(f"source #{locked.pk} is already erased", 400)
        erasure = erasure_scope(locked)
        erasure.actor = actor
        # Every text to scrub is read before anything is overwritten.
        erasure.texts["episodes"].update(
            Episode.objects.filter(pk__in=erasure.episode_ids).values_list("content", flat=True)
        )
        claim_texts = dict(Claim.objects.filter(pk__in=erasure.claim_ids).values_list("id", "text"))
        erasure.texts["claims"].update(claim_texts.values())
        erasure.history_texts.update(claim_texts.values())
        erasure.history_exact.extend(
            (f"- {flat(text)} _(claim {pk})_", f"- {ERASED} _(claim {pk})_")
            for pk, text in claim_texts.items()
        )
        headings = _erased_headings(erasure.claim_ids)
        for step in _steps:
            step.collect(erasure)

        _tombstone_episodes(erasure.episode_ids, locked.path)
        _erase_claims(locked, erasure, actor, note)
        for step in _steps:
            step.erase(erasure)

        republished = _republish(erasure, actor, locked.pk)
        republished += sum(step.republish(erasure) for step in _steps)
        scrubbed = _scrub_history(erasure, headings)
        for step in _steps:
            step.scrub(erasure)
        # Exports that shipped a revision just scrubbed carry the text in their files too.
        export_ids = sorted(erasure.export_ids | _affected_exports(project.pk, [], scrubbed))
        export_paths = list(Export.objects.filter(pk__in=export_ids).values_list("path", flat=True))
        Export.objects.filter(pk__in=export_ids).update(files=[])

        Source.objects.filter(pk=locked.pk).update(status=Source.Status.ERASED, security_summary={})
        counts = {
            "episodes": len(erasure.episode_ids),
            "claims": len(erasure.claim_ids),
            "revisions_scrubbed": len(scrubbed),
            "pages_republished": republished,
            "exports": len(export_ids),
            **erasure.changed,
        }
        # Counts only: the audit log must not become the place the content survives.
        AuditEvent.record(
            actor=actor,
            action="source.erase",
            obj=locked,
            before={"status": Source.Status.ACTIVE},
            after={"status": Source.Status.ERASED, **counts},
            note=note,
        )
        if erasure.claim_ids or republished:
            record_change(
                project=project,
                actor=actor,
                summary=f"erasure of source {locked.pk}: {len(erasure.claim_ids)} claim(s) "
                f"erased, {republished} page(s) republished",
            )
        sha, pk = locked.sha256, locked.pk
        transaction.on_commit(lambda: _delete_files(sha, pk, export_paths))
    return counts


# --- llmwiki's own steps, in the order source_erase runs them --------------------------------


def _tombstone_episodes(episode_ids: list[int], source_path: str) -> None:
    """Empty the content but keep the row, its hash and where it came from."""
    by_path: dict[str, list[int]] = defaultdict(list)
    for pk, locator in Episode.objects.filter(pk__in=episode_ids).values_list("id", "locator"):
        # Zip members name "archive!member"; posted events have no path but their source's.
        by_path[(locator or {}).get("path") or source_path].append(pk)
    for path, ids in by_path.items():
        # The sanctioned bypass of immutability; content_hash stays (a hash, not content).
        Episode.objects.filter(pk__in=ids)._unchecked_update(
            content="",
            status=Episode.Status.ERASED,
            flags=[],
            tags=[],
            memory_type_reason="",  # the classifier quotes the triggering words here
            locator={"path": path, "erased": True},
        )


def _erase_claims(source: Source, erasure: Erasure, actor: Any, note: str) -> None:
    erased = set(erasure.episode_ids)
    for claim in Claim.objects.filter(pk__in=erasure.claim_ids).order_by("id"):
        kept = [
            r
            for r in claim.source_refs or []
            if r.get("episode_id") not in erased and r.get("source_id") != source.pk
        ]
        if claim.status == Claim.Status.ERASED:  # by an earlier erasure; only its refs change
            Claim.objects.filter(pk=claim.pk).update(source_refs=kept)
            continue
        claim.transition(
            Claim.Status.ERASED,
            actor=actor,
            note=f"erasure of source #{source.pk}: {note}",
            text=ERASED,
            subject_key="",
            section="",
            source_refs=kept,
        )


def _republish(erasure: Erasure, actor: Any, source_id: int) -> int:
    """A new current revision for every affected claims page, so nobody reads the content now."""
    reason = f"erasure of source #{source_id}"
    count = 0
    pages = Page.objects.filter(pk__in=erasure.page_ids - erasure.compiled_elsewhere)
    for page in pages.order_by("key"):
        if page_recompile(page=page, actor=actor, reason=reason) is not None:
            count += 1
    return count


def _erased_headings(claim_ids: Iterable[int]) -> dict[int, set[str]]:
    """Per page, the section headings only erased claims use.

    A section label is distilled from its claims' words (a glossary term, a name), so it
    goes when every claim under it goes; a heading other claims share stays.
    """
    erased = set(claim_ids)
    by_page: dict[int, set[str]] = defaultdict(set)
    for page_id, section in Claim.objects.filter(pk__in=erased).values_list("page_id", "section"):
        if section and section != GENERAL_SECTION:
            by_page[page_id].add(section)
    for page_id, sections in by_page.items():
        shared = set(
            Claim.objects.filter(page=page_id, section__in=sections)
            .exclude(pk__in=erased)
            .values_list("section", flat=True)
        )
        sections -= shared
    return by_page


def _scrub_history(erasure: Erasure, headings: dict[int, set[str]]) -> list[int]:
    """Replace erased texts in older revisions (history is rewritten only for erasure)."""
    # After the exact lines, the texts anywhere else they occur (a rollback or a hand-written
    # revision), if long enough to identify the content rather than a common word.
    loose = longest_first(
        t
        for text in erasure.history_texts
        for t in (text.strip(), flat(text))
        if len(t) >= MIN_FRAGMENT
    )
    scrubbed = []
    for pk, page_id, markdown in PageRevision.objects.filter(page__in=erasure.page_ids).values_list(
        "id", "page_id", "markdown"
    ):
        new = markdown
        for old, replacement in erasure.history_exact:
            new = new.replace(old, replacement)
        for section in headings.get(page_id, ()):
            new = new.replace(f"## {section}\n", f"## {ERASED}\n")
        new = scrub(new, loose)
        if new != markdown:
            PageRevision.objects.filter(pk=pk)._unchecked_update(
                markdown=new, content_hash=sha256_hex(new)
            )
            scrubbed.append(pk)
    return scrubbed


def _delete_files(sha256: str, source_id: int, export_paths: list[str]) -> None:
    """After commit: the blob (unless another live source holds the same bytes), exports."""
    shared = (
        Source.objects.filter(sha256=sha256)
        .exclude(pk=source_id)
        .exclude(status=Source.Status.ERASED)
        .exists()
    )
    if not shared:
        try:
            blob_path(sha256).unlink(missing_ok=True)
        except OSError:
            log.exception("erasure: could not delete blob %s", sha256)
    for path in export_paths:
        for target in _export_targets(path):
            try:
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
            except OSError:
                log.exception("erasure: could not delete export files at %s", target)


def _export_targets(path: str) -> list[Path]:
    """Where an export's files may be; never anything outside the export directory."""
    if not path:
        return []
    root = Path(settings.EXPORT_DIR).resolve()
    bases = [Path(settings.EXPORT_DIR)]
    if getattr(settings, "DATA_DIR", None):
        bases.append(Path(settings.DATA_DIR))  # the field documents paths under the data dir
    out = []
    for base in bases:
        target = (base / path).resolve()
        if target != root and target.is_relative_to(root) and target.exists():
            out.append(target)
    return out


# --- Text helpers, for the steps too ---------------------------------------------------------


def flat(text: str) -> str:
    """Whitespace as the page compilers write a line."""
    return " ".join(text.split())


def longest_first(texts: Iterable[str]) -> list[str]:
    # Longest first, so a sentence is replaced whole before its own trimmed prefix is tried.
    return sorted({t for t in texts if t and t != ERASED}, key=lambda t: (-len(t), t))


def scrub(text: str, needles: list[str]) -> str:
    if not text:
        return text
    for needle in needles:
        if needle in text:
            text = text.replace(needle, ERASED)
    return text


def scrub_json(value: Any, needles: list[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, needles)
    if isinstance(value, list):
        return [scrub_json(v, needles) for v in value]
    if isinstance(value, dict):
        return {k: scrub_json(v, needles) for k, v in value.items()}
    return value
