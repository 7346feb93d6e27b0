"""Dependencies point one way: ops -> api, wizard -> reviews -> dreaming -> llmwiki (docs/ARCHITECTURE.md §2)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports(package: str) -> dict[str, set[str]]:
    """Every module each file of `package` imports, by file."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        if "migrations" in path.parts:
            continue
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(ROOT))] = names
    return found


@pytest.mark.parametrize(
    ("package", "above"),
    [
        ("llmwiki", ("dreaming", "reviews", "wizard", "api", "ops")),
        ("dreaming", ("reviews", "wizard", "api", "ops")),
        ("reviews", ("wizard", "api", "ops")),
        ("wizard", ("ops",)),
        ("api", ("ops",)),
    ],
)
def test_an_app_imports_nothing_above_it(package, above):
    wrong = {
        path: sorted(m for m in modules if m.split(".")[0] in above)
        for path, modules in imports(package).items()
    }
    assert {path: mods for path, mods in wrong.items() if mods} == {}


def test_reviews_does_not_reach_into_the_dream_engine():
    reaching = {
        path: sorted(m for m in modules if m.startswith("dreaming.engine"))
        for path, modules in imports("reviews").items()
    }
    assert {path: mods for path, mods in reaching.items() if mods} == {}
