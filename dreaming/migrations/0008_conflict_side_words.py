from django.db import migrations

# On PostgreSQL, each conflict side keeps its words as the search index parses text (a
# generated column the model does not declare), with a GIN index, and an aggregate joins
# a conflict's sides' words: a retrieval then ranks the open conflicts sharing its query's
# words where they are, instead of reading and parsing every one
# (dreaming.retrieval.unresolved_vectors). A later change of the `text` column's type must
# drop and re-add `words`. SQLite keeps none of this; Whoosh reads every open conflict.
WORDS_SQL = """
ALTER TABLE dreaming_conflictside ADD COLUMN words tsvector
  GENERATED ALWAYS AS (to_tsvector('english', text)) STORED;
CREATE INDEX dreaming_conflictside_words ON dreaming_conflictside USING gin (words);
CREATE AGGREGATE dreaming_tsvector_agg (tsvector) (
  SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = ''
);
"""
UNDO_SQL = """
DROP AGGREGATE IF EXISTS dreaming_tsvector_agg (tsvector);
ALTER TABLE dreaming_conflictside DROP COLUMN IF EXISTS words;
"""


def _add(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(WORDS_SQL)


def _drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNDO_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("dreaming", "0007_candidate_rank"),
    ]

    operations = [migrations.RunPython(_add, _drop)]
