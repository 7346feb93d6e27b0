"""Retrieval quality on the LoCoMo development split, side by side with plain BM25.

Reads `../shared/data/locomo-dev.json` relative to the repository (CC BY-NC 4.0, evaluation
only: never copied into this repository) and skips with a message when it is absent. Each
conversation becomes a transcript project the way `../shared/data/README.md` says (turn
ids kept in the locator), is dreamed, and its questions go through
`manage.py retrieve --queries-file … --k 10 --json` (one process, JSONL out). The same
questions go through plain Okapi BM25 over the conversation's turns, in the same run.

Metrics (categories 1-4 with evidence): evidence hit@5, hit@10, recall@10, all-evidence@5,
answer-token share@10; an item counts through every turn id found in its JSON.
Targets (docs/ARCHITECTURE.md §8): hit@5 ≥ 0.75 and multi-hop all@5 ≥ 0.2, beating plain BM25.

Run: ``python bench/locomo.py [--data PATH] [--no-record]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import math
import re
import tempfile
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

from common import REPO_DIR, db_label, md_table, record, setup_django, text_table

DATA = REPO_DIR.parent / "shared" / "data" / "locomo-dev.json"
CATEGORIES = {1: "1 multi-hop", 2: "2 temporal", 3: "3 open-domain", 4: "4 single-hop"}
MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
TURN = re.compile(r"D\d+:\d+")
# A short English stop list (articles, pronouns, auxiliaries, prepositions, wh-words).
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "against",
        "between",
        "into",
        "through",
        "during",
        "before",
        "after",
        "above",
        "below",
        "to",
        "from",
        "up",
        "down",
        "in",
        "out",
        "on",
        "off",
        "over",
        "under",
        "again",
        "further",
        "then",
        "once",
        "here",
        "there",
        "when",
        "where",
        "why",
        "how",
        "all",
        "any",
        "both",
        "each",
        "few",
        "more",
        "most",
        "other",
        "some",
        "such",
        "no",
        "nor",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "s",
        "t",
        "can",
        "will",
        "just",
        "don",
        "should",
        "now",
        "i",
        "me",
        "my",
        "myself",
        "we",
        "our",
        "ours",
        "ourselves",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "he",
        "him",
        "his",
        "himself",
        "she",
        "her",
        "hers",
        "herself",
        "it",
        "its",
        "itself",
        "they",
        "them",
        "their",
        "theirs",
        "themselves",
        "what",
        "which",
        "who",
        "whom",
        "this",
        "that",
        "these",
        "those",
        "am",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "have",
        "has",
        "had",
        "having",
        "do",
        "does",
        "did",
        "doing",
        "would",
        "could",
        "ought",
        "let",
        "did",
    ]
)


def parse_date(text: str) -> dt.datetime:
    """ "1:56 pm on 8 May, 2023" without the locale: the month name is read here."""
    clock, _, date = text.partition(" on ")
    hm, ampm = clock.strip().split()
    hour, minute = (int(x) for x in hm.split(":"))
    hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
    day, month, year = date.replace(",", "").split()
    return dt.datetime(int(year), MONTHS[month.lower()], int(day), hour, minute, tzinfo=dt.UTC)


def locomo_date(when: dt.datetime) -> str:
    hour = when.hour % 12 or 12
    ampm = "am" if when.hour < 12 else "pm"
    month = next(m for m, i in MONTHS.items() if i == when.month).capitalize()
    return f"{hour}:{when.minute:02d} {ampm} on {when.day} {month}, {when.year}"


def turns_of(conv: dict) -> list[dict]:
    """Turns in session order with their content and timestamp (README: transcript JSONL)."""
    c = conv["conversation"]
    sessions = sorted(
        int(k.split("_")[1])
        for k in c
        if re.fullmatch(r"session_\d+", k) and isinstance(c[k], list)
    )
    out = []
    for n in sessions:
        start = parse_date(c[f"session_{n}_date_time"])
        for i, turn in enumerate(c[f"session_{n}"]):
            text = turn.get("text") or ""
            if turn.get("blip_caption"):
                caption = f"[image: {turn['blip_caption']}]"
                text = f"{text} {caption}" if text else caption
            out.append(
                {
                    "id": turn["dia_id"],
                    "role": turn["speaker"],
                    "content": text,
                    "timestamp": (start + dt.timedelta(seconds=i)).isoformat(),
                    "session_date": c[f"session_{n}_date_time"],
                }
            )
    return out


def evidence_of(raw: list, valid: set[str]) -> set[str]:
    out = set()
    for entry in raw:
        for part in re.split(r"[;\s]+", str(entry)):
            part = part.replace("D:", "D")
            m = re.fullmatch(r"D(\d+):(\d+)", part)
            if m:
                ident = f"D{int(m[1])}:{int(m[2])}"
                if ident in valid:
                    out.add(ident)
    return out


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKD", text).lower()
    return [t[:-1] if len(t) > 3 and t.endswith("s") else t for t in re.findall(r"[a-z0-9]+", text)]


def content_tokens(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOP]


class BM25:
    """Okapi BM25, k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5)/(df + 0.5)); ties in turn order."""

    def __init__(self, docs: list[str]):
        self.docs = [Counter(content_tokens(d)) for d in docs]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / len(self.docs)
        df = Counter(t for d in self.docs for t in d)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def top(self, query: str, k: int) -> list[int]:
        terms = content_tokens(query)
        scores = []
        for i, (doc, length) in enumerate(zip(self.docs, self.lengths, strict=True)):
            s = 0.0
            for t in terms:
                f = doc.get(t)
                if f:
                    s += self.idf[t] * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / self.avg))
            scores.append((-s, i))
        return [i for _, i in sorted(scores)[:k]]


def scores_for(units: list[tuple[set[str], str]], evidence: set[str], answer: str) -> dict:
    def credited(k):
        return set().union(*(u[0] for u in units[:k])) if units[:k] else set()

    answer_terms = {t for t in tokens(answer) if t not in STOP}
    context = set(tokens(" ".join(u[1] for u in units[:10])))
    return {
        "hit@5": float(bool(evidence & credited(5))),
        "hit@10": float(bool(evidence & credited(10))),
        "recall@10": len(evidence & credited(10)) / len(evidence),
        "all@5": float(evidence <= credited(5)),
        "answer@10": len(answer_terms & context) / len(answer_terms) if answer_terms else 1.0,
    }


def item_text(item: dict) -> str:
    text = item.get("text") or ""
    if item.get("actor") and item.get("occurred_at"):
        when = dt.datetime.fromisoformat(item["occurred_at"])
        text = f"{item['actor']} ({locomo_date(when)}): {text}"
    return text


def run_conversation(conv: dict) -> tuple[list[dict], float]:
    from django.core.management import call_command

    from dreaming import services as dreaming
    from llmwiki.ingest import RawFile, ingest_files
    from llmwiki.services import project_create

    turns = turns_of(conv)
    valid = {t["id"] for t in turns}
    slug = f"{conv['sample_id']}-{time.time_ns():x}"
    project = project_create(slug=slug, name=slug, actor="bench")
    lines = "\n".join(
        json.dumps({k: t[k] for k in ("id", "role", "content", "timestamp")}) for t in turns
    )
    report = ingest_files(
        project=project,
        files=[RawFile(f"{conv['sample_id']}.jsonl", lines.encode())],
        actor="bench",
    )
    if report.episodes_created != len(turns):
        print(
            f"warning: {conv['sample_id']}: {report.episodes_created} episodes for "
            f"{len(turns)} turns"
        )
    run = dreaming.dream_request(project=project, trigger="manual", actor="bench", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)

    questions = [
        (i, q)
        for i, q in enumerate(conv["qa"])
        if q.get("category") in CATEGORIES and evidence_of(q.get("evidence", []), valid)
    ]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for i, q in questions:
            fh.write(json.dumps({"id": f"{conv['sample_id']}:q{i}", "query": q["question"]}) + "\n")
    out = io.StringIO()
    start = time.perf_counter()
    call_command(
        "retrieve", "--project", slug, "--queries-file", fh.name, "--k", "10", "--json", stdout=out
    )
    seconds = time.perf_counter() - start
    Path(fh.name).unlink()
    answers = {
        json.loads(line)["id"]: json.loads(line)["items"] for line in out.getvalue().splitlines()
    }

    baseline = BM25([f"{t['role']} ({t['session_date']}): {t['content']}" for t in turns])
    rows = []
    for i, q in questions:
        evidence = evidence_of(q["evidence"], valid)
        items = answers[f"{conv['sample_id']}:q{i}"]
        ours = [
            ({m for m in TURN.findall(json.dumps(it)) if m in valid}, item_text(it)) for it in items
        ]
        base = [
            ({turns[j]["id"]}, baseline_doc)
            for j in baseline.top(q["question"], 10)
            for baseline_doc in [
                f"{turns[j]['role']} ({turns[j]['session_date']}): {turns[j]['content']}"
            ]
        ]
        rows.append(
            {
                "category": q["category"],
                "ours": scores_for(ours, evidence, str(q.get("answer", ""))),
                "base": scores_for(base, evidence, str(q.get("answer", ""))),
            }
        )
    return rows, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (the LoCoMo dev split lives outside the repo)")
        return 0
    setup_django()
    conversations = json.loads(args.data.read_text())
    rows, seconds, count = [], 0.0, 0
    for conv in conversations:
        mine, took = run_conversation(conv)
        rows += mine
        seconds += took
        count += len(mine)
    metrics = ["hit@5", "hit@10", "recall@10", "all@5", "answer@10"]
    groups = defaultdict(list)
    for r in rows:
        groups[CATEGORIES[r["category"]]].append(r)
    groups["all 1-4"] = rows
    table = []
    for name in [*CATEGORIES.values(), "all 1-4"]:
        g = groups[name]
        cells = []
        for m in metrics:
            ours = sum(r["ours"][m] for r in g) / len(g)
            base = sum(r["base"][m] for r in g) / len(g)
            cells.append(f"{ours:.3f} / {base:.3f}")
        table.append([name, len(g), *cells])
    header = ["category", "n", *(f"{m} ours / BM25" for m in metrics)]
    print(text_table(header, table))
    overall = groups["all 1-4"]
    hit5 = sum(r["ours"]["hit@5"] for r in overall) / len(overall)
    multi = groups[CATEGORIES[1]]
    all5 = sum(r["ours"]["all@5"] for r in multi) / len(multi)
    notes = [
        f"- LoCoMo dev split ({len(conversations)} conversations, {count} scored questions) on "
        f"{db_label()}, each ingested as a transcript project, dreamed, then `manage.py retrieve "
        f"--queries-file --k 10 --json` in one process ({seconds:.1f} s for all queries).",
        "- Plain BM25: Okapi over single turns ('<speaker> (<session date>): <text>'), "
        "k1 1.2, b 0.75, stop words dropped, same run.",
        f"- Targets (docs/ARCHITECTURE.md §8): hit@5 ≥ 0.75 (got {hit5:.3f}), "
        f"multi-hop all@5 ≥ 0.2 (got {all5:.3f}).",
    ]
    print("\n".join(notes))
    if not args.no_record:
        record(
            "Retrieval quality on LoCoMo dev (bench/locomo.py)",
            [*md_table(header, table), "", *notes],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
