from django.db import migrations


def _reindex(apps, schema_editor):
    # An episode's context is now only the turn before it (llmwiki.search.documents):
    # drop the rows and watermarks written with both neighbours, so the next fold (every
    # minute, or the next query) writes them again. On SQLite both tables are empty.
    apps.get_model("llmwiki", "SearchDocument").objects.all().delete()
    apps.get_model("llmwiki", "SearchWatermark").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0010_search_document_context"),
    ]

    operations = [migrations.RunPython(_reindex, migrations.RunPython.noop)]
