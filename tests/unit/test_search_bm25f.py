"""The array scorer: BM25F as the formula reads, over Whoosh's segments and deletions."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from llmwiki.search import bm25f
from llmwiki.search.backends import _ANALYZER, CONTEXT_BOOST, WhooshBackend
from llmwiki.search.documents import EPISODE, Doc

WORDS = [
    "replica",
    "lag",
    "primary",
    "failover",
    "disk",
    "pressure",
    "certificate",
    "expiry",
    "cron",
    "backup",
    "restore",
    "staging",
    "deploy",
    "rollback",
    "queue",
    "worker",
    "timeout",
    "retry",
    "budget",
    "alert",
    "pager",
    "owner",
    "ledger",
    "invoice",
    "partition",
    "month",
    "schema",
    "migration",
    "index",
    "vacuum",
    "latency",
    "p95",
    "cache",
    "eviction",
]


def doc(i: int, rng: random.Random) -> Doc:
    def words(n):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    return Doc(
        key=f"{EPISODE}:{i}",
        project_id=1,
        layer=EPISODE,
        text=words(rng.randint(3, 40)),
        context=words(rng.randint(0, 30)),
        sensitive=rng.random() < 0.2,
        trust="raw",
        security_class="internal",
        page_target="",
        occurred_at=None,
    )


@pytest.fixture
def corpus(tmp_path):
    """Three segments (three commits), some documents deleted and some rewritten."""
    rng = random.Random(7)
    backend = WhooshBackend(tmp_path)
    live: dict[str, Doc] = {}
    for start in (0, 300, 600):
        docs = [doc(i, rng) for i in range(start, start + 300)]
        deletes = [f"{EPISODE}:{i}" for i in range(5, start, 37)]
        backend.apply(1, docs, deletes, (), None)
        live.update((d.key, d) for d in docs)
        for key in deletes:
            live.pop(key, None)
    rewritten = [doc(i, rng) for i in range(100, 140) if f"{EPISODE}:{i}" in live]
    backend.apply(1, rewritten, (), (), None)
    live.update((d.key, d) for d in rewritten)
    return backend, live


@pytest.fixture
def index(corpus):
    return corpus[0]


def reference(backend, live: dict[str, Doc], terms, sensitive: bool, limit: int):
    """BM25F computed from the documents' own words, one document at a time."""
    searcher = backend._index(1, EPISODE).searcher()
    fields = {"body": 1.0, "context": CONTEXT_BOOST}
    total = searcher.doc_count_all()
    avg = {f: searcher.avg_field_length(f) for f in fields}
    freqs, lengths = {}, {}
    for key, d in live.items():
        n = searcher.document_number(key=key)
        texts = {"body": d.text, "context": d.context}
        freqs[key] = {f: Counter(t.text for t in _ANALYZER(texts[f])) for f in fields}
        lengths[key] = {f: searcher.doc_field_length(n, f, 0) or 0 for f in fields}
    scores = Counter()
    for term in terms:
        weighted = {
            key: sum(
                boost * freqs[key][f][term] / ((1 - bm25f.B) + bm25f.B * lengths[key][f] / avg[f])
                for f, boost in fields.items()
            )
            for key in live
        }
        holders = [k for k, w in weighted.items() if w]
        idf = math.log(1 + (total - len(holders) + 0.5) / (len(holders) + 0.5))
        for k in holders:
            tf = weighted[k]
            scores[k] += idf * tf * (bm25f.K1 + 1) / (tf + bm25f.K1)
    ranked = sorted(
        (k for k in scores if sensitive or not live[k].sensitive),
        key=lambda k: (-scores[k], searcher.document_number(key=k)),
    )
    return [(k, scores[k]) for k in ranked[:limit]]


@pytest.mark.parametrize("sensitive", [True, False])
def test_the_array_scorer_computes_bm25f_over_several_segments(tmp_path, sensitive):
    rng = random.Random(5)
    backend = WhooshBackend(tmp_path)
    live = {}
    for start in (0, 200, 400):  # three commits, three segments
        docs = [doc(i, rng) for i in range(start, start + 200)]
        backend.apply(1, docs, (), (), None)
        live.update((d.key, d) for d in docs)
    assert len(backend._index(1, EPISODE).reader().leaf_readers()) == 3
    for _ in range(25):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 6)))
        terms = sorted({t.text for t in _ANALYZER(query)})
        expected = reference(backend, live, terms, sensitive, 10)
        got = backend.search(1, EPISODE, query, sensitive=sensitive, limit=10)
        assert [k for k, _ in got] == [k for k, _ in expected], query
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-5)


def test_deleted_and_masked_documents_never_come_back(corpus):
    backend, live = corpus
    everything = " ".join(WORDS)
    seen = dict(backend.search(1, EPISODE, everything, sensitive=True, limit=10_000))
    assert set(seen) == set(live)  # every live document, each once, no deleted one
    open_only = dict(backend.search(1, EPISODE, everything, sensitive=False, limit=10_000))
    assert set(open_only) == {k for k, d in live.items() if not d.sensitive}


def cached_segments(backend) -> set:
    path = str(backend._project_dir(1) / EPISODE)
    return {key[0] for key in bm25f._cache.entries if key[0][0] == path}


def test_the_cache_forgets_segments_a_merge_removed_or_a_clear(index):
    index.search(1, EPISODE, "replica lag", sensitive=True, limit=5)
    segments = cached_segments(index)
    assert len(segments) > 1
    index.apply(1, [], (), (), None, optimize=True)
    assert index.search(1, EPISODE, "replica lag", sensitive=True, limit=5)
    after = cached_segments(index)
    assert len(after) == 1 and not after & segments
    index.clear(1)
    assert not cached_segments(index)


def test_a_document_scrubbed_from_the_index_is_not_found_again_in_the_same_process(tmp_path):
    """Whoosh-Reloaded's Searcher.refresh() kept the old segments; the backend reopens."""
    rng = random.Random(3)
    backend = WhooshBackend(tmp_path)
    rare = Doc(**{**doc(0, rng).__dict__, "text": "zebra unicorn"})
    backend.apply(1, [rare, *(doc(i, rng) for i in range(1, 50))], (), (), None)
    backend.apply(1, [doc(i, rng) for i in range(50, 100)], (), (), None)
    assert [k for k, _ in backend.search(1, EPISODE, "zebra", sensitive=True, limit=5)] == [
        f"{EPISODE}:0"
    ]
    backend.apply(1, [], [f"{EPISODE}:0"], (), None, scrub=True)
    assert backend.search(1, EPISODE, "zebra", sensitive=True, limit=5) == []
    assert len(backend.search(1, EPISODE, " ".join(WORDS), sensitive=True, limit=500)) == 99


def test_an_index_holding_no_segment_yet_answers_nothing(tmp_path):
    backend = WhooshBackend(tmp_path)
    backend.apply(1, [], [f"{EPISODE}:7"], (), None)  # a delete creates the index, empty
    assert backend._index(1, EPISODE, create=False) is not None
    assert backend.search(1, EPISODE, "replica lag", sensitive=True, limit=5) == []


def test_a_text_s_terms_are_its_tokens_terms_as_the_analyzer_reads_the_whole_text(monkeypatch):
    from llmwiki.search import backends
    from llmwiki.search.backends import terms

    rng = random.Random(3)
    tricky = [
        "Hello, WORLD! v2.3.1 e-mail foo*bar x.y. İstanbul straße naïve ÉCOLE 3.14 a_b __",
        "it's don't ran running runs happily ..a..b.. 1.2.3.4 file.txt *** x I A",
        "",
    ]
    texts = tricky + [" ".join(rng.choices(WORDS + tricky[0].split(), k=40)) for _ in range(50)]
    for text in texts:
        assert terms(text) == sorted({t.text for t in _ANALYZER(text)}), text
    # Asked again, from the memo of each token's terms: the same.
    assert [terms(t) for t in texts] == [sorted({t.text for t in _ANALYZER(t)}) for t in texts]
    # Retrieval reads every hit's terms: a token met before is not analysed again.
    analysed = []
    monkeypatch.setattr(backends, "_ANALYZER", lambda text: analysed.append(text) or [])
    assert terms(texts[0]) == sorted({t.text for t in _ANALYZER(texts[0])}) and not analysed
