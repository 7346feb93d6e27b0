"""One dream sweep: Light (dedupe, cluster) → REM (themes, lifecycle, conflicts) → Deep.

``run_sweep`` is a pure function of its arguments: it reads plain dataclasses, writes
nothing, and returns the same ``SweepResult`` for the same input (every collection is
sorted before it is iterated; hashing is keyed, never Python's salted ``hash``). ``now``
defaults to the newest episode's time rather than the wall clock for the same reason.

Units of work
-------------
* **episode** — what the service stores; exact duplicates (same normalised text) and near
  duplicates (MinHash, identity-guarded) are folded into one group whose members all stay
  evidence.
* **unit** — one distinct sentence of a group's representative (identical sentences in
  different episodes are one unit with all their episodes), or one sentence of an approved
  claim. Claims are clustered with the new material, which is how "seen again" and
  "contradicts what was approved" are found without comparing against every claim.
* **fact cluster** — units with the same subject, identity and value; one candidate each.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime

import numpy as np

from . import conflicts as conf
from .cluster import core_terms, core_terms_multi, split_by_value, subject_groups
from .consolidate import REDACTION_MARK, Choice, choose, snippet, text_key
from .dedupe import Identity, TokenHasher, exact_groups, near_duplicate_groups
from .policy import Policy
from .reflect import BROAD, Event, TopicIndex, TopicState, combine, find_marker, fold, term_themes
from .route import route
from .score import EvidenceView, recall_for, signals, weighted
from .text import (
    _EMPTY,
    DECIDE_CUE,
    LIFE_CUE,
    Features,
    analyse,
    blocks,
    display_text,
    intern_set,
    junk_reason,
    sentences,
    trim_snippet,
)
from .types import (
    TERMINAL_LIFECYCLES,
    ApprovedClaim,
    CandidateDraft,
    ConflictDraft,
    ConflictSide,
    Ep,
    Evidence,
    RecallStats,
    SetAside,
    SweepResult,
    Theme,
)

_MAX_SENTENCES_PER_EPISODE = 40  # a pasted page must not dominate a sweep's cost
_MAX_CONTRADICT_IDS = 50


@dataclass(slots=True)
class _Units:
    """Column store of sentence units (lists, not objects: there are hundreds of thousands)."""

    text: list[str] = field(default_factory=list)
    feat: list[Features] = field(default_factory=list)
    eps: list[list[int]] = field(default_factory=list)
    claim: list[int | None] = field(default_factory=list)
    junk: list[str | None] = field(default_factory=list)
    checkbox: list[str | None] = field(default_factory=list)

    def add(self, text: str, feat: Features, claim: int | None, junk: str | None, box) -> int:
        self.text.append(text)
        self.feat.append(feat)
        self.eps.append([])
        self.claim.append(claim)
        self.junk.append(junk)
        self.checkbox.append(box)
        return len(self.text) - 1


@dataclass(slots=True)
class _Cluster:
    units: list[int]
    group: int
    support: list[int] = field(default_factory=list)  # episode indices
    contradict: list[int] = field(default_factory=list)
    conflicts: list[int] = field(default_factory=list)
    contested: str | None = None
    values: frozenset[str] = frozenset()
    claim_opposed: bool = False  # an approved claim in this cluster is on the other side


def run_sweep(
    episodes: Iterable[Ep],
    *,
    approved_claims: Iterable[ApprovedClaim] = (),
    recall: dict[int, RecallStats] | None = None,
    policy: Policy | None = None,
    now: datetime | None = None,
    live_episode_ids: set[int] | None = None,
) -> SweepResult:
    """Consolidate a batch of episodes into candidates, conflicts and reinforcements."""
    policy = policy or Policy()
    recall = recall or {}
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def tick(phase: str) -> None:
        nonlocal clock
        t = time.perf_counter()
        timings[phase] = round(t - clock, 4)
        clock = t

    eps = sorted(episodes, key=lambda e: (e.occurred_at, e.id))
    ids = [e.id for e in eps]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in Counter(ids).items() if c > 1)
        raise ValueError(f"episode id {dup} appears more than once in the sweep input")
    claims = sorted(approved_claims, key=lambda c: c.id)
    if now is None:
        now = eps[-1].occurred_at if eps else datetime.now(UTC)
    n = len(eps)
    ep_day = [e.occurred_at.date().toordinal() for e in eps]
    counts: Counter[str] = Counter(episodes_in=n, claims_in=len(claims))
    aside: dict[int, str] = {}  # episode index -> reason it stays episodic (pre-decided)

    # ---- Light: normalise and split ------------------------------------------------------
    keys: list[str] = []
    for i, e in enumerate(eps):
        if e.memory_type == "handoff-only":
            aside[i] = "handoff-only"
            keys.append("\x00handoff\x00" + str(e.id))
            continue
        # Whitespace and case only: cheap, and anything subtler (a different timestamp
        # prefix, a bullet) is the near-duplicate pass's job.
        key = " ".join(e.content.lower().split())
        if not key:
            aside[i] = "junk:empty"
            keys.append("\x00empty\x00" + str(e.id))
            continue
        keys.append(key)
    counts["handoff_only"] = sum(1 for r in aside.values() if r == "handoff-only")
    live_idx = [i for i in range(n) if i not in aside]

    def rep_order(i: int) -> tuple[float, int]:
        return (-eps[i].source_trust, i)  # most trusted, then earliest, represents a group

    exact = exact_groups([keys[i] for i in live_idx])
    exact = [sorted((live_idx[j] for j in g), key=rep_order) for g in exact]
    exact.sort(key=lambda g: g[0])
    ep_exact = [-1] * n
    for gi, g in enumerate(exact):
        for i in g:
            ep_exact[i] = gi
    counts["exact_duplicates"] = sum(len(g) - 1 for g in exact)
    del keys  # the normalised texts are the largest transient of the sweep

    sent_cache: dict[str, Features] = {}
    rep_sents: list[list[tuple[str, str, str | None, bool]]] = []
    rep_feat: list[Features] = []
    for g in exact:
        rows = []
        feats: list[Features] = []
        for b in blocks(eps[g[0]].content):
            parts = [b.text] if b.heading else sentences(b.text)
            for s in parts:
                skey = s  # blocks already collapsed line breaks; exact text is the key
                f = sent_cache.get(skey)
                if f is None:
                    f = sent_cache[skey] = analyse(s)
                rows.append((skey, s, b.checkbox, b.heading))
                feats.append(f)
                if len(rows) >= _MAX_SENTENCES_PER_EPISODE:
                    break
            if len(rows) >= _MAX_SENTENCES_PER_EPISODE:
                break
        rep_sents.append(rows)
        rep_feat.append(feats[0] if len(feats) == 1 else _aggregate(feats))
    tick("light.normalise")

    # ---- Light: near-duplicates ------------------------------------------------------------
    hasher = TokenHasher()
    near = near_duplicate_groups(
        [f.content for f in rep_feat], rep_feat, policy.near_dup_jaccard, hasher
    )
    groups: list[list[int]] = []  # final groups: episode indices, representative first
    group_rep_exact: list[int] = []
    ep_group = [-1] * n
    for ng in near:
        members = sorted((i for gi in ng for i in exact[gi]), key=rep_order)
        lead = min(ng, key=lambda gi: rep_order(exact[gi][0]))
        gidx = len(groups)
        groups.append(members)
        group_rep_exact.append(lead)
        for i in members:
            ep_group[i] = gidx
    counts["near_duplicates"] = sum(len(ng) - 1 for ng in near)
    duplicates_folded = counts["exact_duplicates"] + counts["near_duplicates"]
    tick("light.dedupe")

    # ---- Light: sentence units --------------------------------------------------------------
    U = _Units()
    unit_of: dict[str, int] = {}
    group_units: list[list[int]] = []
    for gidx, members in enumerate(groups):
        mine: list[int] = []
        for skey, s, box, heading in rep_sents[group_rep_exact[gidx]]:
            u = unit_of.get(skey) if not heading else None
            if u is None:
                f = sent_cache[skey]
                u = U.add(s, f, None, junk_reason(s, f, heading), box)
                if not heading:
                    unit_of[skey] = u
            if u not in mine:
                U.eps[u].extend(members)
                mine.append(u)
        group_units.append(mine)
    for c in claims:
        for b in blocks(c.text):
            for s in sentences(b.text):
                f = analyse(s)
                if f.subject:
                    U.add(s, f, c.id, None, None)
    n_units = len(U.text)
    for u in range(n_units):
        if len(U.eps[u]) > 1:
            U.eps[u] = sorted(set(U.eps[u]))
    del rep_sents, rep_feat, sent_cache  # units hold what is still needed
    counts["sentences"] = n_units
    counts["junk_sentences"] = sum(1 for j in U.junk if j)
    # Episode indices follow time order, so a unit's sorted episode list starts at its
    # first occurrence and ends at its last.
    u_first: list[datetime | None] = [eps[x[0]].occurred_at if x else None for x in U.eps]
    u_last: list[datetime | None] = [eps[x[-1]].occurred_at if x else None for x in U.eps]
    ep_trust = [e.source_trust for e in eps]
    u_trust = [max(map(ep_trust.__getitem__, x)) if x else 1.0 for x in U.eps]
    u_weight = [len(x) for x in U.eps]
    tick("light.units")

    # ---- Light: cluster ---------------------------------------------------------------------
    identity = Identity.of(U.feat, hasher)
    active = [u for u in range(n_units) if not U.junk[u] and U.feat[u].subject]
    act = np.asarray(active, dtype=np.int64)
    sg = subject_groups(
        [U.feat[u] for u in active],
        policy.cluster_jaccard,
        hasher,
        identity.take(act),
    )
    clusters: list[_Cluster] = []
    group_parts: list[list[int]] = []  # subject group -> cluster indices
    for gi, members in enumerate(sg):
        unit_ids = [active[m] for m in members]
        parts = split_by_value(unit_ids, U.feat)
        idxs = []
        for values, p in parts:
            idxs.append(len(clusters))
            clusters.append(_Cluster(units=p, group=gi, values=values))
        group_parts.append(idxs)
    unit_cluster = [-1] * n_units
    for ci, c in enumerate(clusters):
        for u in c.units:
            unit_cluster[u] = ci
    counts["subjects"] = len(sg)
    counts["clusters"] = len(clusters)
    tick("light.cluster")

    # ---- REM: lifecycle -------------------------------------------------------------------------
    cores = [core_terms_multi(c.units, U.feat, (0.5, 1 / 3)) for c in clusters]
    core_half = [c[0] for c in cores]
    core_third = [c[1] for c in cores]
    del cores
    events: list[Event] = []
    for u in range(n_units):
        if not U.eps[u] or not (U.feat[u].cues & LIFE_CUE or U.checkbox[u]):
            continue
        marker = find_marker(U.text[u], U.checkbox[u])
        if marker is None:
            continue
        last_i = max(U.eps[u], key=lambda i: (eps[i].occurred_at, eps[i].id))
        events.append(Event(marker, eps[last_i].occurred_at, eps[last_i].id, u, U.feat[u]))
    counts["lifecycle_markers"] = len(events)
    # Events sharing a topic are folded once; a marker with no topic terms ("Done.")
    # speaks only for the cluster its own sentence landed in.
    topics: dict[object, list[Event]] = {}
    for ev in events:
        topics.setdefault(ev.marker.topic or ("own", ev.unit), []).append(ev)
    topic_terms = {t for key in topics if isinstance(key, frozenset) for t in key}
    tindex = TopicIndex(core_third, topic_terms)
    g_host, g_env = identity.hosts.tolist(), identity.envs.tolist()
    applies: dict[int, list[TopicState]] = {}
    for key, evs in topics.items():
        state = fold(evs)
        own = {unit_cluster[e.unit] for e in evs if unit_cluster[e.unit] >= 0}
        targets = set(own)
        if isinstance(key, frozenset):
            # The topic terms already pin the subject; the guard only has to stop a marker
            # about one host or environment landing on another (cheap integer checks).
            eh, ee = g_host[evs[0].unit], g_env[evs[0].unit]
            matched = tindex.clusters_for(key)
            if matched is None or len(matched) > BROAD:
                counts["lifecycle_topics_too_broad"] += 1
                matched = set()
            for ci in sorted(matched):
                if ci in own:
                    continue
                ch, ce = g_host[clusters[ci].units[0]], g_env[clusters[ci].units[0]]
                if (not eh or not ch or eh == ch) and (not ee or not ce or ee == ce):
                    targets.add(ci)
        for ci in targets:
            applies.setdefault(ci, []).append(state)
    lifecycles: list[tuple[str, Event | None]] = [
        combine(applies[ci], now) if ci in applies else ("active", None)
        for ci in range(len(clusters))
    ]
    tick("rem.lifecycle")

    # ---- REM: conflicts -------------------------------------------------------------------------
    found_conflicts: list[conf.Found] = []
    stmts: list[tuple[int, conf.Statement]] = []
    for u in range(n_units):
        if (U.junk[u] and U.claim[u] is None) or not U.feat[u].cues & DECIDE_CUE:
            continue
        for st in conf.statements(U.text[u]):
            stmts.append((u, st))
    found_conflicts.extend(conf.decision_conflicts(stmts, u_first, u_last, U.claim))
    for idxs in group_parts:
        if sum(1 for ci in idxs if clusters[ci].values) < 2:
            continue  # one value (or none): nothing to disagree about
        parts = [clusters[ci].units for ci in idxs]
        values = [clusters[ci].values for ci in idxs]
        state = [
            sum(1 for u in p[:50] if not conf.is_event(U.feat[u].content)) * 2 > len(p[:50])
            for p in parts
        ]
        has_eps = [any(U.eps[u] for u in p) for p in parts]
        fc = conf.value_conflict(parts, values, state, has_eps, U.claim, "")
        if fc:
            members = [u for p in parts for u in p]
            fc.subject = _label(core_terms(members, U.feat, 0.5), U, parts)
            found_conflicts.append(fc)
    conflict_drafts: list[ConflictDraft] = []
    for k, fc in enumerate(found_conflicts):
        sides = []
        for side, claim_id in zip(fc.sides, fc.claims, strict=True):
            rep = min(side, key=lambda u: (U.junk[u] is not None, -u_weight[u], u))
            side_eps = sorted({eps[i].id for u in side for i in U.eps[u]})
            sides.append(ConflictSide(snippet_text(U.text[rep], policy), tuple(side_eps), claim_id))
        side_keys = [s.text if s.claim_id is None else f"claim:{s.claim_id}" for s in sides]
        key = conf.conflict_key(fc.kind, fc.subject, side_keys)
        conflict_drafts.append(ConflictDraft(fc.subject, fc.kind, sides, key))
        # Tell every cluster on one side which episodes contradict it.
        side_clusters = [
            {unit_cluster[u] for u in side if unit_cluster[u] >= 0} for side in fc.sides
        ]
        side_time = [max((u_last[u] for u in side if u_last[u]), default=None) for side in fc.sides]
        touched = sorted(set().union(*side_clusters))
        for ci in touched:
            mine = [s for s, cl in enumerate(side_clusters) if ci in cl]
            own = max(mine, key=lambda s: (side_time[s] or datetime.min.replace(tzinfo=UTC), s))
            c = clusters[ci]
            c.conflicts.append(k)
            c.contested = c.contested if c.contested in ("value", "negation") else fc.kind
            for s, side in enumerate(fc.sides):
                if s == own:
                    continue
                for u in side:
                    c.contradict.extend(U.eps[u])
                    if U.claim[u] is not None and unit_cluster[u] == ci:
                        c.claim_opposed = True
    counts["conflicts"] = len(conflict_drafts)
    for kind in ("value", "reversal", "negation"):
        counts[f"conflicts_{kind}"] = sum(1 for d in conflict_drafts if d.kind == kind)
    tick("rem.conflicts")

    # ---- REM: themes -------------------------------------------------------------------
    flagged = [bool(e.risk_flags) for e in eps]
    theme_units = [
        u
        for u in range(n_units)
        if U.eps[u] and not U.junk[u] and not any(map(flagged.__getitem__, U.eps[u]))
    ]
    themes: list[Theme] = []
    subject_themes = []
    for ci, c in enumerate(clusters):
        eps_c = {i for u in c.units for i in U.eps[u]}
        if not eps_c or any(map(flagged.__getitem__, eps_c)):
            continue
        days = len({ep_day[i] for i in eps_c})
        if days >= policy.theme_min_days:
            subject_themes.append((days, len(eps_c), _label(core_half[ci], U, [c.units])))
    subject_themes.sort(key=lambda t: (-t[0], -t[1], t[2]))
    themes.extend(Theme(lbl, "subject", d, m) for d, m, lbl in subject_themes[: policy.max_themes])
    room = policy.max_themes - len(themes)
    if room > 0:
        themes.extend(
            term_themes(
                [tuple(U.feat[u].subject) for u in theme_units],
                [sorted({ep_day[i] for i in U.eps[u]}) for u in theme_units],
                [len(U.eps[u]) for u in theme_units],
                policy.theme_min_days,
                room,
            )
        )
    tick("rem.themes")

    # ---- Deep: score, gate, route --------------------------------------------------------
    reinforced: dict[int, set[int]] = {}
    cluster_reason: dict[int, str] = {}
    passing: list[_Passing] = []
    for ci, c in enumerate(clusters):
        contradict = set(c.contradict)
        support = sorted({i for u in c.units for i in U.eps[u]} - contradict)
        if not support:
            continue
        claim_units = [u for u in c.units if U.claim[u] is not None]
        if claim_units and not c.claim_opposed:
            best = max(
                claim_units,
                key=lambda u: (_jac(U.feat[u].subject, core_half[ci]), -(U.claim[u] or 0)),
            )
            reinforced.setdefault(U.claim[best], set()).update(eps[i].id for i in support)
            cluster_reason[ci] = "reinforced"
            continue
        state, decided = lifecycles[ci]
        if state in TERMINAL_LIFECYCLES and not (decided and unit_cluster[decided.unit] == ci):
            cluster_reason[ci] = f"lifecycle:{state}"
            continue
        # The count gates are cheap and reject most clusters; text choice and scoring only
        # run for what is left.
        reason = _gate(support, eps, ep_day, policy)
        if reason:
            cluster_reason[ci] = reason
            continue
        text_units = [u for u in c.units if U.eps[u] and set(U.eps[u]) - contradict]
        choice = choose(
            text_units,
            U.text,
            U.feat,
            U.junk,
            u_trust,
            u_weight,
            core_half[ci],
            policy.snippet_max_chars,
        )
        if choice.unit is None:
            redacted = "redacted" in (choice.reason or "")
            cluster_reason[ci] = "secret_redacted" if redacted else "junk:fragments"
            continue
        verdict = _evaluate(support, choice.unit, U, eps, ep_day, ep_exact, recall, policy, now)
        if verdict[0] is not None:
            cluster_reason[ci] = verdict[0]
            continue
        if live_episode_ids is not None:
            live_support = [i for i in support if eps[i].id in live_episode_ids]
            rep_live = any(eps[i].id in live_episode_ids for i in U.eps[choice.unit])
            if len(live_support) < len(support):
                counts["rehydrate_pruned_evidence"] += len(support) - len(live_support)
            if not rep_live or not live_support:
                counts["rehydrate_dropped"] += 1
                cluster_reason[ci] = "rehydrate:evidence_gone"
                continue
            if len(live_support) < len(support):
                support = live_support
                verdict = _evaluate(
                    support, choice.unit, U, eps, ep_day, ep_exact, recall, policy, now
                )
                if verdict[0] is not None:
                    counts["rehydrate_dropped"] += 1
                    cluster_reason[ci] = "rehydrate:" + verdict[0]
                    continue
            contradict = {i for i in contradict if eps[i].id in live_episode_ids}
        _, score, sig = verdict
        flags = tuple(sorted({f for i in support for f in eps[i].risk_flags}))
        passing.append(
            _Passing(
                score, ci, choice, support, contradict, state, sig, flags, text_key(choice.text)
            )
        )
    tick("deep.score")

    # Riskiest first (a human must see those), then strongest; identical texts from two
    # clusters keep the stronger one. Only what the cap can show is turned into drafts.
    passing.sort(key=lambda p: (not p.flags, -p.score, p.key))
    seen: set[str] = set()
    keep: list[_Passing] = []
    for p in passing:
        if p.key in seen:
            cluster_reason[p.ci] = "merged_duplicate_text"
            continue
        seen.add(p.key)
        keep.append(p)
    limit = policy.max_proposals + policy.max_deferred
    for p in keep[limit:]:
        cluster_reason[p.ci] = "deferred_not_returned"
    counts["deferred_not_returned"] = max(len(keep) - limit, 0)
    drafts = [
        _draft(p, clusters[p.ci], U, eps, policy, core_half, conflict_drafts) for p in keep[:limit]
    ]
    for p in keep[:limit]:
        cluster_reason[p.ci] = "candidate"
    candidates = _cap(drafts, policy, counts)
    counts["deferred_over_cap"] += counts["deferred_not_returned"]
    tick("deep.cap")

    # ---- Settle: what stays episodic, counts, diary ----------------------------------------------
    in_candidate: set[int] = set()
    for d in candidates:
        in_candidate.update(ev.episode_id for ev in d.evidence if ev.role == "support")
    reinforced_out = {cid: sorted(v) for cid, v in sorted(reinforced.items())}
    in_reinforced = {i for v in reinforced_out.values() for i in v}
    reason_rank = {
        "candidate": 0,
        "reinforced": 0,
        "below_min_score": 1,
        "too_few_days": 2,
        "too_few_contexts": 3,
        "too_few_evidence": 4,
        "rehydrate:evidence_gone": 5,
        "secret_redacted": 7,
    }
    by_reason: dict[str, list[int]] = {}
    for i in range(n):
        eid = eps[i].id
        if eid in in_candidate or eid in in_reinforced:
            continue
        reason = aside.get(i)
        if reason is None:
            best: tuple[int, str] | None = None
            gidx = ep_group[i]
            for u in group_units[gidx] if gidx >= 0 else ():
                ci = unit_cluster[u]
                if ci < 0:
                    r = f"junk:{U.junk[u]}" if U.junk[u] else "junk:no_content"
                else:
                    r = cluster_reason.get(ci, "too_few_evidence")
                    if r in ("candidate", "reinforced"):
                        contra = i in set(clusters[ci].contradict)
                        r = "contradicted" if contra else "deferred_merge"
                rank = reason_rank.get(r, 6 if r.startswith("lifecycle") else 8)
                if best is None or (rank, r) < best:
                    best = (rank, r)
            reason = best[1] if best else "junk:no_content"
        by_reason.setdefault(reason, []).append(eid)
    stays = [
        SetAside(r, len(v), tuple(sorted(v)[: policy.sample_ids]))
        for r, v in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]
    for d in candidates:
        counts[d.status] += 1
    counts["reinforced_claims"] = len(reinforced_out)
    counts["reinforced_episodes"] = len(in_reinforced)
    counts["stays_episodic"] = sum(s.count for s in stays)
    counts["duplicates_folded"] = duplicates_folded
    for key in ("proposed", "deferred", "blocked", "rehydrate_dropped"):
        counts.setdefault(key, 0)
    counts.setdefault("rehydrate_pruned_evidence", 0)
    diary = _diary(eps, candidates, conflict_drafts, stays, themes, counts, policy)
    tick("settle")
    timings["total"] = round(sum(timings.values()), 4)
    return SweepResult(
        candidates=candidates,
        reinforced=reinforced_out,
        conflicts=conflict_drafts,
        duplicates_folded=duplicates_folded,
        stays_episodic=stays,
        counts=dict(sorted(counts.items())),
        themes=themes,
        diary=diary,
        timings=timings,
    )


def _aggregate(feats: Sequence[Features]) -> Features:
    """Combine sentence features into whole-episode features for the near-duplicate pass.

    Only what that pass reads is combined (content and identity); the subject union is
    left empty because episodes are never clustered by subject, sentences are.
    """
    content: list[str] = []
    words = 0
    stops = 0.0
    sets: list[set[str] | None] = [None] * 5
    for f in feats:
        content.extend(f.content)
        words += f.words
        stops += f.stop_ratio * f.words
        for k, part in enumerate((f.values, f.hosts, f.envs, f.idents, f.names)):
            if part:
                got = sets[k]
                if got is None:
                    sets[k] = set(part)
                else:
                    got |= part
    values, hosts, envs, idents, names = (intern_set(x) if x else _EMPTY for x in sets)
    return Features(
        words=words,
        content=tuple(content),
        subject=_EMPTY,
        values=values,
        hosts=hosts,
        envs=envs,
        idents=idents,
        names=names,
        stop_ratio=stops / words if words else 0.0,
    )


def _jac(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def snippet_text(text: str, policy: Policy) -> str:
    """Return the grounded display form of a sentence, trimmed to the policy's limit."""
    return trim_snippet(display_text(text), policy.snippet_max_chars)


def _label(core: set[str], U: _Units, parts: Sequence[Sequence[int]]) -> str:
    # Order core terms by how many sentences use them, so the label leads with the subject.
    freq: Counter[str] = Counter()
    for p in parts:
        for u in p[:50]:  # the first sentences are representative enough for a label
            freq.update(t for t in U.feat[u].subject if t in core)
    ranked = sorted(core, key=lambda t: (-freq[t], t))
    return " ".join(ranked[:4]) if ranked else "(unnamed subject)"


def _evaluate(
    support: list[int],
    rep_unit: int,
    U: _Units,
    eps: Sequence[Ep],
    ep_day: Sequence[int],
    ep_exact: Sequence[int],
    recall: dict[int, RecallStats],
    policy: Policy,
    now: datetime,
) -> tuple[str | None, float, dict[str, float]]:
    """Gate and score one cluster's support; return (reason it fails | None, score, signals)."""
    if len(support) < policy.min_evidence:
        return "too_few_evidence", 0.0, {}
    days = {ep_day[i] for i in support}
    if len(days) < policy.min_distinct_days:
        return "too_few_days", 0.0, {}
    contexts = len({eps[i].source_id for i in support})
    if contexts < policy.min_distinct_contexts:
        return "too_few_contexts", 0.0, {}
    # Same content pasted twice on one day is one occurrence, not two: repeated filler
    # scoring like a durable fact was an OpenClaw complaint.
    occurrences = len({(ep_exact[i], ep_day[i]) for i in support})
    f = U.feat[rep_unit]
    view = EvidenceView(
        n_support=occurrences,
        days=len(days),
        newest=max(eps[i].occurred_at for i in support),
        trust=[eps[i].source_trust for i in support],
        recall=recall_for((eps[i].id for i in support), recall),
        key_terms=len(f.subject | f.values),
    )
    raw = signals(view, now, policy)
    score, breakdown = weighted(raw, policy)
    breakdown["evidence"] = float(len(support))
    breakdown["occurrences"] = float(occurrences)
    breakdown["days"] = float(len(days))
    breakdown["contexts"] = float(contexts)
    if score < policy.min_score:
        return "below_min_score", score, breakdown
    return None, score, breakdown


@dataclass(slots=True)
class _Passing:
    score: float
    ci: int
    choice: Choice
    support: list[int]
    contradict: set[int]
    lifecycle: str
    signals: dict[str, float]
    flags: tuple[str, ...]
    key: str


def _gate(
    support: list[int], eps: Sequence[Ep], ep_day: Sequence[int], policy: Policy
) -> str | None:
    """Apply the count gates (evidence, days, contexts); return the failing one or None."""
    if len(support) < policy.min_evidence:
        return "too_few_evidence"
    if (
        policy.min_distinct_days > 1
        and len({ep_day[i] for i in support}) < policy.min_distinct_days
    ):
        return "too_few_days"
    if (
        policy.min_distinct_contexts > 1
        and len({eps[i].source_id for i in support}) < policy.min_distinct_contexts
    ):
        return "too_few_contexts"
    return None


def _draft(
    p: _Passing,
    c: _Cluster,
    U: _Units,
    eps: Sequence[Ep],
    policy: Policy,
    core_half: list[set[str]],
    conflict_drafts: list[ConflictDraft],
) -> CandidateDraft:
    support = p.support
    newest = max(eps[i].occurred_at for i in support)
    procedural = sum(1 for i in support if eps[i].memory_type == "procedural-candidate")
    label = _label(core_half[p.ci], U, [c.units])
    r = route(
        p.choice.text,
        contested=c.contested,
        procedural_votes=procedural / len(support),
        subject_label=label,
        day_label=newest.date().isoformat(),
    )
    decisions = sum(1 for i in support if eps[i].kind == "decision")
    if r.page == "SYSTEM_OVERVIEW" and decisions * 2 > len(support):
        r = type(r)("DECISION_LOG", newest.date().isoformat(), "decision: episode kind 'decision'")
    status, blocked = "proposed", None
    hit = [f for f in p.flags if _blocked_by(f, policy.block_flags)]
    if hit:
        status, blocked = "blocked", f"evidence flag {hit[0]} is blocked by the project policy"
    elif p.lifecycle == "snoozed":
        status = "deferred"
    f = U.feat[p.choice.unit]
    subject_terms = sorted(core_half[p.ci] | set(f.values))
    evidence = [Evidence(eps[i].id, "support") for i in support]
    contra_ids = sorted({eps[i].id for i in p.contradict})[:_MAX_CONTRADICT_IDS]
    evidence.extend(Evidence(i, "contradict") for i in contra_ids)
    return CandidateDraft(
        text=p.choice.text,
        page_target=r.page,
        section=r.section,
        route_reason=r.reason,
        memory_type="procedural-candidate" if r.page == "RUNBOOKS" else "semantic-candidate",
        score=p.score,
        signals=p.signals,
        evidence=evidence,
        lifecycle=p.lifecycle,
        flags=p.flags,
        dedupe_key=p.key,
        subject_key="|".join(subject_terms[:8]),
        status=status,
        blocked_reason=blocked,
        conflict_keys=tuple(sorted(conflict_drafts[k].dedupe_key for k in set(c.conflicts))),
    )


def _blocked_by(flag: str, rules: Sequence[str]) -> bool:
    return any(flag == r or (r.endswith(":") and flag.startswith(r)) for r in rules)


def _cap(
    drafts: list[CandidateDraft], policy: Policy, counts: Counter[str]
) -> list[CandidateDraft]:
    """Keep ``max_proposals`` proposals, riskiest then strongest first; defer the rest."""
    drafts.sort(key=lambda d: (not d.flags, -d.score, d.dedupe_key))
    out: list[CandidateDraft] = []
    kept = 0
    for d in drafts:
        if d.status == "proposed":
            if kept < policy.max_proposals:
                kept += 1
            else:
                d = replace(d, status="deferred")
                counts["deferred_over_cap"] += 1
        elif d.status == "deferred":
            counts["deferred_snoozed"] += 1
        out.append(d)
    order = {"proposed": 0, "deferred": 1, "blocked": 2}
    out.sort(key=lambda d: (order[d.status], not d.flags, -d.score, d.dedupe_key))
    return out


def _diary(
    eps: Sequence[Ep],
    candidates: list[CandidateDraft],
    conflicts: list[ConflictDraft],
    stays: list[SetAside],
    themes: list[Theme],
    counts: Counter[str],
    policy: Policy,
) -> str:
    """Write the human-readable summary; quote only short, unflagged, grounded snippets."""
    if not eps:
        return "Nothing to read: the sweep was empty, so nothing was proposed or set aside."
    first: date = eps[0].occurred_at.date()
    last: date = eps[-1].occurred_at.date()
    sources = len({e.source_id for e in eps})
    parts = [
        f"Read {len(eps)} episode{'s' * (len(eps) != 1)} from {first} to {last} "
        f"({sources} source{'s' * (sources != 1)})."
    ]
    if counts["duplicates_folded"]:
        parts.append(
            f"Folded {counts['duplicates_folded']} duplicates into the episodes they repeat."
        )
    parts.append(
        f"Grouped {counts['sentences'] - counts['junk_sentences']} usable sentences into "
        f"{counts['clusters']} facts on {counts['subjects']} subjects."
    )
    proposed = [d for d in candidates if d.status == "proposed"]
    line = f"Proposed {len(proposed)} candidate{'s' * (len(proposed) != 1)} for review"
    if counts["deferred_over_cap"]:
        line += f"; deferred {counts['deferred_over_cap']} over the cap of {policy.max_proposals}"
    if counts["deferred_snoozed"]:
        line += f"; deferred {counts['deferred_snoozed']} snoozed"
    blocked = [d for d in candidates if d.status == "blocked"]
    if blocked:
        line += f"; blocked {len(blocked)} ({blocked[0].blocked_reason})"
    parts.append(line + ".")
    quotable = [d for d in proposed if not d.flags and REDACTION_MARK not in d.text][:3]
    if quotable:
        parts.append(
            "Strongest: "
            + "; ".join(
                f"{snippet(d.text)} → {d.page_target} "
                f"({int(d.signals.get('evidence', 0))} episodes over "
                f"{int(d.signals.get('days', 0))} days, score {d.score:.2f})"
                for d in quotable
            )
            + "."
        )
    if counts["reinforced_claims"]:
        parts.append(
            f"Reinforced {counts['reinforced_claims']} approved claim"
            f"{'s' * (counts['reinforced_claims'] != 1)} with {counts['reinforced_episodes']} "
            "episodes instead of proposing them again."
        )
    if conflicts:
        kinds = Counter(c.kind for c in conflicts)
        flagged = {e.id for e in eps if e.risk_flags}
        subjects = [
            c.subject
            for c in conflicts[:3]
            if not any(i in flagged for side in c.sides for i in side.episode_ids)
        ]
        line = (
            f"Recorded {len(conflicts)} conflict{'s' * (len(conflicts) != 1)} ("
            + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
            + ")"
        )
        if subjects:
            line += ": " + "; ".join(snippet(s, 60) for s in subjects)
        parts.append(line + ".")
    if counts["rehydrate_dropped"]:
        parts.append(
            f"Dropped {counts['rehydrate_dropped']} candidates whose evidence is no longer live."
        )
    if stays:
        total = sum(s.count for s in stays)
        top = ", ".join(f"{s.count} {_reason_words(s.reason)}" for s in stays[:5])
        parts.append(f"Left {total} episodes episodic: {top}.")
    if themes:
        parts.append(
            "Recurring: " + ", ".join(f"{t.label} ({t.days} days)" for t in themes[:5]) + "."
        )
    return " ".join(parts)


_REASON_WORDS = {
    "below_min_score": "below the minimum score",
    "too_few_evidence": "with too little evidence",
    "too_few_days": "seen on too few days",
    "too_few_contexts": "from too few sources",
    "handoff-only": "marked handoff-only",
    "secret_redacted": "carrying only redacted secrets",
    "contradicted": "contradicted by newer material",
    "deferred_merge": "merged into a stronger candidate",
    "rehydrate:evidence_gone": "no longer live",
}


def _reason_words(reason: str) -> str:
    if reason in _REASON_WORDS:
        return _REASON_WORDS[reason]
    if reason.startswith("junk:"):
        return f"junk ({reason[5:].replace('_', ' ')})"
    if reason.startswith("lifecycle:"):
        return f"about {reason[10:]} work"
    return reason.replace("_", " ")
