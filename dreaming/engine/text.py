"""Cheap text analysis: tokens, their classes, key terms and entities.

Splitting episodes into blocks and sentences is in ``blocks``; judging a sentence as a
claim (junk, standalone, dated, display form) is in ``wording``.

Everything here runs once per sentence of every episode in a sweep, so it is built around
one regex pass per sentence and a memo of per-token classification (a corpus has far fewer
distinct tokens than token occurrences).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llmwiki.vocabulary import DECIDE_CUES, LIFE_CUES, NEGATIONS


def word_list(text: str) -> list[str]:
    """Split a whitespace-separated word list (kept as prose so it stays readable)."""
    return text.split()


# Token flags (bits). A token can carry several.
STOP = 1  # function word
WEAK = 2  # filler or light verb: never part of a subject
NUM = 4  # number or version: a value, not a subject
DATE = 8  # calendar date: too noisy to identify anything
HOST = 16  # hostname, IP, domain
ENV = 32  # deployment environment
IDENT = 64  # snake_case, hyphenated compound, file name, quoted code
CAP = 128  # Capitalised word: a name unless it opens the sentence
NAMEY = 256  # CamelCase, ACRONYM or @handle: a name wherever it stands
MARK = 512  # lifecycle / decision marker word
GENERIC = 1024  # generic noun: never a name even when capitalised
SHORT = 2048  # a single letter: too short to be a key term
LIFE_CUE = 4096  # may start a lifecycle marker (see LIFE_CUES)
DECIDE_CUE = 8192  # may start a decision statement (see DECIDE_CUES)
NEG_CUE = 16384  # a negation ("not", "never", "don't"): flips what a sentence claims
CUE = LIFE_CUE | DECIDE_CUE

NOT_SUBJECT = STOP | WEAK | NUM | DATE | MARK | SHORT

STOPWORDS = frozenset(
    word_list(
        """
    a about above after against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he's her here hers herself him himself his how i i'm i've if in into
    is isn't it it's its itself let's me more most my myself no nor not of off on once only
    or other ought our ours ourselves out over own same she should shouldn't so some such
    than that that's the their theirs them themselves then there there's these they
    they're this those through to too under until up very was wasn't we we'll we're we've
    were weren't what when where which while who whom why will with won't would wouldn't
    you you're your yours yourself yourselves us also been there'll
    """
    )
)

WEAK_WORDS = frozenset(
    word_list(
        """
    reminder note notes fyi nb update updates also still now currently today yesterday
    tomorrow tonight morning afternoon evening just really again please thank thanks ok
    okay yes yeah yep lol hey hi hello run runs running ran live lives living located
    host hosted use uses used using via get gets got make makes made thing things stuff
    etc e.g i.e seems seem think thought guess like well actually basically quick
    quickly sure right going gonna want wants anyway btw imo afaik utc per version versions
    """
    )
)

MARK_WORDS = frozenset(
    word_list(
        """
    todo fixme done closed close closing shipped archived archive wontfix won't-fix
    snoozed snooze waiting blocked reopened reopen reopening decision decisions decided
    decide agreed agree question finished completed resolved
    """
    )
)


GENERIC_WORDS = frozenset(
    word_list(
        """
    database server service api app application team project system cluster queue host
    node job pipeline repository configuration environment monday tuesday wednesday
    thursday friday saturday sunday january february march april may june july august
    september october november december mon tue wed thu fri sat sun jan feb mar apr jun
    jul aug sep sept oct nov dec i
    """
    )
)

SYNONYMS = {
    "db": "database",
    "dbs": "database",
    "databases": "database",
    "k8s": "kubernetes",
    "prod": "production",
    "prd": "production",
    "stg": "staging",
    "dev": "development",
    "preproduction": "preprod",
    "pre-prod": "preprod",
    "repo": "repository",
    "repos": "repository",
    "config": "configuration",
    "configs": "configuration",
    "cfg": "configuration",
    "env": "environment",
    "envs": "environment",
    "infra": "infrastructure",
    "docs": "documentation",
    "doc": "documentation",
    "msg": "message",
    "msgs": "message",
    "svc": "service",
    "svcs": "service",
    "deps": "dependency",
    "dep": "dependency",
    "mins": "minute",
    "secs": "second",
    "hrs": "hour",
}

# Product names often end in two letters naming their kind (query language, message queue,
# database) that people drop when they speak of them: "<name>ql" is said "<name>". Only
# a stem of six letters or more is cut, so short words keep their ending.
_KIND_SUFFIXES = ("ql", "mq", "db")

ENV_CANON = {
    "production": "production",
    "staging": "staging",
    "development": "development",
    "qa": "qa",
    "uat": "uat",
    "preprod": "preprod",
    "sandbox": "sandbox",
}
# Parts of host names that say which environment a host belongs to.
_HOST_ENV_PARTS = {
    "prod": "production",
    "prd": "production",
    "production": "production",
    "staging": "staging",
    "stg": "staging",
    "dev": "development",
    "qa": "qa",
    "uat": "uat",
    "preprod": "preprod",
    "sandbox": "sandbox",
}

# Plural stripping without a dictionary: these end in "s" and are not plurals.
_NO_STEM = frozenset(
    word_list(
        """
    status always process access analysis canvas alias series
    news https sms dns ios macos windows sometimes perhaps across whereas
    unless yes thus plus bus its has was does this is less class address express success
    progress bonus campus virus focus corpus census versus previous various serious
    """
    )
)

_FILE_EXT = word_list(
    "py js ts tsx jsx go rs java rb php sh bash yaml yml json toml ini cfg conf md txt sql "
    "html css env lock xml csv log service timer"
)
_TLDS = word_list("com net org io dev internal local lan cloud ai co eu us de uk nl svc cluster")

_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:t\d[\d:.]*z?)?")
_IP_RE = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?")
_VERSION_RE = re.compile(r"v?(\d+(?:\.\d+)*)(?:[-+]([0-9a-z.]+))?")
_UNIT_RE = re.compile(r"\d+(?:\.\d+)?(?:%|[kmgt]i?b|ms|s|m|h|d|x|k|rps|qps)")
_FILE_RE = re.compile(r"[\w.-]+\.(?:" + "|".join(_FILE_EXT) + r")")
_DOMAIN_RE = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:" + "|".join(_TLDS) + r")")
_CAMEL_RE = re.compile(r"[a-z][A-Z]|^[A-Z]{2,}[a-z]")

TOKEN_RE = re.compile(r"[@A-Za-z0-9_][\w.+#%'’-]*[\w+#%]|[A-Za-z0-9]")
_CODE_RE = re.compile(r"`([^`\n]{1,80})`")


# Per-token memo. A plain dict lookup inlined in the hot loops is several times cheaper
# than a functools.lru_cache call; the size cap keeps a pathological corpus bounded.
_MEMO: dict[str, tuple[str, int]] = {}
_MEMO_MAX = 500_000


def clear_token_memo() -> None:
    """Forget memoised token classifications, chunks and shared sets (``engine.forget``)."""
    _MEMO.clear()
    _CHUNKS.clear()
    _SETS.clear()


def token_info(token: str) -> tuple[str, int]:
    """Classify one token as written: return its canonical form and its flag bits."""
    info = _MEMO.get(token)
    if info is None:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        info = _MEMO[token] = _classify(token)
    return info


def _classify(token: str) -> tuple[str, int]:
    low = token.lower().replace("’", "'")
    if low.endswith("'s"):
        low = low[:-2]
    flags = 0
    if token[0] == "@":
        return low[1:], NAMEY
    if _DATE_RE.fullmatch(low):
        return low, DATE
    if _IP_RE.fullmatch(low):
        return low, HOST
    m = _VERSION_RE.fullmatch(low)
    if m:
        # "v16", "16" and "16.0"-style spellings of one version must compare equal.
        return (m.group(1) + ("-" + m.group(2) if m.group(2) else "")), NUM
    if _UNIT_RE.fullmatch(low):
        return low, NUM
    has_digit = any(c.isdigit() for c in low)
    if has_digit and ("-" in low or "." in low) and any(c.isalpha() for c in low):
        if _FILE_RE.fullmatch(low):
            return low, IDENT
        flags = HOST
        for part in re.split(r"[-.]", low):
            if part in _HOST_ENV_PARTS:
                flags |= ENV
        return low, flags
    if "." in low:
        if _FILE_RE.fullmatch(low):
            return low, IDENT
        if _DOMAIN_RE.fullmatch(low):
            return low, HOST
    if ("_" in low or ("-" in low and low not in SYNONYMS)) and low.strip("_-"):
        return low, IDENT
    canon = SYNONYMS.get(low, low)
    if len(canon) >= 8 and canon.endswith(_KIND_SUFFIXES) and canon.isalpha():
        canon = canon[:-2]
    if (
        canon.isalpha()
        and len(canon) > 4
        and canon.endswith("s")
        and not canon.endswith(("ss", "us", "is", "os", "as", "ys"))
        and canon not in _NO_STEM
    ):
        canon = canon[:-3] + "y" if canon.endswith("ies") else canon[:-1]
        canon = SYNONYMS.get(canon, canon)
    if canon in STOPWORDS or low in STOPWORDS:
        flags |= STOP
    if canon in WEAK_WORDS:
        flags |= WEAK
    if canon in MARK_WORDS:
        flags |= MARK
    if canon in LIFE_CUES or low in LIFE_CUES:
        flags |= LIFE_CUE
    if canon in DECIDE_CUES or low in DECIDE_CUES:
        flags |= DECIDE_CUE
    if canon in NEGATIONS or low in NEGATIONS:
        flags |= NEG_CUE
    if canon in ENV_CANON:
        flags |= ENV
        canon = ENV_CANON[canon]
    if canon in GENERIC_WORDS or flags & (STOP | WEAK | MARK | ENV):
        flags |= GENERIC
    elif token[0].isupper():
        if _CAMEL_RE.search(token) or (token.isupper() and len(token) > 1 and token.isalpha()):
            flags |= NAMEY
        else:
            flags |= CAP
    elif token.isalpha() and not token.islower():
        flags |= NAMEY  # "kPa", "iOS", "gRPC": a capital inside a word marks a name
    if has_digit and not flags & (NUM | HOST):
        flags |= IDENT if len(canon) > 2 else 0
    if len(canon) < 2 and not canon.isdigit():
        flags |= SHORT
    return canon, flags


@dataclass(slots=True)
class Features:
    """What one sentence contributes: terms, values and identity entities."""

    words: int
    content: tuple[str, ...]  # canonical non-stopword tokens in order (shingle input)
    subject: frozenset[str]  # key terms minus values, filler and markers
    values: frozenset[str]  # numbers and versions
    hosts: frozenset[str]
    envs: frozenset[str]
    idents: frozenset[str]
    names: frozenset[str]
    stop_ratio: float
    cues: int = 0  # LIFE_CUE / DECIDE_CUE / NEG_CUE bits: which cue words it holds

    @property
    def negated(self) -> bool:
        """True when the sentence holds a negation; "use X" and "do not use X" differ."""
        return bool(self.cues & NEG_CUE)

    def polar_values(self) -> frozenset[str]:
        """Return the values plus a negation mark: what must match for two texts to agree."""
        return self.values | NOT_MARK if self.cues & NEG_CUE else self.values

    def entity_count(self) -> int:
        """Count identity entities (hosts, environments, identifiers, names, values)."""
        return (
            len(self.hosts) + len(self.envs) + len(self.idents) + len(self.names) + len(self.values)
        )


# A whitespace-separated chunk ("ledger-db-2).", "(host", "Decision:") is classified once
# into everything a sentence needs from it: its content tokens, subject terms, values and
# entities, counts, cue bits, and whether it opens a clause (a leading "(" or quote) or
# opens one for the next chunk (a trailing ":"). A sentence is then a handful of list and
# set comprehensions over its chunks' records instead of a branchy per-token loop —
# str.split() plus one dict lookup per chunk, several times cheaper than the token regex.
class _ChunkInfo:
    __slots__ = (
        "caps",
        "content",
        "counts",
        "cues",
        "envs",
        "hosts",
        "idents",
        "names",
        "opens_next",
        "opens_self",
        "special",
        "stops",
        "subject",
        "values",
        "words",
    )

    def __init__(self, raw: str) -> None:
        if _TIME_CHUNK_RE.fullmatch(raw):
            toks: list[tuple[str, int]] = []
        else:
            toks = [token_info(t) for t in TOKEN_RE.findall(raw)]
        self.opens_next = raw.endswith((":", "("))
        self.opens_self = raw[:1] in "(\"'["
        self.words = len(toks)
        self.stops = sum(1 for _, f in toks if f & STOP)
        kept = [(c, f) for c, f in toks if not f & _SKIP]
        self.content = tuple(c for c, _ in kept)
        self.subject = tuple(c for c, f in kept if not f & NOT_SUBJECT)
        self.values = tuple(c for c, f in kept if f & NUM)
        self.hosts = tuple(c for c, f in kept if f & HOST)
        envs = [c for c, f in kept if f & ENV and not f & HOST]
        for c, f in kept:
            if f & HOST and f & ENV:
                envs.extend(host_envs(c))
        self.envs = tuple(envs)
        self.idents = tuple(c for c, f in kept if f & IDENT)
        # Only the chunk's first token can open a clause; a Capitalised word there is a
        # name only when it does not (decided per sentence), later ones always are.
        first_cap = bool(toks) and bool(toks[0][1] & CAP) and not toks[0][1] & _SKIP
        self.caps = toks[0][0] if first_cap else None
        self.names = tuple(c for k, (c, f) in enumerate(toks) if f & NAMEY or (f & CAP and k > 0))
        self.cues = 0
        for _, f in toks:
            self.cues |= f & (CUE | NEG_CUE)
        # (kind, item) pairs for the identity sets, so a sentence only touches what exists;
        # kind 5 carries cue bits.
        self.special = tuple(
            [(0, c) for c in self.values]
            + [(1, c) for c in self.hosts]
            + [(2, c) for c in self.envs]
            + [(3, c) for c in self.idents]
            + [(4, c) for c in self.names]
            + ([(5, self.cues)] if self.cues else [])
        )
        # words and stops packed in one int so a sentence sums them in one pass
        self.counts = self.words + (self.stops << 20)


_CHUNKS: dict[str, _ChunkInfo] = {}
_TIME_CHUNK_RE = re.compile(r"[(\[]?\d{1,2}:\d{2}(?::\d{2})?(?:[ap]m)?[)\],.;:]*", re.I)


def _chunk(raw: str) -> _ChunkInfo:
    info = _CHUNKS.get(raw)
    if info is None:
        if len(_CHUNKS) >= _MEMO_MAX:
            _CHUNKS.clear()
        info = _CHUNKS[raw] = _ChunkInfo(raw)
    return info


_EMPTY: frozenset[str] = frozenset()
NOT_MARK: frozenset[str] = frozenset({"¬"})
# Identity sets repeat across sentences ({"app-7"}, {"16"}); sharing one object per
# distinct set keeps a 100k-episode sweep's features in a few hundred MiB, not a GiB.
_SETS: dict[frozenset[str], frozenset[str]] = {}


def intern_set(items: set[str] | frozenset[str]) -> frozenset[str]:
    """Return the shared frozenset equal to ``items`` (the shared empty set when empty)."""
    if not items:
        return _EMPTY
    fs = frozenset(items)
    got = _SETS.get(fs)
    if got is None:
        if len(_SETS) >= _MEMO_MAX:
            _SETS.clear()
        got = _SETS[fs] = fs
    return got


def analyse(text: str) -> Features:
    """Tokenise one sentence and extract its key terms and entities."""
    get = _CHUNKS.get
    infos = [get(r) or _chunk(r) for r in text.split()]
    content = tuple([c for ch in infos for c in ch.content])
    subject = {t for ch in infos for t in ch.subject}
    packed = sum([ch.counts for ch in infos])
    words, stops = packed & 0xFFFFF, packed >> 20
    # values, hosts, envs, idents, names
    sets: tuple[set[str], ...] = (set(), set(), set(), set(), set())
    cues = 0
    for kind, item in [p for ch in infos for p in ch.special]:
        if kind == 5:
            cues |= item
        else:
            sets[kind].add(item)
    values, hosts, envs, idents, names = sets
    # A Capitalised word is a name unless it opens the sentence or a clause ("Decision:
    # Use …", "(Note …"), where capitalisation is no evidence either way.
    prev_opens = True
    for ch in infos:
        if ch.caps is not None and not prev_opens and not ch.opens_self:
            names.add(ch.caps)
        if ch.words:
            prev_opens = ch.opens_next
        elif ch.opens_next:
            prev_opens = True
    if "`" in text:
        codes = _CODE_RE.findall(text)
        if codes:
            idents.update(c.strip().lower() for c in codes)
    return Features(
        words=words,
        content=content,
        subject=frozenset(subject),
        values=intern_set(values) if values else _EMPTY,
        hosts=intern_set(hosts) if hosts else _EMPTY,
        envs=intern_set(envs) if envs else _EMPTY,
        idents=intern_set(idents) if idents else _EMPTY,
        names=intern_set(names) if names else _EMPTY,
        stop_ratio=stops / words if words else 0.0,
        cues=cues,
    )


_SKIP = STOP | DATE
_ENTITY = HOST | ENV | IDENT | NAMEY | CAP


def host_envs(host: str) -> list[str]:
    """Return the environments a host name encodes ("ledger-stg-2" → staging)."""
    return [_HOST_ENV_PARTS[p] for p in re.split(r"[-.]", host) if p in _HOST_ENV_PARTS]


def subject_terms(text: str) -> frozenset[str]:
    """Return just the subject terms of a short text (cheaper than a full ``analyse``)."""
    get = _CHUNKS.get
    return frozenset(t for r in text.split() for t in (get(r) or _chunk(r)).subject)


def tokenize(text: str) -> list[str]:
    """Return lowercase canonical word tokens, stopwords removed (the benchmark floor)."""
    get = _CHUNKS.get
    return [c for r in text.split() for c in (get(r) or _chunk(r)).content]


def key_terms(text: str) -> frozenset[str]:
    """Return the subject terms and values of a text (entities included)."""
    f = analyse(text)
    return f.subject | f.values


def entities(text: str) -> dict[str, frozenset[str]]:
    """Return the identity entities of a text by kind."""
    f = analyse(text)
    return {
        "host": f.hosts,
        "env": f.envs,
        "ident": f.idents,
        "name": f.names,
        "value": f.values,
    }
