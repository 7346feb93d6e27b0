"""manage.py retrieve --project SLUG (--query TEXT | --queries-file FILE) [--k N] [--as-of DATE]
[--json]"""

from __future__ import annotations

import json as jsonlib
from pathlib import Path

from django.contrib.auth import get_user_model

from llmwiki.management.base import ProjectCommand
from llmwiki.search import Caller, RetrievalError, parse_as_of, retrieve


class Command(ProjectCommand):
    help = (
        "Search a project's memory: reviewed claims, page sections, open conflicts and episodes "
        "in one ranked list. --as-of answers from what the reviewed memory said on that date. "
        "--queries-file answers a JSONL file of {id, query} from one process, a line each."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--query", metavar="TEXT")
        what.add_argument("--queries-file", metavar="FILE", help="JSONL of {id, query}")
        parser.add_argument("--k", type=int, default=10, help="hits per query (1-100)")
        parser.add_argument("--budget", type=int, help="token budget of the context pack")
        parser.add_argument(
            "--as-of",
            metavar="DATE",
            help="answer as the memory stood then: YYYY-MM-DD (end of that day, UTC) "
            "or an ISO 8601 date and time",
        )
        parser.add_argument(
            "--as",
            dest="username",
            metavar="USERNAME",
            help="retrieve with this member's clearance (default: the operator's, all of it)",
        )

    def handle(self, *args, project, json, query, queries_file, k, budget, username, as_of, **opts):
        target = self.get_project(project)
        if as_of is not None:
            try:
                as_of = parse_as_of(as_of)
            except RetrievalError as exc:
                raise self.fail(f"--as-of: {exc}") from None
        caller = Caller.operator()
        if username is not None:
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                raise self.fail(f"no user {username!r}")
            caller = Caller.for_user(user, target)
        if queries_file is not None:
            batch = self._read_batch(Path(queries_file))
            for qid, text in batch:
                pack = self._retrieve(target, text, caller, k, budget, as_of, f"query {qid!r}")
                self.stdout.write(
                    jsonlib.dumps(
                        {"id": qid, "items": pack.as_json()["items"]},
                        default=str,
                        ensure_ascii=False,
                    )
                )
            return
        pack = self._retrieve(target, query, caller, k, budget, as_of, "--query")
        if json:
            doc = pack.as_json()
            self.emit({"items": doc["items"], "tokens": pack.tokens, "as_of": doc["as_of"]})
        else:
            self.stdout.write(pack.as_text() or "no hits")

    def _retrieve(self, project, text, caller, k, budget, as_of, what):
        try:
            return retrieve(project, text, caller=caller, limit=k, budget=budget, as_of=as_of)
        except RetrievalError as exc:
            raise self.fail(f"{what}: {exc}") from None

    def _read_batch(self, path: Path) -> list[tuple[object, str]]:
        """Every line checked before the first query runs: bad input answers nothing."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise self.fail(f"{path}: cannot read ({exc})") from None
        batch = []
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = jsonlib.loads(line)
            except ValueError:
                raise self.fail(f"{path}:{n}: not a JSON object") from None
            if not isinstance(item, dict) or "id" not in item:
                raise self.fail(f"{path}:{n}: each line needs an id and a query")
            text = item.get("query")
            if not isinstance(text, str) or not text.strip():
                raise self.fail(f"{path}:{n}: the query is missing or empty")
            batch.append((item["id"], text))
        return batch
