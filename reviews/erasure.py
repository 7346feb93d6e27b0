"""Erasure (right to be forgotten): the one audited exception to immutable history.

A maintainer erases a source. Its content is removed from everywhere it propagated —
episodes, candidates, review records, claims, page history, conflicts, dream diaries and
previews, exports, the blob store — and tombstones without content remain, so ids, hashes
and the audit trail still line up. The rows change in one transaction; files are deleted
only after it commits (a rollback must not leave rows pointing at deleted files).
"""

from __future__ import annotations

import logging
import shutil
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from dreaming.engine import Policy, PolicyError, snippet_limits
from dreaming.engine.text import blocks, display_text, sentences, trim_snippet
from dreaming.models import Candidate, Conflict, ConflictSide, DreamRun
from llmwiki.access import has_role
from llmwiki.blobs import blob_path
from llmwiki.models import (
    AuditEvent,
    Claim,
    Episode,
    Export,
    Page,
    PageKey,
    PageRevision,
    Role,
    Source,
    sha256_hex,
)
from llmwiki.wiki import GENERAL_SECTION, page_recompile, record_change
from reviews.conflicts import open_questions_publish
from reviews.models import Review
from reviews.services import ReviewRefused

log = logging.getLogger(__name__)

# What stands where erased text was: the state lives in the rows' status fields, this only
# keeps the tombstones readable.
ERASED = "[erased]"

# Free text (diaries, previews, page history) is scrubbed of fragments at least this long;
# shorter ones are generic words that identify nothing and would blank unrelated text.
MIN_FRAGMENT = 12


@dataclass
class ErasureScope:
    """What erasing a source touches, as ids: the same selection previews and erases."""

    episode_ids: list[int]
    candidate_ids: list[int]
    claim_ids: list[int]
    side_ids: list[int]
    conflict_ids: list[int]
    page_ids: list[int]
    export_ids: list[int]

    def counts(self) -> dict[str, int]:
        return {
            "episodes": len(self.episode_ids),
            "candidates": len(self.candidate_ids),
            "claims": len(self.claim_ids),
            "conflicts": len(self.conflict_ids),
            "pages": len(self.page_ids),
            "exports": len(self.export_ids),
        }


def erasure_scope(source: Source) -> ErasureScope:
    """Select everything the source's content reached (read-only; the confirmation page)."""
    project_id = source.project_id
    episode_ids = list(Episode.objects.filter(source=source).values_list("id", flat=True))
    candidate_ids = sorted(
        set(
            Candidate.objects.filter(
                project=project_id, evidence__episode_id__in=episode_ids
            ).values_list("id", flat=True)
        )
    )
    # A claim is affected when it cites an erased episode or was approved from (or merged
    # with) an erased candidate: its text may be that candidate's text.
    claim_rows = set(
        Claim.objects.filter(project=project_id)
        .filter(Q(evidence__in=episode_ids) | Q(candidates__in=candidate_ids))
        .values_list("id", "page_id")
    )
    claim_ids = sorted(c for c, _ in claim_rows)
    side_rows = set(
        ConflictSide.objects.filter(conflict__project=project_id)
        .filter(
            Q(evidence__in=episode_ids) | Q(claim__in=claim_ids) | Q(candidate__in=candidate_ids)
        )
        .values_list("id", "conflict_id")
    )
    page_ids = {p for _, p in claim_rows}
    if side_rows:
        page_ids.update(
            Page.objects.filter(project=project_id, key=PageKey.OPEN_QUESTIONS).values_list(
                "id", flat=True
            )
        )
    export_ids = _affected_exports(project_id, claim_ids, _revisions_citing(page_ids, claim_ids))
    return ErasureScope(
        episode_ids=sorted(episode_ids),
        candidate_ids=candidate_ids,
        claim_ids=claim_ids,
        side_ids=sorted(s for s, _ in side_rows),
        conflict_ids=sorted({c for _, c in side_rows}),
        page_ids=sorted(page_ids),
        export_ids=export_ids,
    )


def _revisions_citing(page_ids: Iterable[int], claim_ids: list[int]) -> set[int]:
    wanted = set(claim_ids)
    return {
        pk
        for pk, ids in PageRevision.objects.filter(page__in=page_ids).values_list("id", "claim_ids")
        if wanted.intersection(ids or [])
    }


def _affected_exports(project_id: int, claim_ids: list[int], revision_ids: set[int]) -> list[int]:
    return sorted(
        set(
            Export.objects.filter(project=project_id)
            .filter(Q(claims__in=claim_ids) | Q(revisions__in=revision_ids))
            .values_list("id", flat=True)
        )
    )


def source_erase(*, source: Source, actor: AbstractBaseUser, note: str) -> dict[str, int]:
    """Erase `source` everywhere its content went; return counts of what changed.

    Refuses with 403 unless `actor` maintains the project, and with 400 when the note is
    empty or the source is already erased; a refusal changes nothing.
    """
    project = source.project
    if not has_role(actor, project, Role.MAINTAINER):
        raise ReviewRefused("erasing a source needs the maintainer role", 403)
    if not note or not note.strip():
        raise ReviewRefused("say why the source is erased (a note is required)", 400)
    with transaction.atomic():
        locked = Source.objects.select_for_update().get(pk=source.pk)
        if locked.status == Source.Status.ERASED:
            raise ReviewRefused(f"source #{locked.pk} is already erased", 400)
        scope = erasure_scope(locked)
        # Collect every text to scrub before anything is overwritten.
        contents = list(
            Episode.objects.filter(pk__in=scope.episode_ids).values_list("content", flat=True)
        )
        candidate_texts = set(
            Candidate.objects.filter(pk__in=scope.candidate_ids).values_list("text", flat=True)
        )
        claim_texts = dict(Claim.objects.filter(pk__in=scope.claim_ids).values_list("id", "text"))
        headings = _erased_headings(scope.claim_ids)
        side_texts = set(
            ConflictSide.objects.filter(pk__in=scope.side_ids).values_list("text", flat=True)
        )
        subjects = set(
            Conflict.objects.filter(pk__in=scope.conflict_ids).values_list("subject", flat=True)
        )

        _tombstone_episodes(scope.episode_ids, locked.path)
        _erase_candidates(project.pk, scope.candidate_ids, candidate_texts, claim_texts)
        _erase_claims(locked, scope, actor, note.strip())
        ConflictSide.objects.filter(pk__in=scope.side_ids).update(text=ERASED)
        # A conflict's subject is distilled from its sides' words: it goes with them.
        Conflict.objects.filter(pk__in=scope.conflict_ids).update(subject=ERASED)

        republished = _republish(project, scope, actor, locked.pk)
        scrubbed = _scrub_history(scope.page_ids, claim_texts, side_texts, subjects, headings)
        fragments = _fragments(
            [*contents, *candidate_texts, *claim_texts.values(), *side_texts, *subjects],
            _snippet_limits(project),
        )
        runs = _scrub_dream_runs(project.pk, fragments)
        # Exports that shipped a revision just scrubbed carry the text in their files too.
        export_ids = sorted(
            set(scope.export_ids) | set(_affected_exports(project.pk, [], scrubbed))
        )
        export_paths = list(Export.objects.filter(pk__in=export_ids).values_list("path", flat=True))
        Export.objects.filter(pk__in=export_ids).update(files=[])

        Source.objects.filter(pk=locked.pk).update(status=Source.Status.ERASED, security_summary={})
        counts = {
            "episodes": len(scope.episode_ids),
            "candidates": len(scope.candidate_ids),
            "claims": len(scope.claim_ids),
            "revisions_scrubbed": len(scrubbed),
            "pages_republished": republished,
            "conflict_sides": len(scope.side_ids),
            "dream_runs_scrubbed": runs,
            "exports": len(export_ids),
        }
        # Counts only: the audit log must not become the place the content survives.
        AuditEvent.record(
            actor=actor,
            action="source.erase",
            obj=locked,
            before={"status": Source.Status.ACTIVE},
            after={"status": Source.Status.ERASED, **counts},
            note=note.strip(),
        )
        if scope.claim_ids or republished:
            record_change(
                project=project,
                actor=actor,
                summary=f"erasure of source {locked.pk}: {len(scope.claim_ids)} claim(s) "
                f"erased, {republished} page(s) republished",
            )
        sha, pk = locked.sha256, locked.pk
        transaction.on_commit(lambda: _delete_files(sha, pk, export_paths))
    return counts


# --- The steps, in the order source_erase runs them --------------------------------------


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


def _erase_candidates(
    project_id: int, candidate_ids: list[int], texts: set[str], claim_texts: dict[int, str]
) -> None:
    # Not through Candidate.transition: erasure may leave any status, even approved.
    # Section and route reason can quote the text too (a glossary term, a decision cue).
    Candidate.objects.filter(pk__in=candidate_ids).update(
        text=ERASED,
        subject_key="",
        section="",
        route_reason="",
        status=Candidate.Status.REJECTED,
        version=F("version") + 1,
        updated_at=timezone.now(),
    )
    reviews = Review.objects.filter(candidate_id__in=candidate_ids)
    reviews._unchecked_update(before_text=ERASED)
    reviews.exclude(after_text="")._unchecked_update(after_text=ERASED)
    # Reviews of other candidates quote an erased text too when they were merged into an
    # erased claim (a merge records the claim's text as after_text).
    quoted = {t for t in (texts | set(claim_texts.values())) if t}
    in_project = Review.objects.filter(candidate__project=project_id)
    in_project.filter(before_text__in=quoted)._unchecked_update(before_text=ERASED)
    in_project.filter(after_text__in=quoted)._unchecked_update(after_text=ERASED)


def _erase_claims(source: Source, scope: ErasureScope, actor: Any, note: str) -> None:
    erased = set(scope.episode_ids)
    for claim in Claim.objects.filter(pk__in=scope.claim_ids).order_by("id"):
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


def _republish(project: Any, scope: ErasureScope, actor: Any, source_id: int) -> int:
    """A new current revision for every affected page, so nobody reads the content now."""
    reason = f"erasure of source #{source_id}"
    count = 0
    for page in Page.objects.filter(pk__in=scope.page_ids).order_by("key"):
        if page.key == PageKey.OPEN_QUESTIONS:
            continue  # compiled from conflicts, below
        if page_recompile(page=page, actor=actor, reason=reason) is not None:
            count += 1
    questions = Page.objects.filter(
        project=project, key=PageKey.OPEN_QUESTIONS, current_revision__isnull=False
    )
    # Only a published OPEN_QUESTIONS page is recompiled; publishing would create it.
    if (
        scope.side_ids
        and questions.exists()
        and open_questions_publish(project=project, actor=actor, reason=reason) is not None
    ):
        count += 1
    return count


def _erased_headings(claim_ids: list[int]) -> dict[int, set[str]]:
    """Per page, the section headings only erased claims use.

    A section label is distilled from its claims' words (a glossary term, a name), so it
    goes when every claim under it goes; a heading other claims share stays.
    """
    erased = set(claim_ids)
    by_page: dict[int, set[str]] = defaultdict(set)
    for page_id, section in Claim.objects.filter(pk__in=claim_ids).values_list(
        "page_id", "section"
    ):
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


def _scrub_history(
    page_ids: list[int],
    claim_texts: dict[int, str],
    side_texts: set[str],
    subjects: set[str],
    headings: dict[int, set[str]],
) -> list[int]:
    """Replace erased texts in older revisions (history is rewritten only for erasure)."""
    exact: list[tuple[str, str]] = []
    for pk, text in claim_texts.items():
        exact.append((f"- {_flat(text)} _(claim {pk})_", f"- {ERASED} _(claim {pk})_"))
    for text in side_texts:
        exact.append((f"- {_flat(text)} _(", f"- {ERASED} _("))
    for subject in subjects:
        exact.append((f"## {subject}\n", f"## {ERASED}\n"))
    # Then anywhere else they occur (a rollback or a hand-written revision), if long enough
    # to identify the content rather than a common word.
    loose = _longest_first(
        t
        for text in [*claim_texts.values(), *side_texts]
        for t in (text.strip(), _flat(text))
        if len(t) >= MIN_FRAGMENT
    )
    scrubbed = []
    for pk, page_id, markdown in PageRevision.objects.filter(page__in=page_ids).values_list(
        "id", "page_id", "markdown"
    ):
        new = markdown
        for old, replacement in exact:
            new = new.replace(old, replacement)
        for section in headings.get(page_id, ()):
            new = new.replace(f"## {section}\n", f"## {ERASED}\n")
        new = _scrub(new, loose)
        if new != markdown:
            PageRevision.objects.filter(pk=pk)._unchecked_update(
                markdown=new, content_hash=sha256_hex(new)
            )
            scrubbed.append(pk)
    return scrubbed


def _scrub_dream_runs(project_id: int, fragments: list[str]) -> int:
    """Diaries quote candidates and conflicts; previews list what a run would propose."""
    changed = 0
    runs = DreamRun.objects.filter(project=project_id).only("id", "diary", "preview")
    for run in runs.iterator():
        diary = _scrub(run.diary, fragments)
        preview = _scrub_json(run.preview, fragments)
        if diary != run.diary or preview != run.preview:
            DreamRun.objects.filter(pk=run.pk).update(diary=diary, preview=preview)
            changed += 1
    return changed


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


# --- Text helpers ------------------------------------------------------------------------


def _flat(text: str) -> str:
    """Whitespace as the page compiler writes a claim line."""
    return " ".join(text.split())


def _snippet_limits(project: Any) -> tuple[int, ...]:
    try:
        policy = Policy.from_dict(project.dream_policy or None)
    except PolicyError:
        policy = Policy()
    return snippet_limits(policy)


def _fragments(texts: Iterable[str], limits: Iterable[int]) -> list[str]:
    """Every form a text takes downstream: whole, per line and sentence, as displayed, trimmed."""
    limits = tuple(limits)
    forms: set[str] = set()
    for text in texts:
        if not text or text == ERASED:
            continue
        own = {text.strip(), _flat(text)}
        for block in blocks(text):
            own.add(block.text)
            for sentence in sentences(block.text):
                own.update((sentence, display_text(sentence)))
        for form in list(own):
            for limit in limits:
                own.add(trim_snippet(form, limit).removesuffix(" …"))
        forms |= own
    return _longest_first(f for f in forms if len(f) >= MIN_FRAGMENT)


def _longest_first(texts: Iterable[str]) -> list[str]:
    # Longest first, so a sentence is replaced whole before its own trimmed prefix is tried.
    return sorted({t for t in texts if t and t != ERASED}, key=lambda t: (-len(t), t))


def _scrub(text: str, needles: list[str]) -> str:
    if not text:
        return text
    for needle in needles:
        if needle in text:
            text = text.replace(needle, ERASED)
    return text


def _scrub_json(value: Any, needles: list[str]) -> Any:
    if isinstance(value, str):
        return _scrub(value, needles)
    if isinstance(value, list):
        return [_scrub_json(v, needles) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_json(v, needles) for k, v in value.items()}
    return value


__all__ = ["ERASED", "ErasureScope", "erasure_scope", "source_erase"]
