"""manage.py candidates --project SLUG [--status STATUS] --json"""

from __future__ import annotations

from dreaming.models import Candidate
from dreaming.selectors import candidate_document
from llmwiki.management.base import ProjectCommand


class Command(ProjectCommand):
    help = "List a project's candidates with score breakdown and evidence."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--status", choices=Candidate.Status.values)

    def handle(self, *args, project, json, status, **options):
        target = self.get_project(project)
        qs = Candidate.objects.filter(project=target).order_by("-score", "id")
        if status:
            qs = qs.filter(status=status)
        qs = qs.prefetch_related("evidence__episode__source")
        documents = [candidate_document(c) for c in qs]
        if json:
            self.emit(documents)
        else:
            for d in documents:
                self.stdout.write(
                    f"#{d['id']:<5} {d['status']:9} {d['score']:.2f} {d['page_target']:16} "
                    f"{d['text'][:80]}"
                )
