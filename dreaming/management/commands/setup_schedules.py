"""Create or update every django-q2 schedule, idempotently, by name."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django_q.models import Schedule

from llmwiki.models import Project

HEARTBEAT = "llmwiki-heartbeat"
SEARCH_FOLD = "llmwiki-search-index"


def schedule_name(project: Project) -> str:
    return f"dream:{project.slug}"


class Command(BaseCommand):
    help = "One cron schedule per dreaming-enabled project, the worker heartbeat, the search fold."

    def handle(self, *args, **options) -> None:
        Schedule.objects.update_or_create(
            name=HEARTBEAT,
            defaults={
                "func": "dreaming.tasks.heartbeat",
                "schedule_type": Schedule.MINUTES,
                "minutes": 1,
                "repeats": -1,
            },
        )
        # The search index folds in what was committed since, off the ingest path.
        Schedule.objects.update_or_create(
            name=SEARCH_FOLD,
            defaults={
                "func": "llmwiki.search.tasks.search_fold_all",
                "schedule_type": Schedule.MINUTES,
                "minutes": 1,
                "repeats": -1,
            },
        )
        wanted = set()
        for project in Project.objects.filter(dreaming_enabled=True):
            name = schedule_name(project)
            wanted.add(name)
            Schedule.objects.update_or_create(
                name=name,
                defaults={
                    "func": "dreaming.tasks.dream_scheduled",
                    "args": repr((project.pk,)),
                    "schedule_type": Schedule.CRON,
                    "cron": project.dream_schedule,
                    "repeats": -1,
                },
            )
        stale = Schedule.objects.filter(name__startswith="dream:").exclude(name__in=wanted)
        removed = stale.count()
        stale.delete()
        self.stdout.write(
            f"{len(wanted)} dream schedule(s), heartbeat and search index every minute; "
            f"{removed} removed"
        )
