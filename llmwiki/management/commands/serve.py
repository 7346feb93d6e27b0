"""Run the web server and a django-q2 worker together; Ctrl-C stops both."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Start runserver and qcluster side by side and stop both cleanly on Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport: str, **options) -> None:
        python = sys.executable
        procs = [
            subprocess.Popen([python, "manage.py", "qcluster"]),
            subprocess.Popen([python, "manage.py", "runserver", "--noreload", addrport]),
        ]
        self.stdout.write(f"llmwiki is running at http://{addrport}/ (Ctrl-C stops it)")

        def stop(*_):
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGHUP, stop)
        try:
            while all(p.poll() is None for p in procs):
                time.sleep(0.5)
            failed = [p for p in procs if p.returncode]
            if failed:
                self.stderr.write(f"{failed[0].args[2]} exited with code {failed[0].returncode}")
        except KeyboardInterrupt:
            self.stdout.write("Stopping web server and worker…")
        finally:
            # SIGTERM, not SIGINT: children started from a non-interactive shell may
            # ignore SIGINT, and both runserver and qcluster stop cleanly on SIGTERM.
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            for p in procs:
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
