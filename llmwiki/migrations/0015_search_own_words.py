"""PostgreSQL only: each search row keeps the number of its own words (label A), which
ranking divides by, so a query does not filter every candidate row's vector for it."""

from django.db import migrations

OWN_SQL = """
ALTER TABLE llmwiki_searchdocument ADD COLUMN own integer NOT NULL DEFAULT 1;
CREATE OR REPLACE FUNCTION llmwiki_searchdocument_vec() RETURNS trigger AS $$
DECLARE
  own_words tsvector := to_tsvector('english', CASE WHEN NEW.context = '' THEN NEW.text
               ELSE left(NEW.text, length(NEW.text) - length(NEW.context) - 1) END);
BEGIN
  NEW.vec := setweight(own_words, 'A') || setweight(to_tsvector('english', NEW.context), 'B');
  NEW.own := greatest(length(own_words), 1);
  RETURN NEW;
END $$ LANGUAGE plpgsql;
UPDATE llmwiki_searchdocument SET own = greatest(length(ts_filter(vec, '{a}')), 1);
"""

UNDO_SQL = """
CREATE OR REPLACE FUNCTION llmwiki_searchdocument_vec() RETURNS trigger AS $$
BEGIN
  NEW.vec := setweight(to_tsvector('english', CASE WHEN NEW.context = '' THEN NEW.text
               ELSE left(NEW.text, length(NEW.text) - length(NEW.context) - 1) END), 'A')
             || setweight(to_tsvector('english', NEW.context), 'B');
  RETURN NEW;
END $$ LANGUAGE plpgsql;
ALTER TABLE llmwiki_searchdocument DROP COLUMN own;
"""


def _own(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(OWN_SQL)


def _no_own(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNDO_SQL)


class Migration(migrations.Migration):
    dependencies = [("llmwiki", "0014_search_peaks_and_layer_indexes")]

    operations = [migrations.RunPython(_own, _no_own)]
