from django.db import migrations, models

# Each word's peak: the most it adds to one of the layer's documents' ts_rank, with the
# weights and quoting the search backend uses (llmwiki.search.backends).
PEAKS_SQL = """
UPDATE llmwiki_searchterm t SET peak = p.peak FROM (
  SELECT d.project_id, d.layer, u.lexeme, max(ts_rank('{0, 0, 0.5, 1}'::float4[], d.vec,
    ('''' || replace(replace(u.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery)) AS peak
  FROM llmwiki_searchdocument d, unnest(d.vec) u GROUP BY d.project_id, d.layer, u.lexeme
) p WHERE t.project_id = p.project_id AND t.layer = p.layer AND t.lexeme = p.lexeme
"""


# One GIN index per layer in place of one over every row: a query reads one layer, and the
# index then walks that layer's postings only (a claim query no longer walks the
# episodes'). The layer is a constant in each query, so the planner picks the index.
LAYER_INDEXES_SQL = """
CREATE INDEX llmwiki_searchdoc_vec_claim ON llmwiki_searchdocument USING gin (vec)
  WHERE layer = 'claim';
CREATE INDEX llmwiki_searchdoc_vec_page ON llmwiki_searchdocument USING gin (vec)
  WHERE layer = 'page';
CREATE INDEX llmwiki_searchdoc_vec_episode ON llmwiki_searchdocument USING gin (vec)
  WHERE layer = 'episode';
DROP INDEX IF EXISTS llmwiki_searchdoc_vec;
"""
UNDO_LAYER_INDEXES_SQL = """
CREATE INDEX llmwiki_searchdoc_vec ON llmwiki_searchdocument USING gin (vec);
DROP INDEX llmwiki_searchdoc_vec_claim;
DROP INDEX llmwiki_searchdoc_vec_page;
DROP INDEX llmwiki_searchdoc_vec_episode;
"""


def _layer_indexes(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LAYER_INDEXES_SQL)


def _one_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNDO_LAYER_INDEXES_SQL)


def _peaks(apps, schema_editor):
    # Words written before this migration get their peaks from the rows they are in, so a
    # query does not skip rows on a bound of 0. SQLite keeps no rows here.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PEAKS_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("llmwiki", "0013_claim_validity"),
    ]

    operations = [
        migrations.AddField(
            model_name="searchterm",
            name="peak",
            field=models.FloatField(default=0.0),
        ),
        migrations.RunPython(_peaks, migrations.RunPython.noop),
        migrations.RunPython(_layer_indexes, _one_index),
    ]
