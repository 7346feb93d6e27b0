"""`manage.py restore ARCHIVE`: into a fresh data directory and an empty database."""

from __future__ import annotations

import json
from dataclasses import asdict

from django.core.management.base import BaseCommand, CommandError

from ops.backup import BackupError, restore


class Command(BaseCommand):
    help = "Restore a backup archive into a fresh data directory and an empty database."

    def add_arguments(self, parser) -> None:
        parser.add_argument("archive", help="a .tar.gz written by `manage.py backup`")
        parser.add_argument("--json", action="store_true", help="print one JSON document")

    def handle(self, *args, archive: str, **options) -> None:
        try:
            summary = restore(archive)
        except BackupError as exc:
            raise CommandError(str(exc), returncode=2) from None
        if options["json"]:
            self.stdout.write(json.dumps(asdict(summary)))
        else:
            self.stdout.write(
                f"Restored the {summary.vendor} database and {summary.files - 1} files from "
                f"{summary.archive}; run `manage.py migrate` if this version is newer"
            )
