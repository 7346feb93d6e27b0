"""The core domain: projects, the raw and episodic layers, the reviewed wiki, audit.

Dependencies point one way (wizard → reviews → dreaming → llmwiki): nothing here imports
the other apps. Rows that are history (episodes, page revisions, audit events) are
immutable after insert; corrections are new rows.

One module per layer; every name is re-exported here, so `from llmwiki.models import X`
and the migrations (which name `llmwiki.models.default_policy`) do not depend on the split.
"""

from llmwiki.models.audit import AuditEvent, actor_label
from llmwiki.models.base import ImmutableError, ImmutableModel, ImmutableQuerySet, sha256_hex
from llmwiki.models.episodes import (
    SECURITY_RANK,
    Episode,
    EpisodeQuerySet,
    EpisodeRelabel,
    SecurityClass,
    Source,
)
from llmwiki.models.projects import ROLE_RANK, Membership, Project, Role, default_policy
from llmwiki.models.search import SearchDocument, SearchTerm, SearchWatermark
from llmwiki.models.wiki import (
    ChangelogEntry,
    Claim,
    ClaimQuerySet,
    Export,
    ManifestVersion,
    Page,
    PageKey,
    PageRevision,
    RecallTrace,
)

__all__ = [
    "ROLE_RANK",
    "SECURITY_RANK",
    "AuditEvent",
    "ChangelogEntry",
    "Claim",
    "ClaimQuerySet",
    "Episode",
    "EpisodeQuerySet",
    "EpisodeRelabel",
    "Export",
    "ImmutableError",
    "ImmutableModel",
    "ImmutableQuerySet",
    "ManifestVersion",
    "Membership",
    "Page",
    "PageKey",
    "PageRevision",
    "Project",
    "RecallTrace",
    "Role",
    "SearchDocument",
    "SearchTerm",
    "SearchWatermark",
    "SecurityClass",
    "Source",
    "actor_label",
    "default_policy",
    "sha256_hex",
]
