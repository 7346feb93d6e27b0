"""A queue that learns from its reviewers: queue precision before and after a reviewer's
first decisions, on every labelled development corpus.

For each corpus (Orchard and Kestrel beside the repository, Harbor and Pollen from their
generators) the engine sweeps the first half of the episodes in time order; a simulated
reviewer decides the first 20 candidates of that sweep in the order the review queue lists
them (proposed and deferred together, flagged first, then in the sweep's order), by the key: approve
when the candidate's line is a claim line, reject when it is not (a candidate the key
cannot locate is skipped, as a reviewer would leave it). Then the second half, the new
material alone, is swept twice, without and with those decisions
(``run_sweep(decided=...)``), and the share of its candidates located on a claim line is
compared, beside how many of its claim candidates stay. Engine in process (the product's
importers, no database), so the numbers isolate the adjustment
(``dreaming/engine/learn.py``).

    python bench/learning.py [--no-record]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import unicodedata
from pathlib import Path

from common import REPO_DIR, md_table, record, text_table

sys.path.insert(0, str(REPO_DIR))

from dreaming.engine import CandidateDraft, Decided, run_sweep
from dreaming.engine.deep import draft_rank
from dreaming.engine.learn import Where
from dreaming.engine.worth_train import corpora, episodes

FIRST = 20  # proposals the simulated reviewer decides


def _words(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("`", "").replace("*", "").lower()
    return " ".join(re.findall(r"[a-z0-9]+", text))


class Key:
    """Where a candidate's text comes from in the corpus, and whether that is a claim line."""

    def __init__(self, root: Path, key: dict) -> None:
        self.good = {
            (f, n) for f, rs in key["claim_lines"].items() for a, b in rs for n in range(a, b + 1)
        }
        self.index = []
        for f in key["files"]:
            rel = f["path"]
            for n, line in enumerate((root / rel).read_text(encoding="utf-8").split("\n"), 1):
                if rel.endswith(".jsonl"):
                    line = json.loads(line).get("content", "") if line.strip() else ""
                if w := _words(line):
                    self.index.append((rel, n, w))

    def claim(self, text: str) -> bool | None:
        """True on a claim line, False elsewhere, None when the text is not located."""
        ws = _words(text).split()
        for probe in (" ".join(ws[:8]), " ".join(ws[-8:])):
            hits = [(f, n) for f, n, w in self.index if probe and probe in w]
            if hits:
                return any(h in self.good for h in hits)
        return None


def precision(key: Key, texts: list[str]) -> tuple[float, int, int]:
    """The share of located candidates on a claim line, how many were located, and how
    many of those are on a claim line."""
    got = [c for c in map(key.claim, texts) if c is not None]
    return (sum(got) / len(got) if got else 0.0), len(got), sum(got)


def queue_order(candidates: list[CandidateDraft]) -> list[CandidateDraft]:
    """The open candidates as the review queue lists them (``reviews.views.queue``):
    proposed and deferred together, flagged ones first, then in the sweep's order
    (`draft_rank`), then by id (the order the sweep wrote them in). The engine has no
    security class, so a restricted candidate counts as any flagged one."""
    shown = [c for c in candidates if c.status in ("proposed", "deferred")]
    return sorted(shown, key=lambda c: (-bool(c.flags), -draft_rank(c)))


def one(name: str, root: Path, key_path: Path) -> list[object]:
    key = Key(root, json.loads(key_path.read_text(encoding="utf-8")))
    eps, _ = episodes(root)
    eps.sort(key=lambda e: (e.occurred_at, e.id))
    half = len(eps) // 2
    first = run_sweep(eps[:half])
    decided: list[Decided] = []
    for c in queue_order(first.candidates):
        verdict = key.claim(c.text)
        if verdict is not None:
            where = Where.from_signals(c.signals)
            decided.append(Decided(len(decided) + 1, c.text, verdict, c.signals["worth"], where))
        if len(decided) == FIRST:
            break
    texts = {d.text for d in decided}

    def queue(**kw) -> list[str]:
        got = run_sweep(eps[half:], **kw).candidates
        return [c.text for c in got if c.status != "blocked" and c.text not in texts]

    before, n_before, good_before = precision(key, queue())
    after, n_after, good_after = precision(key, queue(decided=decided))
    approved = sum(d.approved for d in decided)
    return [
        name,
        f"{approved}/{len(decided)}",
        f"{before:.3f} ({n_before})",
        f"{after:.3f} ({n_after})",
        f"{after - before:+.3f}",
        f"{good_after}/{good_before}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args()
    head = [
        "corpus",
        "approved of first 20",
        "precision before",
        "after",
        "change",
        "claims kept",
    ]
    with tempfile.TemporaryDirectory(prefix="llmwiki-learning-") as tmp:
        rows = [one(n, c, k) for n, c, k in corpora(Path(tmp))]
    print(text_table(head, rows))
    if not args.no_record:
        record(
            "Queue learning from reviewers (bench/learning.py)",
            [
                *md_table(head, rows),
                "",
                "Second half of each corpus swept without and with the first 20 decisions "
                "(taken in the review queue's order); precision = share of its candidates "
                "(blocked aside, decided texts aside, number located in brackets) on a claim "
                "line; claims kept = claim candidates after / before.",
            ],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
