"""manage.py review --project SLUG --candidate ID (--approve|--reject|--defer|--merge …)
--as USERNAME [--note TEXT] [--text TEXT] [--section NAME] [--claim ID]
[--confirm-sensitive] [--json]

One flag per review action of `dreaming.review_actions`, and one option per input an
action reads: the command is one more form over the web action's service and gates. The
reviewer "saw" the candidate as it is now, so the stale-form gate cannot fire here; every
other gate can, and a refusal leaves its `review.denied` audit row as on the web.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from dreaming import review_actions
from dreaming.models import Candidate
from llmwiki.management.base import ProjectCommand
from reviews import actions
from reviews.errors import ReviewRefused


class Command(ProjectCommand):
    help = "Take a review action on a candidate as a named reviewer, through the review gates."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--candidate", required=True, type=int, metavar="ID")
        choice = parser.add_mutually_exclusive_group(required=True)
        for spec in review_actions.all_actions(everywhere_only=True):
            choice.add_argument(
                f"--{spec.name}",
                dest="action",
                action="store_const",
                const=spec.name,
                help=spec.help,
            )
        parser.add_argument("--as", dest="username", required=True, metavar="USERNAME")
        for field, (flag, help_text) in review_actions.FIELDS.items():
            if field == "sensitive_confirmed":
                parser.add_argument(flag, dest=field, action="store_true", help=help_text)
            else:
                kind = int if field == "claim_id" else str
                parser.add_argument(flag, dest=field, type=kind, default=None, help=help_text)

    def handle(self, *args, project, candidate, action, username, json, **options):
        target = self.get_project(project)
        reviewer = get_user_model().objects.filter(username=username, is_active=True).first()
        if reviewer is None:
            raise self.fail(f"no active user {username!r}")
        found = Candidate.objects.filter(project=target, pk=candidate).first()
        if found is None:
            raise self.fail(f"no candidate #{candidate} in project {project!r}")
        spec = review_actions.get(action)
        given = {f for f in review_actions.FIELDS if options.get(f) not in (None, False)}
        if given - set(spec.fields):
            flags = ", ".join(review_actions.FIELDS[f][0] for f in sorted(given - set(spec.fields)))
            raise self.fail(f"--{action} does not take {flags}")
        decision = review_actions.Decision(
            note=options["note"] or "",
            edited_text=options["edited_text"],
            as_edited=options["edited_text"] is not None,
            section=options["section"],
            claim_id=options["claim_id"],
            sensitive_confirmed=options["sensitive_confirmed"],
        )
        try:
            outcome = found.on_action(action, reviewer, actions.form_state(found), decision)
        except ReviewRefused as exc:
            raise self.fail(f"refused: {exc}") from None
        found.refresh_from_db()
        claim = outcome.claim
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
