"""Extractive, grounded candidate text: pick one evidence sentence, never write new prose.

The representative is the sentence that covers most of the cluster's core terms (the
centroid), preferring more trusted sources, then well-formed sentences, then shorter ones.
Junk (headings, bare shell commands, fragments) and sentences carrying a redaction
placeholder are never chosen; OpenClaw promoted exactly those. Because the text is one of
the evidence sentences with only log noise and filler labels removed, every candidate is
grounded by construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from .policy import Policy
from .text import Features
from .wording import asks_the_listener, dated, display_text, opens_pointing_back, trim_snippet

REDACTION_MARK = "[REDACTED"
_MAX_CONSIDERED = 200  # bound the work on very large clusters; they are highly redundant


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen sentence (unit index) and its display text, or why nothing qualified."""

    unit: int | None
    text: str
    reason: str | None = None


def choose(
    units: Sequence[int],
    texts: Sequence[str],
    features: Sequence[Features],
    junk: Sequence[str | None],
    trust: Sequence[float],
    weight: Sequence[int],
    core: set[str],
    limit: int,
    people: frozenset[str] = frozenset(),
) -> Choice:
    """Return the most representative clean sentence among ``units``."""
    considered = sorted(units, key=lambda u: (-weight[u], u))[:_MAX_CONSIDERED]
    best: tuple | None = None
    saw_redacted = False
    for u in considered:
        if junk[u]:
            continue
        text = texts[u]
        if REDACTION_MARK in text:
            saw_redacted = True
            continue
        f = features[u]
        terms = f.subject | f.values
        overlap = len(terms & core) / len(core) if core else 0.0
        stripped = text.strip()
        well_formed = stripped[:1].isupper() and stripped[-1:] in ".!?"
        # A wording that holds beyond its day beats one tied to it, whatever else it covers,
        # one that reads on its own beats one opening on a word that points back, and a
        # statement beats a question put to the person spoken to.
        key = (
            dated(text),
            opens_pointing_back(text),
            asks_the_listener(text),
            -round(overlap, 6),
            -round(trust[u], 6),
            not well_formed,
            len(stripped),
            u,
        )
        if best is None or key < best:
            best = key
    if best is None:
        reason = "only redacted sentences" if saw_redacted else "only junk sentences"
        return Choice(None, "", reason)
    unit = best[-1]
    return Choice(unit, trim_snippet(display_text(texts[unit], people), limit))


def text_key(text: str) -> str:
    """Return the content-derived dedupe key of a candidate text."""
    norm = " ".join(text.lower().replace("…", " ").split()).rstrip(".!;, ")
    return "cand:" + hashlib.blake2b(norm.encode(), digest_size=12).hexdigest()


# The diary quotes a candidate in at most QUOTE_CHARS and a conflict subject in SUBJECT_CHARS:
# a line a reader takes in at a glance, never the whole text.
QUOTE_CHARS = 80
SUBJECT_CHARS = 60


def snippet(text: str, limit: int = QUOTE_CHARS) -> str:
    """Return a short quoted form of a grounded text for the diary."""
    return "“" + trim_snippet(text, limit) + "”"


def snippet_limits(policy: Policy) -> tuple[int, ...]:
    """Every length the engine trims quoted text to, so erasure can find each trimmed form."""
    return (SUBJECT_CHARS, QUOTE_CHARS, policy.snippet_max_chars)
