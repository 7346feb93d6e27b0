from django.db import migrations, models

RANK = {"public": 0, "internal": 1, "restricted": 2}
SENSITIVE = ("pii:", "secret:")


def inherit(apps, schema_editor):
    """Claims approved before they inherited their evidence's restricted class and PII and
    secret flags take them now, so clearance withholds them like their evidence."""
    Claim = apps.get_model("llmwiki", "Claim")
    for claim in Claim.objects.prefetch_related("evidence").iterator(chunk_size=500):
        security, flags = claim.security_class, set()
        for episode in claim.evidence.all():
            if RANK.get(episode.security_class, 2) > RANK["internal"]:
                security = "restricted"
            flags.update(f for f in episode.flags or () if f.startswith(SENSITIVE))
        if security != claim.security_class or flags:
            claim.security_class = security
            claim.flags = sorted(flags)
            claim.save(update_fields=["security_class", "flags"])


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0011_search_terms"),
    ]

    operations = [
        migrations.AddField(
            model_name="claim",
            name="flags",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(inherit, migrations.RunPython.noop),
    ]
