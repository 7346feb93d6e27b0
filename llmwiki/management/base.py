"""The shape every command of the command-line contract shares (docs/ARCHITECTURE.md §7)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from llmwiki.models import Project

BAD_INPUT = 2


class ProjectCommand(BaseCommand):
    """`--project SLUG` and `--json`; bad input exits 2 with one line on stderr."""

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, metavar="SLUG")
        parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")

    def fail(self, reason: str) -> CommandError:
        return CommandError(reason.replace("\n", " "), returncode=BAD_INPUT)

    def get_project(self, slug: str) -> Project:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise self.fail(f"no project {slug!r}")
        return project

    def emit(self, document: Any) -> None:
        self.stdout.write(json.dumps(document, default=str, ensure_ascii=False))
