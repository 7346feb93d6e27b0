"""`manage.py backup ARCHIVE`: the database and the data directory in one .tar.gz."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from ops.backup import BackupError, backup


class Command(BaseCommand):
    help = "Write the database (a consistent snapshot) and the data directory to one archive."

    def add_arguments(self, parser) -> None:
        parser.add_argument("archive", help="the .tar.gz file to write (must not exist)")
        parser.add_argument("--json", action="store_true", help="print one JSON document")

    def handle(self, *args, archive: str, **options) -> None:
        try:
            summary = backup(archive)
        except BackupError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if options["json"]:
            self.stdout.write(json.dumps(asdict(summary)))
        else:
            self.stdout.write(
                f"Backed up the {summary.vendor} database and {summary.files - 1} files "
                f"({summary.bytes} bytes) to {summary.archive}"
            )
