"""Reviews' part of an erasure (registered in ReviewsConfig.ready).

Review records quote the candidate and claim texts they decided on, and OPEN_QUESTIONS is
compiled here from the conflicts that stay open.
"""

from __future__ import annotations

from llmwiki.erasure import ERASED, Erasure, ErasureStep, flat, register_step
from llmwiki.models import Page, PageKey
from reviews.conflicts import open_questions_publish
from reviews.exports.service import exports_quoting
from reviews.models import Review


class ReviewsErasure(ErasureStep):
    def select(self, erasure: Erasure) -> None:
        # An export that scoped an erased episode in quotes its text in its files.
        erasure.export_ids |= exports_quoting(erasure.source.project_id, erasure.episode_ids)

    def select_dependents(self, erasure: Erasure) -> None:
        if erasure.rows.get("conflict_sides"):
            questions = Page.objects.filter(
                project=erasure.source.project_id, key=PageKey.OPEN_QUESTIONS
            ).values_list("id", flat=True)
            erasure.page_ids.update(questions)
            erasure.compiled_elsewhere.update(questions)

    def collect(self, erasure: Erasure) -> None:
        # The lines open_questions_part wrote for the erased sides and subjects.
        erasure.history_exact.extend(
            (f"- {flat(text)} _(", f"- {ERASED} _(") for text in erasure.texts["conflict_sides"]
        )
        erasure.history_exact.extend(
            (f"## {subject}\n", f"## {ERASED}\n") for subject in erasure.texts["conflict_subjects"]
        )

    def erase(self, erasure: Erasure) -> None:
        reviews = Review.objects.filter(candidate_id__in=erasure.rows.get("candidates", []))
        reviews._unchecked_update(before_text=ERASED)
        reviews.exclude(after_text="")._unchecked_update(after_text=ERASED)
        # Reviews of other candidates quote an erased text too when they were merged into
        # an erased claim (a merge records the claim's text as after_text).
        quoted = {t for t in erasure.texts["candidates"] | erasure.texts["claims"] if t}
        in_project = Review.objects.filter(candidate__project=erasure.source.project_id)
        in_project.filter(before_text__in=quoted)._unchecked_update(before_text=ERASED)
        in_project.filter(after_text__in=quoted)._unchecked_update(after_text=ERASED)

    def republish(self, erasure: Erasure) -> int:
        if not erasure.rows.get("conflict_sides"):
            return 0
        # Only a published OPEN_QUESTIONS page is recompiled; publishing would create it.
        published = Page.objects.filter(
            project=erasure.source.project_id,
            key=PageKey.OPEN_QUESTIONS,
            current_revision__isnull=False,
        ).exists()
        revision = published and open_questions_publish(
            project=erasure.source.project,
            actor=erasure.actor,
            reason=f"erasure of source #{erasure.source.pk}",
        )
        return 1 if revision else 0


register_step(ReviewsErasure())
