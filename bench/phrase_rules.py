"""Count the engine's phrase rules: regular expressions whose alternations spell English
words ("decided|chose|picked"), the kind of rule that carries one writer's phrasing.

Reads every ``re.compile`` call in ``dreaming/engine/*.py`` (by its syntax tree, not by
running it) and prints how many there are, how many hold an alternation of words, and
how many alternatives those hold. Nothing is recorded; the figures go in closing notes
and ``bench/RESULTS.md`` beside the change that moved them.

Run: ``python bench/phrase_rules.py [REPO]``.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

WORD_ALTERNATIVE = re.compile(r"(?<![\\\w])[a-z]{3,}(?=[|)\\\s?])")


def count(root: Path) -> tuple[int, int, int]:
    calls = phrases = alternatives = 0
    for path in sorted((root / "dreaming" / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if not (
                isinstance(node, ast.Call)
                and getattr(func, "attr", "") == "compile"
                and getattr(getattr(func, "value", None), "id", "") == "re"
                and node.args
            ):
                continue
            calls += 1
            pattern = "".join(
                sub.value
                for sub in ast.walk(node.args[0])
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str)
            )
            if "|" in pattern and WORD_ALTERNATIVE.search(pattern):
                phrases += 1
                alternatives += pattern.count("|") + 1
    return calls, phrases, alternatives


if __name__ == "__main__":
    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
    calls, phrases, alternatives = count(repo)
    print(
        f"re.compile calls {calls}, phrase regexes (alternations holding words) {phrases}, "
        f"alternatives {alternatives}"
    )
