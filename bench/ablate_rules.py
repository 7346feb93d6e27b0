"""Ablation of engine rules: does deleting one leave every corpus's figures where they were?

Runs the acceptance harness (``--core-only``) on every development corpus (Orchard, Kestrel
and the generated ones under ``eval/*/``) and the worth model's leave-one-corpus-out check
(``python -m dreaming.engine.worth_train --check``), and prints one JSON document of the
figures. With ``--save FILE`` it keeps them as the baseline; with ``--against FILE`` it
lists every figure that fell (or, for ``noise_rate`` and ``secret_leaks``, rose) and exits 1
if any did, so a rule is deleted only when nothing falls::

    python bench/ablate_rules.py --save /tmp/base.json       # before
    # ... delete one rule ...
    python bench/ablate_rules.py --against /tmp/base.json    # after: exit 0 keeps it

The corpora are generated once into ``--cache`` (a directory kept between runs) so each
comparison costs only the harness runs. Nothing is recorded in ``RESULTS.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import REPO_DIR

HARNESS = REPO_DIR.parent / "shared" / "eval" / "run.py"
GENERATORS = sorted(p.parent for p in (REPO_DIR / "eval").glob("*/make_corpus.py"))
HIGHER = ("queue_precision", "fact_recall", "dup_collapse", "routing_accuracy")
HIGHER += ("conflict_recall", "injection_flagged", "lifecycle_ok")
LOWER = ("noise_rate", "secret_leaks")
_LOCO = re.compile(r"^(\w+)\s+\d+\s+\d+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", re.M)


def corpus_args(cache: Path) -> dict[str, tuple[str, ...]]:
    kestrel = HARNESS.parent / "kestrel"
    out: dict[str, tuple[str, ...]] = {"Orchard": ()}
    if kestrel.is_dir():
        out["Kestrel"] = (
            "--corpus",
            str(kestrel / "corpus"),
            "--key",
            str(kestrel / "answer_key.json"),
        )
    for gen in GENERATORS:
        dest = cache / gen.name
        if not (dest / "answer_key.json").is_file():
            for script in ("make_corpus.py", "build_key.py"):
                subprocess.run(
                    [sys.executable, "-B", str(gen / script), str(dest)],
                    capture_output=True,
                    check=True,
                )
        out[gen.name.capitalize()] = (
            "--corpus",
            f"{dest}/corpus",
            "--key",
            f"{dest}/answer_key.json",
        )
    return out


def harness(args: tuple[str, ...]) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "--repo", str(REPO_DIR), "--core-only", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"harness failed: {proc.stdout[-1500:]} {proc.stderr[-1500:]}")
    doc = json.loads(lines[-1])
    figures = {m: doc.get(m) for m in (*HIGHER, *LOWER)}
    figures["candidates"] = doc.get("info", {}).get("candidates_proposed")
    return figures


def loco() -> dict[str, dict[str, float]]:
    proc = subprocess.run(
        [sys.executable, "-m", "dreaming.engine.worth_train", "--check"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_DIR,
    )
    return {
        name: {"loco_p": float(p), "loco_r": float(r), "auc": float(a)}
        for name, p, r, a in _LOCO.findall(proc.stdout)
    }


def measure(cache: Path, workers: int) -> dict[str, dict[str, object]]:
    runs = corpus_args(cache)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        jobs = {name: pool.submit(harness, a) for name, a in runs.items()}
        held = pool.submit(loco)
        figures = {name: job.result() for name, job in jobs.items()}
        figures["LOCO"] = {f"{n} {k}": v for n, d in held.result().items() for k, v in d.items()}
    return figures


def falls(base: dict, now: dict) -> list[str]:
    out = []
    for corpus, figs in base.items():
        for metric, was in figs.items():
            new = now.get(corpus, {}).get(metric)
            if was is None or new is None or metric == "candidates":
                continue
            worse = new > was + 1e-9 if metric in LOWER else new < was - 1e-9
            if worse:
                out.append(f"{corpus} {metric}: {was} -> {new}")
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the figures here (the baseline)")
    parser.add_argument("--against", type=Path, help="compare with this baseline")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/llmwiki-ablate"))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    now = measure(args.cache, args.workers)
    print(json.dumps(now, indent=1, sort_keys=True))
    if args.save:
        args.save.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if args.against:
        base = json.loads(args.against.read_text(encoding="utf-8"))
        worse = falls(base, now)
        for line in worse:
            print("FELL", line)
        for c, figs in base.items():
            for m, was in figs.items():
                if now.get(c, {}).get(m) != was:
                    print("changed", f"{c} {m}: {was} -> {now.get(c, {}).get(m)}")
        print("KEEP" if not worse else "REVERT")
        return 1 if worse else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
