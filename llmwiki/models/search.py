"""The search index's rows on PostgreSQL (the Whoosh backend keeps its own files)."""

from __future__ import annotations

from django.db import models

from llmwiki.models.projects import Project


class SearchDocument(models.Model):
    """One indexed unit (a claim, a page section, an episode) for PostgreSQL full-text search.

    `text` is the item's own words, then a newline and `context` (the turn before an
    episode, a section's page title) when there is one. On PostgreSQL a trigger keeps them
    as a labelled tsvector in a column the model does not declare, `vec` (migration 0010),
    with a GIN index per layer (migration 0014); on SQLite the table stays empty.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=64)
    layer = models.CharField(max_length=10)
    text = models.TextField()
    context = models.TextField(blank=True, default="")
    sensitive = models.BooleanField(default=False)
    trust = models.CharField(max_length=10)
    security_class = models.CharField(max_length=10)
    page_target = models.CharField(max_length=64, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    digest = models.CharField(max_length=64)
    # The number of the write that last wrote the row (see SearchTerm.writes).
    written = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="one_search_doc_per_key")
        ]
        indexes = [
            models.Index(fields=["project", "layer", "written"], name="llmwiki_searchdoc_written")
        ]

    def __str__(self) -> str:
        return self.key


class SearchTerm(models.Model):
    """How many of a project's documents in one layer hold a lexeme: the term dictionary
    PostgreSQL's full-text search does not keep, so a query reads each word's document
    frequency (its idf) from one row instead of scanning the layer.

    The empty lexeme (no real lexeme is empty) counts the layer's documents. The search
    backend keeps the counts in the same transaction as the rows they count.

    `peak` is the most the word adds to one document's BM25F rank, whatever the layer's
    average lengths: raised as documents are written, never lowered when one is dropped
    (still a bound, if a loose one), reset by a rebuild. A query skips documents whose
    words' peaks cannot add up to its list.

    `own_words` and `context_words`, on the empty lexeme's row, add up the lengths of the
    layer's documents' own words and context: BM25's average lengths, read with the counts.
    `peak_own` and `peak_context` there are the average lengths the layer's peaks are ranked
    at, set again (and the peaks with them) when the averages drift far from them; a query
    whose averages have grown past them loosens its bounds to match.

    `writes`, on the empty lexeme's rows, is the number (from one sequence, rising in the
    order the project's writes commit) of the project's last write to its rows: a process
    holding decoded postings reads the rows `written` after the number it has seen.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    layer = models.CharField(max_length=10)
    lexeme = models.CharField(max_length=2047)  # PostgreSQL's longest lexeme
    docs = models.IntegerField(default=0)
    peak = models.FloatField(default=0.0)
    own_words = models.BigIntegerField(default=0)
    context_words = models.BigIntegerField(default=0)
    peak_own = models.FloatField(default=0.0, db_default=0.0)
    peak_context = models.FloatField(default=0.0, db_default=0.0)
    writes = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "layer", "lexeme"], name="one_search_term_per_layer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.layer}:{self.lexeme} ({self.docs})"


class SearchWatermark(models.Model):
    """How far the PostgreSQL index has folded in each project's committed changes."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="+")
    episode_id = models.BigIntegerField(default=0)
    audit_id = models.BigIntegerField(default=0)
    revision_id = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.project_id}: e{self.episode_id} a{self.audit_id} r{self.revision_id}"
