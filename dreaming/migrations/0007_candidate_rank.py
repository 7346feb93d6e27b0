"""Store each candidate's place in the sweep's order, so the review queue lists it there.

Candidates from before carry their claim-worthiness in `signals["worth"]` when the sweep
that proposed them had the model; the rank is then worth + score / 2, as the sweep ranks
them, and half their score otherwise.
"""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Candidate = apps.get_model("dreaming", "Candidate")
    changed = []
    for c in Candidate.objects.only("id", "score", "signals").iterator(chunk_size=2000):
        worth = (c.signals or {}).get("worth")
        c.rank = (worth if isinstance(worth, int | float) else 0.0) + c.score / 2
        changed.append(c)
        if len(changed) == 2000:
            Candidate.objects.bulk_update(changed, ["rank"])
            changed = []
    Candidate.objects.bulk_update(changed, ["rank"])


class Migration(migrations.Migration):
    dependencies = [
        ("dreaming", "0006_link_conflict_sides_to_candidates"),
        ("llmwiki", "0014_search_peaks_and_layer_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="candidate",
            name="rank",
            field=models.FloatField(default=0.0),
        ),
        migrations.AddIndex(
            model_name="candidate",
            index=models.Index(fields=["project", "status", "-rank"], name="dreaming_ca_rank_idx"),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
