from django.db import migrations

# A conflict side's words are parsed as the search index parses text (llmwiki migration
# 0018: a hyphenated word as its parts only). A generated column's expression cannot be
# altered, so the column and its index are made again.
WORDS_SQL = """
ALTER TABLE dreaming_conflictside DROP COLUMN words;
ALTER TABLE dreaming_conflictside ADD COLUMN words tsvector
  GENERATED ALWAYS AS (to_tsvector('{config}', text)) STORED;
CREATE INDEX dreaming_conflictside_words ON dreaming_conflictside USING gin (words);
"""


def _parts(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WORDS_SQL.format(config="llmwiki_english"))


def _compounds(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WORDS_SQL.format(config="english"))


class Migration(migrations.Migration):
    dependencies = [
        ("dreaming", "0009_candidate_term"),
        ("llmwiki", "0018_search_hyphen_parts"),
    ]

    operations = [migrations.RunPython(_parts, _compounds)]
