"""Contradictions, between new material and approved claims and among new material.

Three kinds, each found through an index rather than by comparing all pairs:

* **value** — one subject, different values ("the ledger DB is Engine 16" vs "… 15"): the
  value split of a subject group (see ``cluster``) already lines the sides up. Every side
  must be a *state assertion* (``is_state``): something linked to its value by a copula,
  "=", "runs on", "uses"…, with no event verb, status word, measurement, count or run id.
  "worker v1.4 deployed" then "worker v1.5 deployed" is a timeline, "CI run 1871 green" and
  "CI green on v2.3.1 (run 1863)" are two runs, "/var at 71%" and "/var at 64% again" are
  two readings: none of them contradicts the other. A version and a more precise one
  ("v1.4" and "v1.4.2") agree.
* **reversal** — "moved/switched/migrated from X to Y", "replaced X with Y", "no longer use
  X", "dropped X" against an earlier "use/decided on X" (or an approved claim saying so).
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
from .text import GENERIC, MARK, STOP, TOKEN_RE, WEAK, analyse, token_info, word_list

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
_NEGATED_BEFORE = re.compile(r"(?:\bnot|n't|\bnever|\bno longer|\bstop(?:ped)?|\bavoid)\s+$", re.I)
_NEG_RE = re.compile(
    r"\b(?i:do not|don't|does not|doesn't|must not|mustn't|should not|shouldn't|never|won't"
    r"|will not|cannot|can't|not)\s+(?i:use|using|adopt|rely on)\s+"
    + _OBJ.format(g="x")
    + _SCOPE.format()
)
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
    (
        re.compile(
            r"\b(?i:dropped|ditched|abandoned|retired)\s+" + _OBJ.format(g="x") + _SCOPE.format()
        ),
        ("dropped", "ditched", "abandoned", "retired"),
    ),
]
# Substring checks before any regex: most sentences state no decision.
_NEG_CUES = ("not", "n't", "never", "cannot")
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
    "dropped",
    "ditched",
    "abandoned",
    "retired",
)

EVENT_WORDS = frozenset(
    word_list(
        """
    deployed deploy deploying released release releasing upgraded upgrade upgrading bumped
    bump rolled rollout installed merged tagged shipped built published pushed restarted
    scaled took ran started failed reached hit spiked increased decreased grew migrated
    """
    )
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
    negated = any(c in low for c in _NEG_CUES)
    for m in _NEG_RE.finditer(sentence) if negated else ():
        if any(lo <= m.start() < hi for lo, hi in taken):
            continue
        x = _object(m.group("x"))
        if x:
            scope, scope_text = _scope(m, {x[0]})
            out.append(Statement("neg", x[0], x[1], scope, scope_text))
            taken.append(m.span())
    has_use = any(c in low for c in _USE_CUES)
    for m in _USE_RE.finditer(sentence) if has_use else ():
        if any(lo <= m.start() < hi for lo, hi in taken):
            continue
        if _NEGATED_BEFORE.search(sentence[max(0, m.start() - 20) : m.start()]):
            continue
        x = _object(m.group("x"))
        if x:
            scope, scope_text = _scope(m, {x[0]})
            out.append(Statement("use", x[0], x[1], scope, scope_text))
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


def is_event(content: Sequence[str]) -> bool:
    """True when a sentence reports a change (deployed, upgraded…) rather than a state."""
    return any(t in EVENT_WORDS for t in content)


# How a state links its subject to a value. Without one of these a sentence with two
# numbers in it ("CI green on tag v2.3.1 (run 1863)") asserts nothing about either.
_STATE_WORDS = frozenset(
    word_list("is are was were = runs run running uses use lives hosted hosts listens serves")
    + word_list("points stores version")
)
_WORD_RE = re.compile(r"[a-z]+|=")
# Readings and counts change all the time; two of them are a series, not a contradiction.
_MEASURE_RE = re.compile(
    r"\d\s?(?:%|[kmgt]i?b\b|ms\b|s\b|secs?\b|mins?\b|minutes?\b|hours?\b|h\b|days?\b|k\b"
    r"|x\b|rows?\b|messages?\b|entries\b|runs\b)|\d{1,3}(?:,\d{3})+\b|~\s?\d",
    re.I,
)
# Ids of runs, builds, pull requests and tickets: each names one occurrence of something.
_ID_RE = re.compile(r"#\d+|\b(?:run|build|job|pr|issue|ticket|attempt)\s+#?\d+", re.I)
# A log line that opens with its clock time and a past-tense verb reports what happened
# ("08:20 disabled the flag", "11:30 Ann asked …", "14:00 PR #12 reviewed …").
_LOGGED_EVENT_RE = re.compile(r"^\d{1,2}:\d{2}\S*\s+(?:\S+\s+){0,2}?[a-z]*[a-df-z]ed\b")
STATUS_WORDS = frozenset(
    word_list(
        """
    green red passed passing failed failing flaky approved reviewed busy idle ready down stuck
    broken timed timeout ok okay pending queued
    """
    )
)
_NOT_STATE = EVENT_WORDS | STATUS_WORDS


def is_state(text: str, content: Sequence[str]) -> bool:
    """True when a sentence asserts a lasting state ("the ledger DB is Engine 16").

    Only states can contradict each other; events, status lines, readings and counts
    make timelines (see the module docstring). Cheapest tests first: most sentences in a
    busy log are events.
    """
    if not _NOT_STATE.isdisjoint(content) or _LOGGED_EVENT_RE.match(text):
        return False
    if _STATE_WORDS.isdisjoint(_WORD_RE.findall(text.lower())):
        return False
    return not (_MEASURE_RE.search(text) or _ID_RE.search(text))


def _compatible(a: str, b: str) -> bool:
    # "1.4" and "1.4.2" name the same release line at two precisions.
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def values_clash(a: frozenset[str], b: frozenset[str]) -> bool:
    """True when no value of one agrees with a value of the other."""
    return not any(_compatible(x, y) for x in a for y in b)


def value_conflict(
    partitions: Sequence[list[int]],
    part_values: Sequence[frozenset[str]],
    part_state: Sequence[bool],
    part_has_episodes: Sequence[bool],
    unit_claim: Sequence[int | None],
    subject: str,
    max_sides: int = 5,
) -> Found | None:
    """Return a value conflict for one subject group's value partitions, or None.

    Only partitions that assert a state take part, and two of them must clash.
    """
    idx = [i for i, v in enumerate(part_values) if v and part_state[i]]
    if len(idx) < 2:
        return None
    clash = any(
        values_clash(part_values[a], part_values[b])
        for n, a in enumerate(idx)
        for b in idx[n + 1 :]
    )
    if not clash or not any(part_has_episodes[i] for i in idx):
        return None
    # Claims first (they are what a reviewer must weigh against), then the largest sides.
    idx.sort(key=lambda i: (claim_of(partitions[i], unit_claim) is None, -len(partitions[i]), i))
    chosen = sorted(idx[:max_sides])
    sides: list[list[int]] = []
    for i in chosen:
        sides.extend(split_claims(partitions[i], unit_claim))
    return Found("value", subject, sides, [claim_of(s, unit_claim) for s in sides])


def conflict_key(kind: str, subject: str, side_keys: Sequence[str]) -> str:
    """Return a stable, content-derived dedupe key for a conflict."""
    raw = "\x1f".join([kind, subject.lower(), *sorted(side_keys)])
    return "conflict:" + hashlib.blake2b(raw.encode(), digest_size=12).hexdigest()
