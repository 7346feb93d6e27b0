"""Contradictions, between new material and approved claims and among new material.

Three kinds, each found through an index rather than by comparing all pairs:

* **value** — one subject's attribute given two values that cannot both hold: read as
  typed slots (``slots``), where events, readings and counts set nothing. A version and a
  more precise one ("v1.4" and "v1.4.2") agree (``values_clash``).
* **reversal** — "moved/switched/migrated from X to Y", "replaced X with Y", "no longer use
  X" against an earlier "use/decided on X" (or an approved claim saying so).
* **negation** — "we do not use X" vs "we use X", in either order.

Decision statements are indexed by their object's canonical head word ("QueueCo" →
``queueco``) and matched only when their scopes ("for the order event queue") agree.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .dedupe import jaccard
from .text import GENERIC, MARK, NEGATIONS, STOP, TOKEN_RE, WEAK, analyse, token_info

# Patterns are case-sensitive on purpose: a multi-word object continues only through
# Capitalised words ("Event Log"), so verbs and prepositions carry (?i:) locally.
_OBJ = (
    r"(?i:the |a |an |our )?(?P<{g}>`[^`]{{1,60}}`"
    r"|[A-Za-z0-9][\w.+#-]*[\w+#](?:\s+[A-Z][\w.+#-]*[\w+#]){{0,2}}|[A-Za-z0-9])"
    r"(?:\s+v?\d[\w.]*)?"
)
# The scope may follow a few more words of the object ("event log for the queue").
_SCOPE = r"(?:[^.;:!?]{{0,40}}?\s(?i:for|as|in|on|across|with)\s+(?P<scope>[^.;:!?]{{3,80}}))?"
_USE_VERBS = (
    r"use|uses|using|adopt|adopted|adopting|choose|chose|chosen|pick|picked|go with|went with"
    r"|settle on|settled on|standardi[sz]e on|standardi[sz]ed on|rely on|relies on"
)
_USE_RE = re.compile(r"\b(?i:" + _USE_VERBS + r")\s+" + _OBJ.format(g="x") + _SCOPE.format())
_REV_RES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (
        re.compile(
            r"\b(?i:moved|moving|migrated|migrating|switched|switching|changed|changing"
            r"|transitioned|went)\s+(?i:over\s+)?(?i:from)\s+"
            + _OBJ.format(g="x")
            + r"\s+(?i:to|over to|onto)\s+"
            + _OBJ.format(g="y")
            + _SCOPE.format()
        ),
        ("from",),
    ),
    (
        re.compile(
            r"\b(?i:replac(?:ed|ing))\s+"
            + _OBJ.format(g="x")
            + r"\s+(?i:with|by)\s+"
            + _OBJ.format(g="y")
            + _SCOPE.format()
        ),
        ("replac",),
    ),
    (
        re.compile(
            r"\b(?i:no longer|stopped|stop)\s+(?i:use|uses|using)\s+"
            + _OBJ.format(g="x")
            + _SCOPE.format()
        ),
        ("longer", "stop"),
    ),
]
# Substring checks before any regex: most sentences state no decision.
_USE_CUES = (
    "use",
    "using",
    "adopt",
    "choose",
    "chose",
    "pick",
    "go with",
    "went with",
    "settle",
    "standardi",
    "rely",
    "relies",
)
_QUICK_WORDS = (
    "use",
    "using",
    "adopt",
    "chose",
    "choose",
    "pick",
    "go with",
    "went",
    "settle",
    "standardi",
    "rely",
    "relies",
    "mov",
    "migrat",
    "switch",
    "chang",
    "transition",
    "replac",
    "stop",
)


@dataclass(frozen=True, slots=True)
class Statement:
    """A decision statement: use / neg (do not use) / rev (stopped using ``obj``)."""

    kind: str
    obj: str
    obj_text: str
    scope: frozenset[str]
    scope_text: str


def _object(phrase: str | None) -> tuple[str, str] | None:
    if not phrase:
        return None
    phrase = phrase.strip("` ")
    toks = TOKEN_RE.findall(phrase)
    if not toks:
        return None
    canon, flags = token_info(toks[0])
    if flags & (STOP | WEAK | MARK | GENERIC) or len(canon) < 2:
        return None
    return canon, phrase


def _scope(m: re.Match[str], exclude: set[str]) -> tuple[frozenset[str], str]:
    text = (m.group("scope") or "").strip()
    if not text:
        return frozenset(), ""
    text = re.sub(r"^(?:the|a|an|our)\s+", "", text, flags=re.I)
    return frozenset(analyse(text).subject - exclude), text


# Said just before "use X", these deny it ("we do not use X", "we no longer use X").
_DENY_USE = NEGATIONS | {"stop", "stopped", "avoid"}


def _negated_before(before: str) -> bool:
    words = [w.lower() for w in TOKEN_RE.findall(before)[-2:]]
    return bool(words) and (words[-1] in _DENY_USE or words == ["no", "longer"])


def statements(sentence: str) -> list[Statement]:
    """Extract decision statements from one sentence (empty for most sentences)."""
    low = sentence.lower()
    if not any(w in low for w in _QUICK_WORDS):
        return []
    out: list[Statement] = []
    taken: list[tuple[int, int]] = []
    for rx, cues in _REV_RES:
        # Each pattern has literal words it cannot match without; checking them is far
        # cheaper than letting the regex engine scan the sentence.
        if not any(c in low for c in cues):
            continue
        for m in rx.finditer(sentence):
            x = _object(m.group("x"))
            if not x:
                continue
            y = _object(m.groupdict().get("y"))
            scope, scope_text = _scope(m, {x[0]} | ({y[0]} if y else set()))
            out.append(Statement("rev", x[0], x[1], scope, scope_text))
            if y:
                # "moved from X to Y" is also a decision to use Y, which a later
                # "we do not use Y" contradicts.
                out.append(Statement("use", y[0], y[1], scope, scope_text))
            taken.append(m.span())
    has_use = any(c in low for c in _USE_CUES)
    for m in _USE_RE.finditer(sentence) if has_use else ():
        if any(lo <= m.start() < hi for lo, hi in taken):
            continue
        # "we do not use X" denies the choice that "we use X" states
        kind = "neg" if _negated_before(sentence[max(0, m.start() - 20) : m.start()]) else "use"
        x = _object(m.group("x"))
        if x:
            scope, scope_text = _scope(m, {x[0]})
            out.append(Statement(kind, x[0], x[1], scope, scope_text))
    return out


def scopes_agree(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when two decision scopes may be the same (either unstated counts as agreeing)."""
    return not a or not b or a <= b or b <= a or jaccard(a, b) >= 0.5


@dataclass(slots=True)
class Found:
    """A conflict in unit indices; the pipeline turns it into a ``ConflictDraft``."""

    kind: str
    subject: str
    sides: list[list[int]]  # unit indices per side, oldest side first
    claims: list[int | None] = field(default_factory=list)  # claim id per side, if any
    reps: list[int] = field(default_factory=list)  # the unit stating each side, if known


def decision_conflicts(
    found: Sequence[tuple[int, Statement]],
    unit_first: Sequence[datetime | None],
    unit_last: Sequence[datetime | None],
    unit_claim: Sequence[int | None],
) -> list[Found]:
    """Match reversals and negations against uses of the same object with agreeing scope."""
    groups: dict[tuple[str, str, frozenset[str]], list[int]] = {}
    meta: dict[tuple[str, str, frozenset[str]], Statement] = {}
    for unit, st in found:
        key = (st.kind, st.obj, st.scope)
        groups.setdefault(key, []).append(unit)
        meta.setdefault(key, st)
    by_obj: dict[str, dict[str, list[tuple[str, str, frozenset[str]]]]] = {}
    for key in sorted(groups, key=_key_order):
        by_obj.setdefault(key[1], {}).setdefault(key[0], []).append(key)

    def first(units: list[int]) -> datetime | None:
        times = [unit_first[u] for u in units if unit_first[u] is not None]
        return min(times) if times else None

    def last(units: list[int]) -> datetime | None:
        times = [unit_last[u] for u in units if unit_last[u] is not None]
        return max(times) if times else None

    out: list[Found] = []
    for obj in sorted(by_obj):
        kinds = by_obj[obj]
        uses = kinds.get("use", [])
        for kind, conflict_kind in (("rev", "reversal"), ("neg", "negation")):
            for against in kinds.get(kind, []):
                a_units = groups[against]
                a_last = last(a_units)
                opposed: set[int] = set()
                for use in uses:
                    if not scopes_agree(use[2], against[2]):
                        continue
                    u_units = groups[use]
                    claimed = any(unit_claim[u] is not None for u in u_units)
                    if conflict_kind == "reversal" and not claimed:
                        # a reversal contradicts only what was said before it
                        u_first = first(u_units)
                        if u_first is None or a_last is None or u_first >= a_last:
                            continue
                    opposed.update(u_units)
                opposed -= set(a_units)
                if not opposed:
                    continue
                # All agreeing "use X" statements form one side (approved claims each get
                # their own, so the reviewer sees which claim is contested).
                sides = split_claims(sorted(opposed), unit_claim)
                st = meta[against]
                subject = st.scope_text or st.obj_text
                subject = f"{st.obj_text} — {subject}" if st.scope_text else subject
                sides.append(sorted(a_units))
                out.append(
                    Found(
                        conflict_kind,
                        subject,
                        sides,
                        [claim_of(s, unit_claim) for s in sides],
                    )
                )
    return out


def _key_order(key: tuple[str, str, frozenset[str]]) -> tuple[str, str, tuple[str, ...]]:
    return key[0], key[1], tuple(sorted(key[2]))


def split_claims(units: list[int], unit_claim: Sequence[int | None]) -> list[list[int]]:
    # Each approved claim is its own side (it carries its claim id); episodes form one side.
    plain = sorted(u for u in units if unit_claim[u] is None)
    claims = sorted(u for u in units if unit_claim[u] is not None)
    return ([plain] if plain else []) + [[c] for c in claims]


def claim_of(side: list[int], unit_claim: Sequence[int | None]) -> int | None:
    for u in side:
        if unit_claim[u] is not None:
            return unit_claim[u]
    return None


def _compatible(a: str, b: str) -> bool:
    # "1.4" and "1.4.2" name the same release line at two precisions.
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def values_clash(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when no value of one agrees with a value of the other."""
    return not any(_compatible(x, y) for x in a for y in b)


def conflict_key(kind: str, subject: str, side_keys: Sequence[str]) -> str:
    """Return a stable, content-derived dedupe key for a conflict."""
    raw = "\x1f".join([kind, subject.lower(), *sorted(side_keys)])
    return "conflict:" + hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()
