"""manage.py ingest --project SLUG [--create] [--importer NAME] [--columns MAP] PATH... [--json]"""

from __future__ import annotations

import getpass
from pathlib import Path

from django.core.exceptions import ValidationError

from llmwiki.errors import InputError
from llmwiki.importers.csv_events import parse_columns
from llmwiki.importers.detect import IMPORTERS
from llmwiki.ingest import collect_paths, ingest_files, parallel_workers
from llmwiki.management.base import ProjectCommand
from llmwiki.models import Project
from llmwiki.services import project_create


class Command(ProjectCommand):
    help = "Import files or directories through the security gate into a project's episodes."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--create", action="store_true", help="create the project if missing")
        parser.add_argument("--importer", choices=sorted(IMPORTERS), help="force one importer")
        parser.add_argument(
            "--columns",
            metavar="MAP",
            help="CSV/TSV columns, e.g. time=When,actor=Who,text=What (default: from headers)",
        )
        parser.add_argument("paths", nargs="+", metavar="PATH")

    def handle(
        self, *args, project: str, json: bool, create: bool, importer, paths, columns, **opts
    ):
        actor = f"cli:{getpass.getuser()}"
        target = Project.objects.filter(slug=project).first()
        if target is None and not create:
            raise self.fail(f"no project {project!r} (pass --create to make it)")
        try:
            mapping = parse_columns(columns) if columns else None
            files = collect_paths(Path(p) for p in paths)
            if target is None:
                target = project_create(slug=project, name=project, actor=actor)
            report = ingest_files(
                project=target,
                files=files,
                actor=actor,
                importer=importer,
                workers=parallel_workers(),
                columns=mapping,
            )
        except InputError as exc:
            raise self.fail(str(exc)) from None
        except ValidationError as exc:
            raise self.fail("; ".join(exc.messages)) from None

        if json:
            self.emit(report.as_dict())
        else:
            for s in report.sources:
                detail = (
                    s.error
                    or s.note
                    or f"{s.episodes} episodes" + (f" [{', '.join(s.flags)}]" if s.flags else "")
                )
                self.stdout.write(f"{s.path}: {s.outcome}  ({detail})")
            self.stdout.write(f"{report.episodes_created} episodes created")
        if report.rejected:
            reasons = "; ".join(s.error or s.path for s in report.rejected)
            raise self.fail(f"{len(report.rejected)} rejected: {reasons}")
