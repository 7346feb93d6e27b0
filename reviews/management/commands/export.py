"""manage.py export --project SLUG --kind KIND --audience AUDIENCE --out DIR [--json]
manage.py export --project SLUG --verify DIR [--json]

Writes one export (stored under the data directory and recorded, then copied to DIR), or
checks a folder of export files against its MANIFEST.json, and says why it is stale against
the project's current state (the rule the Exports page marks stale by).
"""

from __future__ import annotations

import getpass
from pathlib import Path

from llmwiki.errors import InputError
from llmwiki.management.base import ProjectCommand
from llmwiki.vocabulary import export_kind_names
from reviews.exports import (
    ExportOptions,
    export_create,
    export_document,
    export_verify,
)
from reviews.exports.pack import MANIFEST
from reviews.exports.service import Basis, stale_reasons


class Command(ProjectCommand):
    help = (
        "Build a system profile, receiver brief, startup packet or handoff bundle; or verify one."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--kind", choices=export_kind_names(aliases=True))
        parser.add_argument("--audience", choices=["public", "internal", "restricted"])
        parser.add_argument("--out", metavar="DIR", help="also write the files here")
        parser.add_argument("--verify", metavar="DIR", help="check a folder of export files")
        parser.add_argument(
            "--budget", type=int, default=12_000, help="startup packet size in characters"
        )
        parser.add_argument(
            "--episodes", default="", metavar="ID,ID", help="episodic context to scope in"
        )

    def handle(self, *args, project, json, verify, **options):
        target = self.get_project(project)
        if verify:
            return self._verify(target, Path(verify), json)
        missing = [f"--{n}" for n in ("kind", "audience", "out") if not options[n]]
        if missing:
            raise self.fail(f"missing {', '.join(missing)} (or pass --verify DIR)")
        try:
            episodes = tuple(int(x) for x in options["episodes"].split(",") if x.strip())
        except ValueError:
            raise self.fail(
                f"--episodes takes ids separated by commas, not {options['episodes']!r}"
            ) from None
        try:
            export = export_create(
                project=target,
                options=ExportOptions(
                    kind=options["kind"],
                    audience=options["audience"],
                    budget=options["budget"],
                    episode_ids=episodes,
                ),
                actor=f"cli:{getpass.getuser()}",
                out=Path(options["out"]),
            )
        except InputError as exc:
            raise self.fail(str(exc)) from None
        except OSError as exc:
            raise self.fail(f"cannot write the export: {exc}") from None
        document = {
            **export_document(export, stale=False),
            "out": str(Path(options["out"]).resolve()),
        }
        if json:
            self.emit(document)
        else:
            for entry in export.files:
                self.stdout.write(f"{entry['sha256'][:12]}  {entry['size']:>8}  {entry['name']}")
            self.stdout.write(f"export #{export.pk} written to {document['out']}")

    def _verify(self, project, folder: Path, json: bool) -> None:
        try:
            result = export_verify(folder)
        except ValueError as exc:
            raise self.fail(str(exc)) from None
        manifest = result.manifest
        stale: list[str] = []
        if manifest.get("project") == project.slug and manifest.get("kind"):
            # The Exports page's rule, read from what the manifest says the export used.
            stale = stale_reasons({folder: Basis.of_manifest(project, manifest)})[folder]
        document = {**result.as_dict(), "stale": stale}
        if json:
            self.emit(document)
        elif result.ok:
            self.stdout.write(
                f"{folder}: every file matches {MANIFEST}"
                + (f"; stale against the current state: {'; '.join(stale)}" if stale else "")
            )
        if not result.ok:
            raise self.fail(f"verify failed: {result.summary()}")
