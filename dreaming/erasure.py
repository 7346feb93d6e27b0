"""Dreaming's part of an erasure (registered in DreamingConfig.ready).

Candidates and conflict sides quote episodes; a conflict's subject is distilled from its
sides' words; diaries and previews quote all of them, whole or trimmed to the lengths the
engine trims snippets to.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F, Q
from django.utils import timezone

from dreaming.engine import Policy, PolicyError, snippet_limits
from dreaming.engine.blocks import blocks, sentences
from dreaming.engine.wording import display_text, trim_snippet
from dreaming.models import Candidate, CandidateTerm, Conflict, ConflictSide, DreamRun
from llmwiki.erasure import (
    ERASED,
    MIN_FRAGMENT,
    Erasure,
    ErasureStep,
    flat,
    longest_first,
    register_step,
    scrub,
    scrub_json,
)


class DreamingErasure(ErasureStep):
    def select(self, erasure: Erasure) -> None:
        project_id = erasure.source.project_id
        candidates = Candidate.objects.filter(
            project=project_id, evidence__episode_id__in=erasure.episode_ids
        ).distinct()
        erasure.rows["candidates"] = sorted(candidates.values_list("id", flat=True))
        # A claim approved from (or merged with) an erased candidate may carry its text.
        erasure.claim_ids.update(
            Candidate.objects.filter(
                pk__in=erasure.rows["candidates"], claim__isnull=False
            ).values_list("claim_id", flat=True)
        )
        erasure.preview["candidates"] = len(erasure.rows["candidates"])

    def select_dependents(self, erasure: Erasure) -> None:
        sides = set(
            ConflictSide.objects.filter(conflict__project=erasure.source.project_id)
            .filter(
                Q(evidence__in=erasure.episode_ids)
                | Q(claim__in=erasure.claim_ids)
                | Q(candidate__in=erasure.rows["candidates"])
            )
            .values_list("id", "conflict_id")
        )
        erasure.rows["conflict_sides"] = sorted(s for s, _ in sides)
        erasure.rows["conflicts"] = sorted({c for _, c in sides})
        erasure.preview["conflicts"] = len(erasure.rows["conflicts"])

    def collect(self, erasure: Erasure) -> None:
        rows = erasure.rows
        erasure.texts["candidates"].update(
            Candidate.objects.filter(pk__in=rows["candidates"]).values_list("text", flat=True)
        )
        side_texts = set(
            ConflictSide.objects.filter(pk__in=rows["conflict_sides"]).values_list(
                "text", flat=True
            )
        )
        erasure.texts["conflict_sides"].update(side_texts)
        erasure.history_texts.update(side_texts)
        erasure.texts["conflict_subjects"].update(
            Conflict.objects.filter(pk__in=rows["conflicts"]).values_list("subject", flat=True)
        )

    def erase(self, erasure: Erasure) -> None:
        rows = erasure.rows
        # Not through Candidate.transition: erasure may leave any status, even approved.
        # Section and route reason can quote the text too (a glossary term, a decision cue).
        Candidate.objects.filter(pk__in=rows["candidates"]).update(
            text=ERASED,
            subject_key="",
            section="",
            route_reason="",
            status=Candidate.Status.REJECTED,
            version=F("version") + 1,
            updated_at=timezone.now(),
        )
        # The term index holds hashes of the words: they go with the text.
        CandidateTerm.objects.filter(candidate__in=rows["candidates"]).delete()
        ConflictSide.objects.filter(pk__in=rows["conflict_sides"]).update(text=ERASED)
        # A conflict's subject is distilled from its sides' words: it goes with them.
        Conflict.objects.filter(pk__in=rows["conflicts"]).update(subject=ERASED)
        erasure.changed["candidates"] = len(rows["candidates"])
        erasure.changed["conflict_sides"] = len(rows["conflict_sides"])

    def scrub(self, erasure: Erasure) -> None:
        """Diaries quote candidates and conflicts; previews list what a run would propose."""
        needles = fragments(erasure.all_texts(), _snippet_limits(erasure.source.project))
        changed = 0
        runs = DreamRun.objects.filter(project=erasure.source.project_id)
        for run in runs.only("id", "diary", "preview").iterator():
            diary = scrub(run.diary, needles)
            preview = scrub_json(run.preview, needles)
            if diary != run.diary or preview != run.preview:
                DreamRun.objects.filter(pk=run.pk).update(diary=diary, preview=preview)
                changed += 1
        erasure.changed["dream_runs_scrubbed"] = changed


def _snippet_limits(project) -> tuple[int, ...]:
    try:
        policy = Policy.from_dict(project.dream_policy or None)
    except PolicyError:
        policy = Policy()
    return snippet_limits(policy)


def fragments(texts: Iterable[str], limits: Iterable[int]) -> list[str]:
    """Every form a text takes in a diary: whole, per line and sentence, displayed, trimmed."""
    limits = tuple(limits)
    forms: set[str] = set()
    for text in texts:
        if not text or text == ERASED:
            continue
        own = {text.strip(), flat(text)}
        for block in blocks(text):
            own.add(block.text)
            for sentence in sentences(block.text):
                own.update((sentence, display_text(sentence)))
        for form in list(own):
            for limit in limits:
                own.add(trim_snippet(form, limit).removesuffix(" …"))
        forms |= own
    return longest_first(f for f in forms if len(f) >= MIN_FRAGMENT)


register_step(DreamingErasure())
