"""Per-project API tokens: what an agent presents to the JSON API and the MCP server."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from llmwiki.access import Do
from llmwiki.models import Project


class ApiToken(models.Model):
    """A bearer token for one project. Only its sha256 is stored; the token is shown once.

    The token acts as the maintainer who created it, narrowed by its scopes and by that
    person's current role, and stops working when revoked, when that person leaves the
    project, or when their account is deactivated.
    """

    class Scope(models.TextChoices):
        READ = "read", "Read (retrieve, pages, candidates, provenance, conflicts)"
        WRITE_EVENTS = "write-events", "Write events (record episodes through the ingest gate)"
        REVIEW = (
            "review",
            "Review (dream, review actions, exports; reads sensitive text; includes read)",
        )

    # Reviewing is judging what one reads: the candidate and its version, its evidence and
    # provenance, the page it would change, the run a sweep started. So review includes read.
    IMPLIED = {Scope.REVIEW: (Scope.READ,)}

    # What the token's creator must still be allowed to do for each scope to work
    # (`llmwiki.access.PERMISSIONS`): the same as the web asks for the same work.
    SCOPE_DOES = {
        Scope.READ: Do.READ,
        Scope.WRITE_EVENTS: Do.INGEST,
        Scope.REVIEW: Do.REVIEW,
    }

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    # The public part of the token, so a row is found without scanning hashes.
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="api_tokens"
    )
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # A fixed window of writes, counted on the row so that every process shares it.
    window_started_at = models.DateTimeField(null=True, blank=True)
    window_writes = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        return any(scope == held or scope in self.IMPLIED.get(held, ()) for held in self.scopes)
