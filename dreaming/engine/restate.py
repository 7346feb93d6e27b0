"""Which newly drafted candidates restate a candidate still waiting for review.

A sweep reads only the episodes past its watermark, so the facts an earlier sweep proposed
and nobody has reviewed yet are not in its batch: a fact restated next week in new words
would be proposed a second time, beside the first. The drafts of one sweep and the open
candidates are compared with the sweep's own paraphrase measure (``similar``); persisting
reads only the waiting candidates that share a rare term with a draft
(``sweep_persist._near_drafts``), so the cost follows the drafts, not the queue.

A restatement must name the same hosts and environments and no clashing value: "the sync
interval is 5 minutes" does not fold into an open "… is 10 minutes"; that is a change
for the conflict queue, not more evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .blocks import sentences
from .conflicts import values_clash
from .similar import TermIndex, neighbours, terms_of
from .text import Features, analyse


@dataclass(frozen=True, slots=True)
class Identity:
    hosts: frozenset[str]
    envs: frozenset[str]
    values: frozenset[str]

    @classmethod
    def of(cls, feats: Sequence[Features]) -> Identity:
        return cls(
            frozenset().union(*(f.hosts for f in feats)),
            frozenset().union(*(f.envs for f in feats)),
            frozenset().union(*(f.values for f in feats)),
        )

    def agrees(self, other: Identity) -> bool:
        for mine, theirs in ((self.hosts, other.hosts), (self.envs, other.envs)):
            if mine and theirs and mine != theirs:
                return False
        return not (self.values and other.values and values_clash(self.values, other.values))


def restating(
    drafts: Sequence[str], open_texts: Sequence[str], factor: float = 1.0
) -> dict[int, int]:
    """Map the index of each draft that restates an open candidate to that candidate's index.

    A draft restating several open candidates goes to the one it shares most with.
    """
    if not drafts or not open_texts:
        return {}
    texts = [*open_texts, *drafts]
    feats = [[analyse(s) for s in sentences(t)] or [analyse(t)] for t in texts]
    # Plain stemmed terms: in a batch this small every word pair recurs, and joining
    # pairs into phrases (as a sweep does) would hide the words restatements share.
    terms = [frozenset().union(*(terms_of(f) for f in fs)) for fs in feats]
    near = neighbours(terms, TermIndex.of(terms), factor)
    ids = [Identity.of(f) for f in feats]
    out: dict[int, int] = {}
    first_draft = len(open_texts)
    for d in range(len(drafts)):
        x = first_draft + d
        best = max(
            ((s, -y) for y, s in near[x] if y < first_draft and ids[x].agrees(ids[y])),
            default=None,
        )
        if best is not None:
            out[d] = -best[1]
    return out
