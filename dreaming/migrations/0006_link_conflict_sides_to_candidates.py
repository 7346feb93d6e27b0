"""Link the sides of conflicts still open to the candidates sweeps proposed from them.

Sweeps before 0005 did not record which candidate a side was, so resolving such a conflict
could not close its losing candidate. A side's candidate is the open, contested candidate
(one citing contradicting evidence) whose supporting episodes overlap the side's most.
"""

from collections import Counter

from django.db import migrations


def link(apps, schema_editor):
    ConflictSide = apps.get_model("dreaming", "ConflictSide")
    CandidateEvidence = apps.get_model("dreaming", "CandidateEvidence")
    sides = ConflictSide.objects.filter(
        candidate__isnull=True, claim__isnull=True, conflict__status__in=["open", "escalated"]
    ).select_related("conflict")
    for side in sides.iterator():
        contested = CandidateEvidence.objects.filter(
            candidate__project_id=side.conflict.project_id,
            candidate__status__in=["proposed", "deferred"],
            role="contradict",
        ).values("candidate_id")
        overlap = Counter(
            CandidateEvidence.objects.filter(
                candidate_id__in=contested,
                role="support",
                episode_id__in=side.evidence.values("id"),
            ).values_list("candidate_id", flat=True)
        )
        if overlap:
            best = min(overlap, key=lambda pk: (-overlap[pk], pk))
            ConflictSide.objects.filter(pk=side.pk).update(candidate_id=best)


class Migration(migrations.Migration):
    dependencies = [
        ("dreaming", "0005_conflict_reopens"),
    ]

    operations = [migrations.RunPython(link, migrations.RunPython.noop)]
