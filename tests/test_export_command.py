"""manage.py export (and --verify), in process and end to end on a fresh database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from llmwiki.models import Export
from tests.dreaming_data import DAYS
from tests.export_data import build_wiki

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def wiki(project, alice, settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"
    return build_wiki(project, alice)


def run(capsys, *args: str) -> tuple[int, str, str]:
    try:
        call_command("export", "--project", "tidewater", *args)
        code = 0
    except CommandError as exc:
        code = exc.returncode
        sys.stderr.write(str(exc))
    out, err = capsys.readouterr()
    return code, out, err


def test_it_writes_a_handoff_bundle_and_prints_one_json_document(wiki, capsys, tmp_path):
    out = tmp_path / "bundle"
    code, stdout, err = run(
        capsys, "--kind", "handoff", "--audience", "internal", "--out", str(out), "--json"
    )
    assert (code, err) == (0, "")
    document = json.loads(stdout)
    export = Export.objects.get(pk=document["export_id"])
    assert {f["name"] for f in document["files"]} == {p.name for p in out.iterdir()}
    assert document["withheld"] == {"claim:pii-flagged": 1}
    assert sorted(export.claims.values_list("id", flat=True)) == document["claims"]


def test_bundle_is_the_handoff_kind(wiki, capsys, tmp_path):
    code, stdout, _ = run(
        capsys, "--kind", "bundle", "--audience", "public", "--out", str(tmp_path), "--json"
    )
    assert code == 0 and json.loads(stdout)["kind"] == "handoff"


def test_verify_exits_0_on_a_good_folder_and_2_naming_a_changed_file(wiki, capsys, tmp_path):
    run(capsys, "--kind", "system-profile", "--audience", "internal", "--out", str(tmp_path))
    code, stdout, _ = run(capsys, "--verify", str(tmp_path), "--json")
    assert code == 0 and json.loads(stdout) == {
        "ok": True,
        "differs": [],
        "missing": [],
        "unlisted": [],
        "stale": [],
    }
    target = tmp_path / "SYSTEM_PROFILE.md"
    data = bytearray(target.read_bytes())
    data[-2] ^= 0x20
    target.write_bytes(bytes(data))
    code, stdout, err = run(capsys, "--verify", str(tmp_path), "--json")
    assert code == 2 and err.strip() == "verify failed: SYSTEM_PROFILE.md differs"
    assert json.loads(stdout)["differs"] == ["SYSTEM_PROFILE.md"]


def test_verify_says_why_the_folder_is_stale_against_the_current_state(
    wiki, capsys, tmp_path, alice
):
    from llmwiki.wiki import claim_retract

    run(capsys, "--kind", "system-profile", "--audience", "internal", "--out", str(tmp_path))
    claim_retract(claim=wiki["queue"], actor=alice, reason="moved on")
    code, stdout, _ = run(capsys, "--verify", str(tmp_path), "--json")
    document = json.loads(stdout)
    assert code == 0 and document["ok"]
    page = wiki["queue"].page
    page.refresh_from_db()
    number = page.current_revision.number
    assert document["stale"] == [
        f"claim {wiki['queue'].pk} is no longer approved",
        f"{page.key} r{number - 1} is no longer current (now r{number})",
    ]
    code, stdout, _ = run(capsys, "--verify", str(tmp_path))
    assert "stale against the current state: claim" in stdout


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--kind", "handoff", "--audience", "internal"], "missing --out"),
        (
            [
                "--kind",
                "startup-packet",
                "--audience",
                "internal",
                "--out",
                "{tmp}",
                "--budget",
                "5",
            ],
            "below the minimum",
        ),
        (
            ["--kind", "handoff", "--audience", "internal", "--out", "{tmp}", "--episodes", "x"],
            "--episodes takes ids",
        ),
        (["--verify", "{tmp}/nowhere"], "is not a directory"),
        (["--verify", "{tmp}"], "MANIFEST.json does not exist"),
    ],
)
def test_bad_input_exits_2_with_one_line(wiki, capsys, tmp_path, args, reason):
    code, stdout, err = run(capsys, *[a.format(tmp=tmp_path) for a in args])
    assert code == 2 and stdout == "" and reason in err and "\n" not in err.strip()
    assert not Export.objects.exists()


def test_review_then_export_work_from_a_fresh_database_after_ingest_and_dream(tmp_path):
    """The issue's check, run as a shell would: real processes, a new data directory."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LLMWIKI_")
        and k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}
    }
    env.update(
        LLMWIKI_DATA_DIR=str(tmp_path / "data"),
        LLMWIKI_DEBUG="1",
        DJANGO_SUPERUSER_PASSWORD="correct-horse-battery-staple",
    )
    corpus = tmp_path / "corpus"
    for path, text in DAYS.items():
        (corpus / path).parent.mkdir(parents=True, exist_ok=True)
        (corpus / path).write_text(text)

    def manage(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert (done.returncode == 0) == ok, done.stderr
        return done

    manage("migrate", "-v0")
    manage("createsuperuser", "--noinput", "--username", "admin", "--email", "a@example.com")
    manage("ingest", "--project", "tw", "--create", str(corpus), "--json")
    assert json.loads(manage("dream", "--project", "tw", "--json").stdout)["proposed"] > 0
    candidates = json.loads(manage("candidates", "--project", "tw", "--json").stdout)
    pick = next(c for c in candidates if c["status"] == "proposed" and not c["flags"])
    approved = manage(
        "review",
        "--project",
        "tw",
        "--candidate",
        str(pick["id"]),
        "--approve",
        "--as",
        "admin",
        "--json",
    )
    claim_id = json.loads(approved.stdout)["claim_id"]
    out = tmp_path / "handoff"
    exported = manage(
        "export",
        "--project",
        "tw",
        "--kind",
        "handoff",
        "--audience",
        "internal",
        "--out",
        str(out),
        "--json",
    )
    assert json.loads(exported.stdout)["claims"] == [claim_id]
    assert f"/claims/{claim_id}/" in (out / f"{pick['page_target']}.md").read_text()
    verified = manage("export", "--project", "tw", "--verify", str(out), "--json")
    assert json.loads(verified.stdout)["ok"] is True
    refused = manage(
        "review",
        "--project",
        "tw",
        "--candidate",
        str(pick["id"]),
        "--reject",
        "--as",
        "admin",
        "--note",
        "again",
        ok=False,
    )
    # The last line: django-axes announces itself on stderr when a process starts.
    last = refused.stderr.strip().splitlines()[-1]
    assert refused.returncode == 2 and last.startswith("CommandError: refused: candidate #")
