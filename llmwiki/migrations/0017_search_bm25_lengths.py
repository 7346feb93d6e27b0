"""PostgreSQL ranks like BM25F: each search row keeps the lengths of its own words and its
context (in words, as Whoosh counts a field's length), the term dictionary adds them up
per layer for the average lengths, and each word's peak is taken again under the new rank
(llmwiki.search.postgres._rank at the layer's averages: K1 1.2, B 0.75, context 0.5)."""

from django.db import migrations, models

# A tsvector's length in words (every position of every lexeme), not in distinct lexemes.
WORDS = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest({}))"

LENGTHS_SQL = f"""
ALTER TABLE llmwiki_searchdocument ADD COLUMN ctx integer NOT NULL DEFAULT 0;
CREATE OR REPLACE FUNCTION llmwiki_searchdocument_vec() RETURNS trigger AS $$
DECLARE
  own_words tsvector := to_tsvector('english', CASE WHEN NEW.context = '' THEN NEW.text
               ELSE left(NEW.text, length(NEW.text) - length(NEW.context) - 1) END);
  context_words tsvector := to_tsvector('english', NEW.context);
BEGIN
  NEW.vec := setweight(own_words, 'A') || setweight(context_words, 'B');
  NEW.own := {WORDS.format("own_words")};
  NEW.ctx := {WORDS.format("context_words")};
  RETURN NEW;
END $$ LANGUAGE plpgsql;
UPDATE llmwiki_searchdocument SET own = {WORDS.format("ts_filter(vec, '{a}')")},
  ctx = {WORDS.format("ts_filter(vec, '{b}')")};
UPDATE llmwiki_searchterm t SET own_words = d.own, context_words = d.ctx,
  peak_own = coalesce(nullif(d.own::float8 / t.docs, 0), 1),
  peak_context = coalesce(nullif(d.ctx::float8 / t.docs, 0), 1) FROM (
  SELECT project_id, layer, sum(own) AS own, sum(ctx) AS ctx FROM llmwiki_searchdocument
  GROUP BY project_id, layer
) d WHERE t.project_id = d.project_id AND t.layer = d.layer AND t.lexeme = '';
UPDATE llmwiki_searchterm t SET peak = p.peak FROM (
  SELECT d.project_id, d.layer, u.lexeme, max(2.2 * (1 - 1.2 / (1.2 + ts_rank_cd(ARRAY[0, 0,
    0.125 / (0.25 + 0.75 * d.ctx / r.peak_context), 0.25 / (0.25 + 0.75 * d.own / r.peak_own)
  ]::float4[], d.vec,
    ('''' || replace(replace(u.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery) / 0.25)))
  AS peak
  FROM llmwiki_searchdocument d JOIN llmwiki_searchterm r ON r.project_id = d.project_id
    AND r.layer = d.layer AND r.lexeme = '', unnest(d.vec) u
  GROUP BY d.project_id, d.layer, u.lexeme
) p WHERE t.project_id = p.project_id AND t.layer = p.layer AND t.lexeme = p.lexeme;
"""  # noqa: S608 (module constants only)

# Back to migration 0015's distinct own words and ts_rank's peaks.
UNDO_SQL = """
CREATE OR REPLACE FUNCTION llmwiki_searchdocument_vec() RETURNS trigger AS $$
DECLARE
  own_words tsvector := to_tsvector('english', CASE WHEN NEW.context = '' THEN NEW.text
               ELSE left(NEW.text, length(NEW.text) - length(NEW.context) - 1) END);
BEGIN
  NEW.vec := setweight(own_words, 'A') || setweight(to_tsvector('english', NEW.context), 'B');
  NEW.own := greatest(length(own_words), 1);
  RETURN NEW;
END $$ LANGUAGE plpgsql;
ALTER TABLE llmwiki_searchdocument DROP COLUMN ctx;
UPDATE llmwiki_searchdocument SET own = greatest(length(ts_filter(vec, '{a}')), 1);
UPDATE llmwiki_searchterm t SET peak = p.peak FROM (
  SELECT d.project_id, d.layer, u.lexeme, max(ts_rank('{0, 0, 0.5, 1}'::float4[], d.vec,
    ('''' || replace(replace(u.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery)
    / (1 + ln(d.own))) AS peak
  FROM llmwiki_searchdocument d, unnest(d.vec) u GROUP BY d.project_id, d.layer, u.lexeme
) p WHERE t.project_id = p.project_id AND t.layer = p.layer AND t.lexeme = p.lexeme;
"""


def _lengths(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LENGTHS_SQL)


def _no_lengths(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNDO_SQL)


class Migration(migrations.Migration):
    dependencies = [("llmwiki", "0016_latest_id_per_project")]

    operations = [
        migrations.AddField(
            model_name="searchterm",
            name="own_words",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="searchterm",
            name="context_words",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="searchterm",
            name="peak_own",
            field=models.FloatField(default=0.0, db_default=0.0),
        ),
        migrations.AddField(
            model_name="searchterm",
            name="peak_context",
            field=models.FloatField(default=0.0, db_default=0.0),
        ),
        migrations.RunPython(_lengths, _no_lengths),
    ]
