"""Create the demo maintainer and the demo project; safe to run any number of times."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from llmwiki.ingest import collect_paths, ingest_files, parallel_workers
from llmwiki.models import Project
from llmwiki.services import project_create

DEMO_SLUG = "demo"
DEMO_USER = "demo"
CORPUS = Path(__file__).resolve().parents[2] / "demo" / "corpus"


def demo_password() -> str:
    """A password generated once per data directory, kept beside the database (0600)."""
    path = settings.DATA_DIR / "demo-password"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(12))
    return path.read_text().strip()


class Command(BaseCommand):
    help = "Create the demo maintainer and the Tidewater demo project (idempotent)."

    def handle(self, *args, **options) -> None:
        password = demo_password()
        User = get_user_model()
        with transaction.atomic():
            user, created = User.objects.get_or_create(username=DEMO_USER)
            if created:
                user.set_password(password)
                user.is_staff = True
                user.is_superuser = True
                user.save()
            project = Project.objects.filter(slug=DEMO_SLUG).first()
            if project is None:
                project = project_create(
                    slug=DEMO_SLUG,
                    name="Tidewater",
                    description=(
                        "Shipment tracking for a regional ferry freight operator — two weeks "
                        "of agent logs, chat transcripts and design notes."
                    ),
                    actor="system",
                    owner=user,
                )
        # Identical bytes are a no-op, so a second run imports nothing new.
        # SEEDED.md documents the planted cases (quoting the fake secrets); it is not corpus.
        files = [f for f in collect_paths([CORPUS]) if f.path != "SEEDED.md"]
        report = ingest_files(
            project=project, files=files, actor="system", workers=parallel_workers()
        )
        counts = {}
        for source in report.sources:
            counts[source.status] = counts.get(source.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
        self.stdout.write(f"Demo corpus: {summary}; {report.episodes_created} episodes created")
        self.stdout.write(self.style.SUCCESS("Demo project ready: http://127.0.0.1:8000/p/demo/"))
        self.stdout.write(f"Log in as  {DEMO_USER}  with password  {password}")
