"""manage.py conflicts --project SLUG --json"""

from __future__ import annotations

from dreaming.models import Conflict
from dreaming.selectors import conflict_document
from llmwiki.management.base import ProjectCommand


class Command(ProjectCommand):
    help = "List a project's conflicts with both sides and their evidence."

    def handle(self, *args, project, json, **options):
        target = self.get_project(project)
        qs = Conflict.objects.filter(project=target).prefetch_related(
            "sides__evidence__source", "sides__claim__evidence__source"
        )
        documents = [conflict_document(c) for c in qs]
        if json:
            self.emit(documents)
        else:
            for d in documents:
                self.stdout.write(f"#{d['id']:<5} {d['status']:9} {d['subject']}")
                for side in d["sides"]:
                    self.stdout.write(f"    - {side['text'][:100]}")
