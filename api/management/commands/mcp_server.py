"""manage.py mcp_server --project SLUG --token TOKEN: the MCP server over stdio."""

from __future__ import annotations

import os

from api.mcp_server import build_server, check_token
from api.services import NotFound, Unauthorized
from llmwiki.management.base import ProjectCommand


class Command(ProjectCommand):
    help = "Serve the project's memory to an MCP client over stdin/stdout."

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--token",
            default=os.environ.get("LLMWIKI_API_TOKEN", ""),
            help="an API token of the project (default: $LLMWIKI_API_TOKEN)",
        )

    def handle(self, *args, project, token, **options):
        self.get_project(project)
        if not token:
            raise self.fail("give --token or set LLMWIKI_API_TOKEN (Settings → API tokens)")
        try:
            check_token(project, token)
        except (Unauthorized, NotFound) as exc:
            raise self.fail(str(exc)) from None
        # stdout is the protocol channel from here on: nothing else may be written there.
        build_server(project, token).run("stdio")
