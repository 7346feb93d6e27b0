"""Run the benchmarks: every ``bench/*.py`` that defines ``main(argv)``, in sorted order.

``python bench/run.py`` runs them all; ``python bench/run.py episodes ...`` runs some. A
failing benchmark is reported and the rest still run; the exit code is 1 if any failed.

Each benchmark is imported by module name and ``main([])`` is called in a child process of
its own: Django can be set up only once per process, and peak RSS (``ru_maxrss``) would
otherwise include whatever the previous benchmark held.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
NOT_BENCHMARKS = {"common", "run"}


def defines_main(path: Path) -> bool:
    """True if the module has a top-level ``def main(argv...)``, found without importing it."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError:
        # Let the run report it as a failure rather than silently skipping the file.
        return True
    return any(
        isinstance(node, ast.FunctionDef) and node.name == "main" and node.args.args
        for node in tree.body
    )


def discover() -> list[str]:
    """Module names of the benchmarks, sorted."""
    return sorted(
        path.stem
        for path in BENCH_DIR.glob("*.py")
        if path.stem not in NOT_BENCHMARKS and not path.stem.startswith("_") and defines_main(path)
    )


def run_one(name: str) -> tuple[int, float]:
    """Import ``name`` from bench/ and call ``main([])`` in a child; (exit code, seconds)."""
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(BENCH_DIR)!r})\n"
        f"import {name}\n"
        f"sys.exit({name}.main([]) or 0)\n"
    )
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], cwd=BENCH_DIR.parent, check=False)
    return result.returncode, time.perf_counter() - start


def main(argv: list[str]) -> int:
    available = discover()
    wanted = [Path(arg).stem for arg in argv] or available
    unknown = [name for name in wanted if name not in available]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(available)}",
            file=sys.stderr,
        )
        return 2
    summary = []
    for name in wanted:
        print(f"=== {name} ===", flush=True)
        returncode, seconds = run_one(name)
        status = "ok" if returncode == 0 else f"FAILED (exit {returncode})"
        print(f"=== {name}: {status} in {seconds:.1f} s ===\n", flush=True)
        summary.append((name, status, seconds))
    print("Summary:")
    for name, status, seconds in summary:
        print(f"  {name:<24} {status:<20} {seconds:7.1f} s")
    return 1 if any(status != "ok" for _n, status, _s in summary) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
