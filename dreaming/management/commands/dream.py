"""manage.py dream --project SLUG [--preview] [--backfill FROM TO] [--json]"""

from __future__ import annotations

from datetime import date

from dreaming.engine.policy import PolicyError
from dreaming.models import DreamRun
from dreaming.services import DreamBusy, dream_execute, dream_request
from llmwiki.management.base import ProjectCommand


class Command(ProjectCommand):
    help = "Run one dream sweep now, in this process (no worker needed)."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--preview", action="store_true", help="compute, write nothing binding")
        parser.add_argument("--backfill", nargs=2, metavar=("FROM", "TO"), help="YYYY-MM-DD dates")

    def handle(self, *args, project, json, preview, backfill, **options):
        target = self.get_project(project)
        window = None
        if backfill:
            try:
                window = (date.fromisoformat(backfill[0]), date.fromisoformat(backfill[1]))
            except ValueError as exc:
                raise self.fail(f"--backfill dates must be YYYY-MM-DD: {exc}") from None
        trigger = (
            DreamRun.Trigger.PREVIEW
            if preview
            else DreamRun.Trigger.BACKFILL
            if window
            else DreamRun.Trigger.MANUAL
        )
        try:
            run = dream_request(
                project=target, trigger=trigger, actor="cli", backfill=window, enqueue=False
            )
        except (DreamBusy, ValueError) as exc:
            raise self.fail(str(exc)) from None
        run = dream_execute(run_id=run.pk)
        if run.status == DreamRun.Status.FAILED and run.error.startswith(PolicyError.__name__):
            raise self.fail(run.error)
        document = run_summary(run)
        if json:
            self.emit(document)
        else:
            self.stdout.write(
                f"run {run.pk} {run.status}: selected {document['selected']}, "
                f"proposed {document['proposed']}, duplicates {document['duplicates']}, "
                f"conflicts {document['conflicts']}, blocked {document['blocked']}"
            )
            if document["remaining"] and not window:
                self.stdout.write(
                    f"backlog: {document['remaining']} episodes remain past the watermark; "
                    "run it again for the next batch (a worker's runs continue by themselves)"
                )
            if run.diary:
                self.stdout.write(run.diary)
        if run.status == DreamRun.Status.FAILED:
            raise self.fail(f"dream run {run.pk} failed: {run.error}")


def run_summary(run: DreamRun) -> dict:
    counts = run.counts or {}
    return {
        "run_id": run.pk,
        "status": run.status,
        "phases": run.phases,
        "selected": counts.get("selected", 0),
        "proposed": counts.get("proposed", 0),
        "duplicates": counts.get("duplicates", 0),
        "conflicts": counts.get("conflicts", 0),
        "blocked": counts.get("blocked", 0),
        "watermark_before": run.watermark_before,
        "watermark_after": run.watermark_after,
        "remaining": counts.get("remaining", 0),
        "error": run.error or None,
    }
