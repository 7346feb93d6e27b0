"""Procedures: a numbered list of steps, and the runs of it logged step by step.

A runbook is written once as a numbered list ("1. Announce … 2. Check CI … 3. Back up …")
and then executed: sometimes logged as one entry with a nested numbered list, sometimes
as one log line per step ("07:45 step 5 — `make drain HOST=node-b`"). Sentence
clustering sees ten unrelated facts in each of those, and proposed one candidate per
step per run. Here each is an **instance** (step number → sentences), and instances whose
aligned steps say the same thing are one procedure: one candidate, every run its evidence.

Matching never compares all pairs: instances are indexed by (step number, term), and only
instances sharing a posting are compared. Two instances are the same procedure when at
least ``MIN_STEPS`` aligned steps agree and they cover at least half of the shorter one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .dedupe import UnionFind, jaccard
from .text import STOP, Features, token_info

MIN_STEPS = 3  # fewer numbered items are a list, not a procedure
_MAX_POSTING = 64  # a (step, term) pair in more instances than this says nothing
_STEP_LABEL_RE = re.compile(r"^(?:\d{1,2}:\d{2}(?::\d{2})?\s+)?step\s+(\d{1,2})\b", re.I)
_CHAIN_GAP_S = 3 * 3600  # step lines further apart than this are separate runs


def step_label(text: str) -> int:
    """Return N for a log line labelled "step N" (after an optional clock time), else 0."""
    if "step" not in text[:16].lower():
        return 0
    m = _STEP_LABEL_RE.match(text)
    return int(m.group(1)) if m else 0


@dataclass(slots=True)
class Instance:
    """One written or executed occurrence of a procedure."""

    steps: dict[int, list[int]]  # step number -> unit indices
    episodes: list[int] = field(default_factory=list)  # episode indices (none for a claim)
    trust: float = 0.0
    # The episode whose text the whole procedure is written in, when there is one.
    whole: int | None = None


def chain_labelled(
    fragments: Sequence[tuple[int, int, float, int, list[int], list[int]]],
) -> list[Instance]:
    """Chain "step N" log lines into runs: same source, rising step numbers, close in time.

    Each fragment is ``(source, seconds, trust, step, units, episodes)`` and fragments
    must come in time order.
    """
    by_source: dict[int, list[tuple[int, int, float, int, list[int], list[int]]]] = {}
    for f in fragments:
        by_source.setdefault(f[0], []).append(f)
    out: list[Instance] = []
    for source in sorted(by_source):
        run: Instance | None = None
        last_step, last_t = 0, 0
        for _, t, trust, step, units, episodes in by_source[source]:
            if run is None or step <= last_step or t - last_t > _CHAIN_GAP_S:
                if run is not None and len(run.steps) >= MIN_STEPS:
                    out.append(run)
                run = Instance({}, [], trust)
            run.steps.setdefault(step, []).extend(units)
            run.episodes.extend(episodes)
            run.trust = max(run.trust, trust)
            last_step, last_t = step, t
        if run is not None and len(run.steps) >= MIN_STEPS:
            out.append(run)
    return out


def _step_terms(units: list[int], features: Sequence[Features]) -> frozenset[str]:
    terms: set[str] = set()
    for u in units:
        f = features[u]
        terms |= f.subject
        terms |= f.idents
    return frozenset(terms)


def _steps_agree(a: frozenset[str], b: frozenset[str]) -> bool:
    # Two shared terms, or a good overlap: "took node-b out of the balancer pool: `make
    # drain HOST=node-b`" does the step "Take node-b out of the balancer pool".
    return len(a & b) >= 2 or jaccard(a, b) >= 0.25


_LABEL_RE = re.compile(r"^\*\*[^*]{1,40}:\*\*\s*|^\*\*[^*]{1,40}\*\*:\s*")


def _imperative(step: str) -> bool:
    """Does a step open as an instruction: on a plain word, not markup, a name or an article?

    "Back up the database" and "check CI" are steps; "**Option A** — …", "The API …"
    and "WHEN the user …" are items of a list that describes.
    """
    # A bold label before the instruction ("**Plan:** Check …") names the step.
    step = _LABEL_RE.sub("", step)
    first = step.split(None, 1)[0] if step.strip() else ""
    if not first.isalpha() or any(c.isupper() for c in first[1:]):
        return False
    _, flags = token_info(first)
    return not flags & STOP


def written_procedure(inst: Instance, texts: Sequence[str], authority: float) -> bool:
    """A procedure written out once as a numbered list of instructions, in a source
    trusted as the reference, is one already."""
    if inst.whole is None or len(inst.steps) < MIN_STEPS or inst.trust < authority:
        return False
    firsts = [texts[units[0]] for _, units in sorted(inst.steps.items()) if units]
    return sum(map(_imperative, firsts)) * 3 >= len(firsts) * 2


def same_procedures(
    instances: Sequence[Instance],
    features: Sequence[Features],
    texts: Sequence[str] = (),
    authority: float = 1.0,
) -> list[list[int]]:
    """Group instances of one procedure; return groups of two or more instance indices,
    and, given the unit ``texts``, every procedure written out once in a source trusted
    at ``authority`` or more."""
    terms = [
        {k: _step_terms(units, features) for k, units in inst.steps.items()} for inst in instances
    ]
    postings: dict[tuple[int, str], list[int]] = {}
    for x, steps in enumerate(terms):
        for k in sorted(steps):
            for t in sorted(steps[k]):
                postings.setdefault((k, t), []).append(x)
    pairs: set[tuple[int, int]] = set()
    for members in postings.values():
        if 1 < len(members) <= _MAX_POSTING:
            for n, a in enumerate(members):
                for b in members[n + 1 :]:
                    if a != b:
                        pairs.add((a, b) if a < b else (b, a))
    uf = UnionFind(len(instances))
    for a, b in sorted(pairs):
        sa, sb = terms[a], terms[b]
        common = sa.keys() & sb.keys()
        agree = sum(1 for k in common if _steps_agree(sa[k], sb[k]))
        if agree >= MIN_STEPS and agree >= math.ceil(min(len(sa), len(sb)) / 2):
            uf.union(a, b)
    groups: dict[int, list[int]] = {}
    for x in range(len(instances)):
        groups.setdefault(uf.find(x), []).append(x)
    return [
        g
        for _, g in sorted(groups.items())
        if len(g) > 1 or (texts and written_procedure(instances[g[0]], texts, authority))
    ]
