"""manage.py review --project SLUG --candidate ID (--approve|--reject|--defer) --as USERNAME
[--note TEXT] [--confirm-sensitive] [--json]

The web action's service and gates (`reviews.actions`): the command is one more form. The
reviewer "saw" the candidate as it is now, so the stale-form gate cannot fire here; every
other gate can, and a refusal leaves its `review.denied` audit row as on the web.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from dreaming.models import Candidate
from llmwiki.management.base import ProjectCommand
from reviews import actions
from reviews.services import ReviewRefused


class Command(ProjectCommand):
    help = "Approve, reject or defer a candidate as a named reviewer, through the review gates."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--candidate", required=True, type=int, metavar="ID")
        action = parser.add_mutually_exclusive_group(required=True)
        for name in ("approve", "reject", "defer"):
            action.add_argument(f"--{name}", dest="action", action="store_const", const=name)
        parser.add_argument("--as", dest="username", required=True, metavar="USERNAME")
        parser.add_argument("--note", default="", help="the note (for --reject: the reason)")
        parser.add_argument(
            "--confirm-sensitive",
            action="store_true",
            help="confirm you read restricted or PII-flagged content (as the web checkbox)",
        )

    def handle(self, *args, project, candidate, action, username, note, json, **options):
        target = self.get_project(project)
        reviewer = get_user_model().objects.filter(username=username, is_active=True).first()
        if reviewer is None:
            raise self.fail(f"no active user {username!r}")
        found = Candidate.objects.filter(project=target, pk=candidate).first()
        if found is None:
            raise self.fail(f"no candidate #{candidate} in project {project!r}")
        seen = actions.form_state(found)
        claim = None
        try:
            if action == "approve":
                claim = actions.candidate_approve(
                    candidate=found,
                    reviewer=reviewer,
                    seen=seen,
                    note=note,
                    sensitive_confirmed=options["confirm_sensitive"],
                )
            elif action == "reject":
                actions.candidate_reject(candidate=found, reviewer=reviewer, seen=seen, reason=note)
            else:
                actions.candidate_defer(candidate=found, reviewer=reviewer, seen=seen, note=note)
        except ReviewRefused as exc:
            raise self.fail(f"refused: {exc}") from None
        found.refresh_from_db()
        revision = claim.page.current_revision_id if claim else None
        document = {
            "candidate": found.pk,
            "action": action,
            "status": found.status,
            "claim_id": claim.pk if claim else None,
            "revision_id": revision,
            "reviewer": reviewer.get_username(),
        }
        if json:
            self.emit(document)
        else:
            made = f" → claim {claim.pk} (revision {revision})" if claim else ""
            self.stdout.write(f"candidate #{found.pk}: {found.status}{made}")
