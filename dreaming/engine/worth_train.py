"""Train the claim-worthiness model (``worth``) on the labelled development corpora.

Usage::

    python -m dreaming.engine.worth_train            # write worth_weights.json, print LOCO
    python -m dreaming.engine.worth_train --check    # fit and evaluate; write nothing
    python -m dreaming.engine.worth_train --verify   # fail unless the shipped file is current

Corpora: every labelled corpus under ``../shared/eval`` (beside the repository), and every
generator under ``eval/*/``, built into a temporary directory. Each
corpus is read by the product's importers into episodes (no database, no Django), the
engine's Light phase cuts them into units, and each unit that is claim material at all
(no junk reason) becomes one example: its features (``worth.features``) and its label,
whether the corpus line its sentence comes from is one of the key's ``claim_lines``. A
unit is located the way the evaluation harness locates a candidate: its first eight
normalised words, else its last eight (a sentence wrapped across lines), inside a line of
one of the files it was read from.

The fit is an L2-regularised logistic regression (scipy's L-BFGS from zero weights; each
corpus weighs the same however many units it has), so it is deterministic, and the
weights file is written with fixed rounding and key order: the same corpora give the same
bytes. Leave-one-corpus-out: for each corpus, fit on the others and score it. The two
numbers not learnt by the fit are chosen on those held-out scores, never on one corpus's
in-sample fit nor by hand: the strength of the L2 penalty by the held-out log-loss (see
``_regularisation``). The threshold of the gate is not fitted at all (see ``THRESHOLD``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from llmwiki.importers import TextFile, parse, plan
from llmwiki.importers.registry import SOURCE_TRUST

from . import light
from .facts import Clock, Inputs
from .policy import Policy
from .types import Ep
from .worth import FEATURES, WEIGHTS_PATH, restatement, unit_features

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "eval"
# Strengths of the L2 penalty (on the mean log-loss) tried; held-out log-loss picks one.
L2_GRID = (0.0003, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02, 0.03, 0.1)
# The gate: a fact is proposed when the model rates it more likely a claim than not.
# Each fact the gate lets through costs a reviewer a read and is wasted when it is not a
# claim; each it turns away is a claim lost. The issue asks as much of the queue's
# precision as of its recall (0.8 each), so the two errors cost the same, and with
# probabilities that are calibrated (the penalty is chosen by held-out log-loss, which
# rewards exactly that; the table prints the held-out mean beside the share of claims) the
# fewest costly errors are made at even odds. Not fitted: the thresholds that maximised
# the mean held-out F1 (which, where most units are claims, lets through lines that are
# not for the sake of recall) sat on a curve so flat near its top that a few units moved
# by an engine change swung the gate by 0.04 and the queue's precision with it; F0.5's
# top (0.62) turned away durable facts said in two days' logs, and a key fact on three of
# the four development corpora. Deep's deferred band asks the same even odds (``_LIKELY``).
THRESHOLD = 0.5
_UNDATED = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Data:
    name: str
    x: np.ndarray
    y: np.ndarray
    texts: list[str]


def corpora(tmp: Path) -> list[tuple[str, Path, Path]]:
    """(name, corpus dir, key) of every labelled development corpus."""
    out = []
    # Every labelled corpus beside the repository, whatever it is called.
    for key in sorted(SHARED.glob("*/answer_key.json"), reverse=True):
        root = json.loads(key.read_text(encoding="utf-8")).get("corpus_root", "corpus")
        out.append((key.parent.name, key.parent / root, key))
    for gen in sorted((REPO / "eval").glob("*/make_corpus.py")):
        dest = tmp / gen.parent.name
        for script in ("make_corpus.py", "build_key.py"):
            subprocess.run(
                [sys.executable, "-B", str(gen.parent / script), str(dest)],
                check=True,
                capture_output=True,
            )
        out.append((gen.parent.name, dest / "corpus", dest / "answer_key.json"))
    missing = [str(c) for _, c, k in out if not c.is_dir() or not k.is_file()]
    if missing:
        raise SystemExit(f"worth_train: corpus not found: {', '.join(missing)}")
    return out


def _norm_words(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("`", "").replace("*", "").lower()
    return " ".join(re.findall(r"[a-z0-9]+", text))


def _lines(root: Path, rel: str) -> list[tuple[int, str]]:
    out = []
    for n, line in enumerate((root / rel).read_text(encoding="utf-8").split("\n"), 1):
        if rel.endswith(".jsonl"):
            if line.strip():
                out.append((n, _norm_words(str(json.loads(line).get("content", "")))))
        else:
            out.append((n, _norm_words(line)))
    return out


def episodes(root: Path) -> tuple[list[Ep], dict[int, str]]:
    """The corpus read by the product's importers; episode id -> the file it came from."""
    files = [
        TextFile(p.relative_to(root).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]
    by_path = {f.path: f for f in files}
    eps: list[Ep] = []
    path_of: dict[int, str] = {}
    for importer, paths in plan(files):
        if importer in ("skipped", "unsupported"):
            continue
        for path in paths:
            for d in parse(importer, [by_path[path]]):
                i = len(eps) + 1
                eps.append(
                    Ep(
                        id=i,
                        occurred_at=d.occurred_at or _UNDATED,
                        content=d.content,
                        kind=d.kind,
                        memory_type=d.memory_type,
                        actor=d.actor,
                        source_id=sorted(by_path).index(path) + 1,
                        source_trust=SOURCE_TRUST.get(importer, 0.5),
                        tags=d.tags,
                        dated=d.occurred_at is not None,
                        section=str(d.locator.get("section") or ""),
                    )
                )
                path_of[i] = path
    return eps, path_of


def examples(name: str, root: Path, key_path: Path) -> Data:
    key = json.loads(key_path.read_text(encoding="utf-8"))
    labelled = key["claim_lines"].items()
    good = {(f, n) for f, ranges in labelled for a, b in ranges for n in range(a, b + 1)}
    eps, path_of = episodes(root)
    inp = Inputs.of(eps, (), {}, Policy(), None)
    lit = light.run(inp, Clock())
    U = lit.units
    lines: dict[str, list[tuple[int, str]]] = {}
    xs, ys, texts = [], [], []
    for u in range(len(U)):
        if U.junk[u] or not U.eps[u] or U.claim[u] is not None:
            continue
        words = _norm_words(U.text[u]).split()
        if not words:
            continue
        paths = sorted({path_of[inp.eps[i].id] for i in U.eps[u]})
        for path in paths:
            if path not in lines:
                lines[path] = _lines(root, path)
        hits = []
        for probe in (" ".join(words[:8]), " ".join(words[-8:])):
            hits = [(path, n) for path in paths for n, w in lines[path] if probe in w]
            if hits:
                break
        if not hits:
            continue
        ci = lit.unit_fact[u]
        fact = lit.facts[ci] if ci >= 0 else None
        xs.append(unit_features(U, u, restatement(U, inp, fact, u)))
        ys.append(float(any(h in good for h in hits)))
        texts.append(U.text[u])
    return Data(name, np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), texts)


def fit(sets: list[Data], l2: float) -> tuple[np.ndarray, float]:
    """L2 logistic regression; every corpus carries the same total weight."""
    x = np.vstack([d.x for d in sets])
    y = np.concatenate([d.y for d in sets])
    w = np.concatenate([np.full(len(d.y), 1.0 / len(d.y)) for d in sets])
    w /= w.sum()
    xb = np.hstack([x, np.ones((len(x), 1))])

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = xb @ theta
        p = 1.0 / (1.0 + np.exp(-z))
        ll = np.logaddexp(0.0, z) - y * z
        reg = 0.5 * l2 * float(theta[:-1] @ theta[:-1])
        grad = xb.T @ (w * (p - y))
        grad[:-1] += l2 * theta[:-1]
        return float(w @ ll) + reg, grad

    got = minimize(
        loss,
        np.zeros(xb.shape[1]),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 2000, "gtol": 1e-9, "ftol": 1e-12},
    )
    theta = np.round(got.x, 6)
    return theta[:-1], float(theta[-1])


def predict(weights: np.ndarray, bias: float, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ weights + bias)))


def held_out(sets: list[Data], l2: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each corpus scored by the model fitted on the others: (probabilities, labels)."""
    out = []
    for d in sets:
        weights, bias = fit([o for o in sets if o is not d], l2)
        out.append((predict(weights, bias, d.x), d.y))
    return out


def _log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def _regularisation(sets: list[Data]) -> tuple[float, list[tuple[np.ndarray, np.ndarray]]]:
    """The L2 strength (from ``L2_GRID``) whose held-out probabilities are best, by the
    mean leave-one-corpus-out log-loss (each corpus counts the same), and those held-out
    scores. Log-loss judges the probabilities themselves, before any threshold is drawn;
    on a tie the stronger penalty, the simpler model, wins."""
    best: tuple[float, float, list] | None = None
    for l2 in L2_GRID:
        held = held_out(sets, l2)
        loss = round(float(np.mean([_log_loss(p, y) for p, y in held])), 6)
        if best is None or loss <= best[0]:
            best = (loss, l2, held)
    assert best is not None
    return best[1], best[2]


def _pr(p: np.ndarray, y: np.ndarray, t: float) -> tuple[float, float]:
    keep = p >= t
    tp = float((keep & (y == 1)).sum())
    precision = tp / keep.sum() if keep.any() else 1.0
    recall = tp / (y == 1).sum() if (y == 1).any() else 1.0
    return precision, recall


def _auc(p: np.ndarray, y: np.ndarray) -> float:
    """The chance a claim unit scores above a non-claim one (ties count half)."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return 1.0
    above = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(above / (len(pos) * len(neg)))


def build(sets: list[Data]) -> tuple[dict, list[tuple]]:
    """The weights document the corpora give, and one row of figures per corpus."""
    l2, held = _regularisation(sets)
    weights, bias = fit(sets, l2)
    rows = []
    for d, (p, y) in zip(sets, held, strict=True):
        lp, lr = _pr(p, y, THRESHOLD)
        ip, ir = _pr(predict(weights, bias, d.x), d.y, THRESHOLD)
        mean = float(p.mean())  # beside the share of claims: are the odds calibrated?
        rows.append(
            (d.name, len(d.y), int(d.y.sum()), float(d.y.mean()), lp, lr, _auc(p, y), mean, ip, ir)
        )
    doc = {
        "about": "claim-worthiness model; rebuild: python -m dreaming.engine.worth_train",
        "bias": round(bias, 6),
        "l2": l2,
        "threshold": THRESHOLD,
        "weights": {n: round(float(v), 6) for n, v in zip(FEATURES, weights, strict=True)},
        "loco": {r[0]: {"precision": round(r[4], 4), "recall": round(r[5], 4)} for r in rows},
        "in_sample": {r[0]: {"precision": round(r[8], 4), "recall": round(r[9], 4)} for r in rows},
        "units": {r[0]: {"examples": r[1], "claims": r[2]} for r in rows},
    }
    return doc, rows


def render(doc: dict) -> str:
    """The weights file's bytes: fixed key order and rounding, so the same corpora give
    the same file."""
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def train() -> tuple[dict, list[tuple]]:
    """Read every labelled corpus and fit: see ``build``."""
    with tempfile.TemporaryDirectory(prefix="llmwiki-worth-") as tmp:
        sets = [examples(n, c, k) for n, c, k in corpora(Path(tmp))]
    return build(sets)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fit and evaluate only")
    mode.add_argument(
        "--verify",
        action="store_true",
        help="fit, and fail unless the shipped weights file is what this would write",
    )
    args = parser.parse_args(argv)
    doc, rows = train()
    head = ("corpus", "units", "claims", "LOCO P", "LOCO R", "AUC", "mean p", "in P", "in R")
    print("{:<10} {:>6} {:>6}  {:>7} {:>7} {:>6} {:>6}  {:>6} {:>6}".format(*head))
    for name, n, c, base, lp, lr, auc, mean, ip, ir in rows:
        print(
            f"{name:<10} {n:>6} {c:>6}  {lp:>7.3f} {lr:>7.3f} {auc:>6.3f} {mean:>6.3f}  "
            f"{ip:>6.3f} {ir:>6.3f}   (share of claims {base:.3f})"
        )
    print(
        f"threshold {doc['threshold']:.2f} (more likely a claim than not); "
        f"L2 {doc['l2']:g} (minimises the mean held-out log-loss)"
    )
    text = render(doc)
    if args.verify:
        if WEIGHTS_PATH.read_text(encoding="utf-8") != text:
            print(f"{WEIGHTS_PATH.relative_to(REPO)} is not what this training writes: rebuild it")
            return 1
        print(f"{WEIGHTS_PATH.relative_to(REPO)} is what this training writes")
    elif not args.check:
        WEIGHTS_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {WEIGHTS_PATH.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
