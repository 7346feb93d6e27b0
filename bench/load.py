"""Load on the running server over loopback: reviewers approve while contributors upload.

Builds a throwaway project (its episodes through the real gate, `--candidates` open
candidates on them), starts the server as a separate process on 127.0.0.1 (gunicorn with
several workers and threads, as in production; `--server runserver` for Django's threaded
development server), and then, in parallel threads, for at most `--seconds`:

- each of `--reviewers` reviewers approves its own share of the candidates through the JSON
  API (read the candidate, approve with the version it read; a 409 because another approval
  changed the same page meanwhile is the documented answer: read again and retry);
- each of `--contributors` contributors records `--events` events through the API (each
  goes through the ingest gate, as an upload does).

Afterwards, with the server stopped, the database is checked for lost writes: every
approval answered 200 is an approved candidate with one claim, every event answered 201 is
one episode, and nothing else changed. Any other status (or a connection error) is an error.
The per-token write limit is raised for the run: this measures the server, not the limiter.

Run: ``python bench/load.py [--reviewers 4] [--contributors 4] [--candidates 200]
[--events 100] [--seconds 180] [--no-record] [--json]``. Exit code 1 on any error or lost
write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO_DIR, db_label, md_table, record, setup_django, synthetic_texts


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of `values` (q in 0..100)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered)) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(n_candidates: int, reviewers: int, contributors: int):
    """A project, its reviewers' and contributors' API tokens, and the open candidate ids."""
    from django.contrib.auth import get_user_model

    from api.services import token_create
    from dreaming.models import Candidate, CandidateEvidence
    from llmwiki.ingest import RawFile, ingest_files
    from llmwiki.models import Episode, Role
    from llmwiki.services import membership_set, project_create
    from llmwiki.vocabulary import STANDARD_PAGES

    users = get_user_model().objects
    owner = users.create_user("load-owner", password="x")
    project = project_create(slug="load", name="Load test", actor="bench", owner=owner)
    texts = synthetic_texts(400 + n_candidates, seed=7)
    lines = "".join(f"- {t}\n" for t in texts[:400])
    ingest_files(
        project=project,
        files=[RawFile("memory/2026-10-01.md", f"# 2026-10-01\n\n## Notes\n{lines}".encode())],
        actor=owner,
    )
    episode_ids = list(Episode.objects.filter(project=project).values_list("id", flat=True))
    targets = list(STANDARD_PAGES)
    Candidate.objects.bulk_create(
        Candidate(
            project=project,
            text=text,
            page_target=targets[i % len(targets)],
            route_reason="synthetic",
            memory_type=Episode.MemoryType.SEMANTIC,
            score=0.5,
            dedupe_key=f"load-{i}",
            subject_key=f"load-{i}",
            status=Candidate.Status.PROPOSED,
        )
        for i, text in enumerate(texts[400:])
    )
    ids = list(
        Candidate.objects.filter(project=project).order_by("id").values_list("id", flat=True)
    )
    CandidateEvidence.objects.bulk_create(
        CandidateEvidence(candidate_id=cid, episode_id=episode_ids[i % len(episode_ids)])
        for i, cid in enumerate(ids)
    )

    def token(name: str, scopes: tuple[str, ...]) -> str:
        # A token acts as its maintainer; each person has their own.
        user = users.create_user(name, password="x")
        membership_set(project=project, user=user, role=Role.MAINTAINER, actor="bench")
        return token_create(project=project, name=name, scopes=scopes, actor=user)[1]

    review_tokens = [token(f"reviewer-{i}", ("read", "review")) for i in range(reviewers)]
    write_tokens = [token(f"contributor-{i}", ("write-events",)) for i in range(contributors)]
    return project, ids, review_tokens, write_tokens


def snapshot(project) -> dict[str, object]:
    from dreaming.models import Candidate
    from llmwiki.models import Claim, Episode

    return {
        "approved": set(
            Candidate.objects.filter(project=project, status="approved").values_list(
                "id", flat=True
            )
        ),
        "open": Candidate.objects.filter(project=project, status="proposed").count(),
        "claims": Claim.objects.filter(project=project).count(),
        # An approval records one bookkeeping episode of its own.
        "approval_episodes": Episode.objects.filter(project=project, kind="approval").count(),
        "episodes": dict(
            Episode.objects.filter(project=project)
            .exclude(kind="approval")
            .values_list("id", "content")
        ),
    }


class Client:
    """A tiny JSON client over urllib that times each request by kind."""

    def __init__(self, base: str, token: str, timings, errors, lock) -> None:
        self.base, self.token = base, token
        self.timings, self.errors, self.lock = timings, errors, lock

    def call(self, kind: str, method: str, path: str, body=None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 -- our own http:// base
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
                status, payload = response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            status, payload = exc.code, json.loads(exc.read() or b"{}")
        except OSError as exc:
            status, payload = 0, {"message": repr(exc)}
        elapsed = (time.perf_counter() - started) * 1000
        with self.lock:
            self.timings[kind].append(elapsed)
        return status, payload

    def error(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


def reviewer(client: Client, slug: str, ids: list[int], deadline: float, approved, retries):
    for cid in ids:
        for _attempt in range(10):
            if time.monotonic() > deadline:
                return
            status, got = client.call(
                "read candidate", "GET", f"/api/projects/{slug}/candidates/{cid}"
            )
            if status != 200:
                client.error(f"GET candidate {cid}: {status} {got}")
                break
            body = {
                "candidate_version": got["version"],
                "page_revision_id": got["page_revision_id"],
            }
            status, out = client.call(
                "approve", "POST", f"/api/projects/{slug}/candidates/{cid}/approve", body
            )
            if status == 200:
                with client.lock:
                    approved.add(cid)
                break
            if status == 409:  # the page moved under us: read again, as a person would
                with client.lock:
                    retries[0] += 1
                continue
            client.error(f"approve {cid}: {status} {out}")
            break
        else:
            client.error(f"approve {cid}: still conflicting after 10 tries")


def contributor(client: Client, slug: str, n: int, who: int, deadline: float, posted):
    texts = synthetic_texts(n, seed=100 + who)
    for k, text in enumerate(texts):
        if time.monotonic() > deadline:
            return
        content = f"{text} (load contributor {who}, event {k})"
        status, out = client.call(
            "record event", "POST", f"/api/projects/{slug}/events", {"content": content}
        )
        if status == 201:
            with client.lock:
                posted[out["episode_id"]] = content
        else:
            client.error(f"event {who}/{k}: {status} {out}")


def start_server(data_dir: Path, port: int, kind: str, workers: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "LLMWIKI_DATA_DIR": str(data_dir),
        "LLMWIKI_DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LLMWIKI_SSL_REDIRECT": "0",
        "LLMWIKI_SECURE_COOKIES": "0",
        "LLMWIKI_API_WRITES_PER_MINUTE": "1000000",
        "DJANGO_SETTINGS_MODULE": "llmwiki.settings",
    }
    if kind == "gunicorn":
        cmd = [
            sys.executable, "-m", "gunicorn", "llmwiki.wsgi:application",
            "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", "4",
            "--log-level", "warning",
        ]  # fmt: skip
    else:
        cmd = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        cmd, cwd=REPO_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/openapi.json", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer within 60 s")


def stop_server(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


@dataclass
class Traffic:
    """What the clients saw: timings, errors, and the writes the server acknowledged."""

    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    approved: set[int] = field(default_factory=set)
    posted: dict[int, str] = field(default_factory=dict)
    retries: list[int] = field(default_factory=lambda: [0])
    wall: float = 0.0
    load_before: float = 0.0


def drive(base: str, slug: str, ids: list[int], review_tokens, write_tokens, args) -> Traffic:
    """Reviewers and contributors in parallel threads until done or the deadline."""
    traffic = Traffic()
    lock = threading.Lock()
    deadline = time.monotonic() + args.seconds

    def client(token: str) -> Client:
        return Client(base, token, traffic.timings, traffic.errors, lock)

    shares = len(review_tokens)
    threads = [
        threading.Thread(
            target=reviewer,
            args=(client(t), slug, ids[i::shares], deadline, traffic.approved, traffic.retries),
        )
        for i, t in enumerate(review_tokens)
    ]
    threads += [
        threading.Thread(
            target=contributor, args=(client(t), slug, args.events, i, deadline, traffic.posted)
        )
        for i, t in enumerate(write_tokens)
    ]
    traffic.load_before = os.getloadavg()[0]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    traffic.wall = time.perf_counter() - started
    return traffic


def lost_writes(before: dict, after: dict, traffic: Traffic) -> list[str]:
    """Every acknowledged write that is not in the database, and every change not asked for."""
    approved, posted = traffic.approved, traffic.posted
    lost = []
    if after["approved"] != before["approved"] | approved:
        lost.append(
            f"approved candidates: {len(after['approved'])} in the database, "
            f"{len(approved)} approvals answered 200"
        )
    for what in ("claims", "approval_episodes"):
        if after[what] != before[what] + len(approved):
            lost.append(f"{what}: {after[what]}, expected {before[what] + len(approved)}")
    if after["open"] != before["open"] - len(approved):
        lost.append(f"open candidates: {after['open']}, expected {before['open'] - len(approved)}")
    new_episodes = {k: v for k, v in after["episodes"].items() if k not in before["episodes"]}
    if new_episodes != posted:
        lost.append(f"episodes: {len(new_episodes)} new, {len(posted)} events answered 201")
    if any(after["episodes"][k] != v for k, v in before["episodes"].items()):
        lost.append("an episode stored before the run changed")
    return lost


def summarise(args, traffic: Traffic, lost: list[str]) -> dict:
    requests = sum(len(v) for v in traffic.timings.values())
    wall = traffic.wall
    return {
        "server": args.server,
        "reviewers": args.reviewers,
        "contributors": args.contributors,
        "wall_s": round(wall, 2),
        "requests": requests,
        "throughput_rps": round(requests / wall, 1) if wall else 0.0,
        "approved": len(traffic.approved),
        "events": len(traffic.posted),
        "stale_page_retries": traffic.retries[0],
        "errors": traffic.errors[:20],
        "error_count": len(traffic.errors),
        "lost": lost,
        "latency_ms": {
            kind: {
                "n": len(v),
                "p50": round(percentile(v, 50), 1),
                "p95": round(percentile(v, 95), 1),
                "max": round(max(v), 1),
            }
            for kind, v in sorted(traffic.timings.items())
        },
    }


def record_results(args, summary: dict, traffic: Traffic, lost: list[str], candidates: int):
    rows = [
        [kind, s["n"], s["p50"], s["p95"], s["max"]] for kind, s in summary["latency_ms"].items()
    ]
    server = args.server + (
        f" ({args.workers} workers × 4 threads)" if args.server == "gunicorn" else ""
    )
    errors = traffic.errors
    notes = [
        f"- {server} on 127.0.0.1, database {db_label()}; {args.reviewers} reviewers and "
        f"{args.contributors} contributors in parallel threads through the JSON API; "
        f"{dt.timedelta(seconds=round(traffic.wall))} wall, {summary['throughput_rps']} "
        f"requests/s; the machine's 1-minute load average was {traffic.load_before:.1f} at "
        "the start (other work shares these cores).",
        f"- Approved {len(traffic.approved)} of {candidates} candidates, recorded "
        f"{len(traffic.posted)} events; {traffic.retries[0]} approvals re-read after a 409 "
        "(another approval had moved the same page meanwhile).",
        f"- Errors: {len(errors)}. Lost writes: {len(lost)}"
        + (f" ({'; '.join(lost)})" if lost else "")
        + ".",
    ]
    table = md_table(["request", "count", "p50 ms", "p95 ms", "max ms"], rows)
    record("Load on the running server (bench/load.py)", [*table, "", *notes])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reviewers", type=int, default=4)
    parser.add_argument("--contributors", type=int, default=4)
    parser.add_argument("--candidates", type=int, default=200)
    parser.add_argument("--events", type=int, default=100, help="per contributor")
    parser.add_argument("--seconds", type=float, default=180.0, help="stop sending after this")
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--json", action="store_true", help="print one JSON summary only")
    args = parser.parse_args(argv)

    data_dir = setup_django()
    project, ids, review_tokens, write_tokens = build(
        args.candidates, args.reviewers, args.contributors
    )
    before = snapshot(project)
    from django.core.management import call_command
    from django.db import connections

    # The production server refuses to start without collected static files.
    call_command("collectstatic", interactive=False, verbosity=0)

    connections.close_all()

    port = free_port()
    proc = start_server(data_dir, port, args.server, args.workers)
    traffic = drive(
        f"http://127.0.0.1:{port}", project.slug, ids, review_tokens, write_tokens, args
    )
    server_log = stop_server(proc)
    lost = lost_writes(before, snapshot(project), traffic)
    if "Traceback" in server_log:
        traffic.errors.append("the server logged a traceback:\n" + server_log[-2000:])
    summary = summarise(args, traffic, lost)
    print(json.dumps(summary) if args.json else json.dumps(summary, indent=2))
    if not args.no_record:
        record_results(args, summary, traffic, lost, len(ids))
    return 1 if traffic.errors or lost else 0


if __name__ == "__main__":
    sys.exit(main())
