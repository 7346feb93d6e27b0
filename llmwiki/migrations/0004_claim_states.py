from django.db import migrations, models


def _move(Claim, rows, status):
    # Historical models have no Claim.transition; a handful of rows, saved one by one.
    for claim in rows:
        claim.status = status
        claim.save(update_fields=["status"])


def forwards(apps, schema_editor):
    Claim = apps.get_model("llmwiki", "Claim")
    # Erasure used to mark a claim only by its text.
    _move(Claim, Claim.objects.filter(status="retracted", text="[erased]"), "erased")
    # A superseded claim nothing supersedes was removed by a page rollback.
    rolled_back = Claim.objects.filter(status="superseded", superseded_by__isnull=True)
    _move(Claim, rolled_back, "rolled-back")


def backwards(apps, schema_editor):
    Claim = apps.get_model("llmwiki", "Claim")
    _move(Claim, Claim.objects.filter(status="erased"), "retracted")
    _move(Claim, Claim.objects.filter(status="rolled-back"), "superseded")


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0003_restricted_clearance"),
    ]

    operations = [
        migrations.AlterField(
            model_name="claim",
            name="status",
            field=models.CharField(
                choices=[
                    ("approved", "Approved"),
                    ("superseded", "Superseded"),
                    ("retracted", "Retracted"),
                    ("rolled-back", "Rolled back"),
                    ("erased", "Erased"),
                ],
                default="approved",
                max_length=12,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]
