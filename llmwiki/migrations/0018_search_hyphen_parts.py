"""PostgreSQL reads a hyphenated word as its parts only ("tw-worker-2": tw, worker, 2), as
the Whoosh backend's tokenizer does, not also as the compound ("tw-worker"): the compound
was a second copy of words the row already holds, so a hyphenated name counted about
twice, and every query naming one asked the index for three or four words where one name
was meant. The search configuration `llmwiki_english` is `english` without the compound
token types; the rows' vectors and the term dictionary are read again under it."""

from django.db import migrations

# A tsvector's length in words (every position of every lexeme), as migration 0017 counts.
WORDS = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest({}))"

TRIGGER_SQL = """
CREATE OR REPLACE FUNCTION llmwiki_searchdocument_vec() RETURNS trigger AS $$
DECLARE
  own_words tsvector := to_tsvector('{config}', CASE WHEN NEW.context = '' THEN NEW.text
               ELSE left(NEW.text, length(NEW.text) - length(NEW.context) - 1) END);
  context_words tsvector := to_tsvector('{config}', NEW.context);
BEGIN
  NEW.vec := setweight(own_words, 'A') || setweight(context_words, 'B');
  NEW.own := {own};
  NEW.ctx := {ctx};
  RETURN NEW;
END $$ LANGUAGE plpgsql;
"""

# Every row's vector and lengths again (the trigger), then the term dictionary from them:
# each layer's counts and lengths, its peaks aimed at its averages, and each word's count
# and peak (llmwiki.search.postgres.PEAK as migration 0017 writes it: K1 1.2, B 0.75,
# context 0.5).
REREAD_SQL = """
UPDATE llmwiki_searchdocument SET text = text;
DELETE FROM llmwiki_searchterm WHERE lexeme <> '';
UPDATE llmwiki_searchterm t SET docs = d.n, own_words = d.own, context_words = d.ctx,
  peak_own = coalesce(nullif(d.own::float8 / d.n, 0), 1),
  peak_context = coalesce(nullif(d.ctx::float8 / d.n, 0), 1) FROM (
  SELECT project_id, layer, count(*) AS n, sum(own) AS own, sum(ctx) AS ctx
  FROM llmwiki_searchdocument GROUP BY project_id, layer
) d WHERE t.project_id = d.project_id AND t.layer = d.layer AND t.lexeme = '';
INSERT INTO llmwiki_searchterm (project_id, layer, lexeme, docs, peak, own_words,
  context_words, peak_own, peak_context)
SELECT d.project_id, d.layer, u.lexeme, count(*), max(2.2 * (1 - 1.2 / (1.2 + ts_rank_cd(
    ARRAY[0, 0, 0.125 / (0.25 + 0.75 * d.ctx / r.peak_context),
          0.25 / (0.25 + 0.75 * d.own / r.peak_own)]::float4[], d.vec,
    ('''' || replace(replace(u.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery) / 0.25))),
  0, 0, 0, 0
FROM llmwiki_searchdocument d JOIN llmwiki_searchterm r ON r.project_id = d.project_id
  AND r.layer = d.layer AND r.lexeme = '', unnest(d.vec) u
GROUP BY d.project_id, d.layer, u.lexeme;
"""

CONFIG_SQL = """
CREATE TEXT SEARCH CONFIGURATION llmwiki_english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION llmwiki_english DROP MAPPING FOR asciihword, hword, numhword;
"""


def _trigger(config: str) -> str:
    return TRIGGER_SQL.format(
        config=config, own=WORDS.format("own_words"), ctx=WORDS.format("context_words")
    )


def _parts(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CONFIG_SQL + _trigger("llmwiki_english") + REREAD_SQL)


def _compounds(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(_trigger("english") + REREAD_SQL)
        schema_editor.execute("DROP TEXT SEARCH CONFIGURATION llmwiki_english")


class Migration(migrations.Migration):
    dependencies = [("llmwiki", "0017_search_bm25_lengths")]

    operations = [migrations.RunPython(_parts, _compounds)]
