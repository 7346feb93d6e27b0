"""The refusal every review gate raises.

It is `llmwiki.errors.Refused`, which the wiki operations (retract, rollback) and erasure in
`llmwiki` raise too, so a view catches one type. Candidate decisions are in
`reviews.actions`, conflicts in `reviews.conflicts`.
"""

from __future__ import annotations

from llmwiki.errors import Refused

ReviewRefused = Refused

__all__ = ["ReviewRefused"]
