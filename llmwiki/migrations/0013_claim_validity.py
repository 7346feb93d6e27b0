from django.db import migrations, models
from django.db.models import Min

ENDED = ("claim.superseded", "claim.retracted", "claim.rolled-back", "claim.erased")


def backfill(apps, schema_editor):
    """Claims approved before the two time axes were kept get them from what is on record:
    held from their earliest evidence's occurrence, until the evidence of the claim that
    superseded them; retired at the audit event that last ended their approval."""
    Claim = apps.get_model("llmwiki", "Claim")
    AuditEvent = apps.get_model("llmwiki", "AuditEvent")
    for claim in Claim.objects.annotate(first=Min("evidence__occurred_at")).iterator(
        chunk_size=500
    ):
        if claim.first is not None:
            Claim.objects.filter(pk=claim.pk).update(held_from=claim.first)
    for claim in Claim.objects.exclude(status="approved").iterator(chunk_size=500):
        ended = (
            AuditEvent.objects.filter(
                object_type="Claim", object_id=str(claim.pk), action__in=ENDED
            )
            .order_by("-at", "-id")
            .first()
        )
        later = Claim.objects.filter(supersedes=claim.pk).values_list("held_from", flat=True)
        Claim.objects.filter(pk=claim.pk).update(
            retired_at=ended.at if ended else claim.approved_at,
            held_until=later.first() if claim.status == "superseded" else None,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0012_claim_flags"),
    ]

    operations = [
        migrations.AddField(
            model_name="claim",
            name="retired_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="claim",
            name="held_from",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="claim",
            name="held_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
