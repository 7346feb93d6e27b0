"""Run the web server and a django-q2 worker together; Ctrl-C stops both.

Both children get SIGTERM from the kernel if this process dies, even by SIGKILL, so a
worker is never left behind; `--exit-with-parent` (used by `make run`) ties this process
to its own parent the same way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from llmwiki.deploy import child_preexec, exit_with_parent, static_files_problem, stop_all
from llmwiki.settings import env_int


class Command(BaseCommand):
    help = "Start the web server and qcluster side by side and stop both together."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument(
            "--production",
            action="store_true",
            help="gunicorn instead of the development server (needs collectstatic, DEBUG off)",
        )
        parser.add_argument(
            "--web-workers",
            type=int,
            default=None,
            help="gunicorn worker processes (default LLMWIKI_WEB_WORKERS, else 2)",
        )
        parser.add_argument(
            "--exit-with-parent",
            action="store_true",
            help="stop when the process that started this one ends, however it ends",
        )

    def web_command(self, addrport: str, production: bool, workers: int | None) -> list[str]:
        if not production:
            return [sys.executable, "manage.py", "runserver", "--noreload", addrport]
        if settings.DEBUG:
            raise CommandError("--production needs LLMWIKI_DEBUG off")
        if problem := static_files_problem():
            raise CommandError(problem)
        workers = workers or env_int("LLMWIKI_WEB_WORKERS", 2, minimum=1)
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "llmwiki.wsgi:application",
            f"--bind={addrport}",
            f"--workers={workers}",
            "--access-logfile=-",
            # A sweep never runs in the web process; a request this slow is stuck.
            "--timeout=60",
            "--graceful-timeout=20",
        ]

    def handle(self, *args, addrport: str, production: bool, **options) -> None:
        if options["exit_with_parent"]:
            exit_with_parent(os.getppid())
        web = self.web_command(addrport, production, options["web_workers"])

        def stop(*_):
            raise KeyboardInterrupt

        # Before the children start: a signal between two Popen calls must still stop both.
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGHUP, stop)
        procs: list[subprocess.Popen] = []
        failed = None
        try:
            for command in ([sys.executable, "manage.py", "qcluster"], web):
                # A group of its own, so a kill at the end of the grace takes the child's
                # own children with it; Ctrl-C reaches this process, which stops both.
                procs.append(subprocess.Popen(command, preexec_fn=child_preexec(), process_group=0))
            self.stdout.write(f"llmwiki is running at http://{addrport}/ (Ctrl-C stops it)")
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
            failed = next(p for p in procs if p.poll() is not None)
            self.stderr.write(f"{' '.join(failed.args[1:4])} exited with code {failed.returncode}")
        except KeyboardInterrupt:
            self.stdout.write("Stopping web server and worker…")
        finally:
            # SIGTERM, not SIGINT: children started from a non-interactive shell may
            # ignore SIGINT, and runserver, gunicorn and qcluster all stop cleanly on SIGTERM.
            # The worker lets a running task finish before it exits; give it time
            # before the kill, which would leave that task to the retry.
            stop_all(procs, grace=45)
        if failed is not None:
            raise CommandError("one of the two processes ended on its own; both are stopped")
