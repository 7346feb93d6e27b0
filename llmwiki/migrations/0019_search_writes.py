"""Each write to a project's PostgreSQL search rows takes a number from one sequence, kept
on the rows it wrote and on the project's layer rows of the term dictionary, so a process
that holds decoded postings (`llmwiki.search.postings`) reads what changed since it last
looked instead of reading the layer again."""

from django.db import migrations, models

SEQUENCE = "llmwiki_search_writes"


def _sequence(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}")


def _no_sequence(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP SEQUENCE IF EXISTS {SEQUENCE}")


class Migration(migrations.Migration):
    dependencies = [("llmwiki", "0018_search_hyphen_parts")]

    operations = [
        migrations.AddField(
            model_name="searchdocument",
            name="written",
            field=models.BigIntegerField(default=0, db_default=0),
        ),
        migrations.AddField(
            model_name="searchterm",
            name="writes",
            field=models.BigIntegerField(default=0, db_default=0),
        ),
        migrations.AddIndex(
            model_name="searchdocument",
            index=models.Index(
                fields=["project", "layer", "written"], name="llmwiki_searchdoc_written"
            ),
        ),
        migrations.RunPython(_sequence, _no_sequence),
    ]
