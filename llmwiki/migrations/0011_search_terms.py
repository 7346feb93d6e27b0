import django.db.models.deletion
from django.db import migrations, models


def _reindex(apps, schema_editor):
    # An episode's context is now only the turn before it (llmwiki.search.documents), and
    # PostgreSQL keeps a term dictionary beside the rows: drop the rows and watermarks, so
    # the next fold (every minute, or the next query) writes both. On SQLite the tables
    # are empty.
    apps.get_model("llmwiki", "SearchDocument").objects.all().delete()
    apps.get_model("llmwiki", "SearchWatermark").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0010_search_document_context"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchTerm",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("layer", models.CharField(max_length=10)),
                ("lexeme", models.CharField(max_length=2047)),
                ("docs", models.IntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="llmwiki.project",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "layer", "lexeme"), name="one_search_term_per_layer"
                    )
                ],
            },
        ),
        migrations.RunPython(_reindex, migrations.RunPython.noop),
    ]
