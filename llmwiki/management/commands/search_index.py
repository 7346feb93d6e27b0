"""manage.py search_index --project SLUG (--rebuild | --check | --fold) [--json]"""

from __future__ import annotations

from llmwiki.management.base import ProjectCommand
from llmwiki.search.backends import backend
from llmwiki.search.index import index_check, index_fold, index_rebuild


class Command(ProjectCommand):
    help = "Rebuild the search index, fold in what was committed since, or check it."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--rebuild", action="store_true", help="drop and write every document")
        what.add_argument("--fold", action="store_true", help="fold in what was committed since")
        what.add_argument(
            "--check",
            action="store_true",
            help="report documents missing or stale, or words miscounted (exit 1)",
        )

    def handle(self, *args, project, json, rebuild, fold, check, **opts):
        target = self.get_project(project)
        using = backend()
        if check:
            result = index_check(target, using)
            if json:
                self.emit({"backend": using.name, **result.as_json()})
            else:
                self.stdout.write(
                    f"{using.name}: {result.indexed} indexed, {len(result.missing)} missing, "
                    f"{len(result.stale)} stale, {len(result.extra)} not expected"
                    + (f", {len(result.miscounted)} words miscounted" if result.miscounted else "")
                )
                for label, keys in (
                    ("missing", result.missing),
                    ("stale", result.stale),
                    ("extra", result.extra),
                    ("miscounted", result.miscounted),
                ):
                    for key in keys[:50]:
                        self.stdout.write(f"  {label}: {key}")
            if not result.ok:
                raise SystemExit(1)
            return
        written = index_rebuild(target, using) if rebuild else index_fold(target, using)
        if json:
            self.emit({"backend": using.name, "written": written})
        else:
            self.stdout.write(f"{using.name}: {written} document(s) written")
