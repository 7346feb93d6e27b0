"""manage.py review: the web action's gates and refusals, from the command line."""

from __future__ import annotations

import json
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from dreaming import services as dreaming
from dreaming.models import Candidate
from llmwiki.models import AuditEvent, Claim
from tests.conftest import make_user
from tests.dreaming_data import seed


@pytest.fixture
def staging(project) -> Candidate:
    seed(project)
    run = dreaming.dream_request(project=project, trigger="manual", actor="t", enqueue=False)
    dreaming.dream_execute(run_id=run.pk)
    return Candidate.objects.get(project=project, text__contains="db-staging-2")


def review(capsys, *args: str) -> tuple[int, str, str]:
    """Run the command; return (exit code, stdout, stderr) as a shell would see them."""
    try:
        call_command("review", "--project", "tidewater", *args)
        code = 0
    except CommandError as exc:
        code = exc.returncode
        print(exc, file=sys.stderr)
    out, err = capsys.readouterr()
    return code, out, err


def denials(candidate) -> list[str]:
    return list(
        AuditEvent.objects.filter(action="review.denied", object_id=str(candidate.pk)).values_list(
            "note", flat=True
        )
    )


def test_it_approves_as_a_reviewer_and_prints_one_json_document(staging, bob, capsys):
    code, out, err = review(
        capsys, "--candidate", str(staging.pk), "--approve", "--as", "bob", "--json"
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    claim = Claim.objects.get(pk=document["claim_id"])
    assert document["status"] == "approved" and document["reviewer"] == "bob"
    assert claim.page.current_revision_id == document["revision_id"]
    staging.refresh_from_db()
    assert staging.status == "approved" and staging.claim == claim


def test_a_superuser_without_membership_counts_as_a_maintainer(staging, capsys):
    make_user("admin", is_superuser=True, is_staff=True)
    code, out, _ = review(capsys, "--candidate", str(staging.pk), "--approve", "--as", "admin")
    assert code == 0 and "approved" in out


def test_a_viewer_is_refused_with_exit_2_one_line_and_a_denied_row(staging, carol, capsys):
    code, out, err = review(
        capsys, "--candidate", str(staging.pk), "--approve", "--as", "carol", "--json"
    )
    assert code == 2 and out == ""
    assert err.strip() == "refused: reviewing needs the reviewer role"
    assert denials(staging) == ["approve: reviewing needs the reviewer role"]
    staging.refresh_from_db()
    assert staging.status == "proposed" and not Claim.objects.exists()


def test_an_outsider_is_refused_like_a_viewer(staging, mallory, capsys):
    code, _, err = review(capsys, "--candidate", str(staging.pk), "--defer", "--as", "mallory")
    assert code == 2 and "reviewer role" in err
    assert len(denials(staging)) == 1


def test_sensitive_material_needs_a_maintainer_and_the_confirmation(staging, alice, bob, capsys):
    Candidate.objects.filter(pk=staging.pk).update(flags=["pii:email"])
    code, _, err = review(capsys, "--candidate", str(staging.pk), "--approve", "--as", "bob")
    assert code == 2 and "needs a maintainer" in err
    code, _, err = review(capsys, "--candidate", str(staging.pk), "--approve", "--as", "alice")
    assert code == 2 and "confirm that you reviewed" in err
    assert len(denials(staging)) == 2 and not Claim.objects.exists()
    code, _, _ = review(
        capsys,
        *("--candidate", str(staging.pk), "--approve", "--as", "alice", "--confirm-sensitive"),
    )
    assert code == 0 and Claim.objects.count() == 1


def test_a_reject_without_a_reason_is_refused_and_with_one_it_is_done(staging, bob, capsys):
    code, _, err = review(capsys, "--candidate", str(staging.pk), "--reject", "--as", "bob")
    assert code == 2 and "reason is required" in err and len(denials(staging)) == 1
    code, _, _ = review(
        capsys, "--candidate", str(staging.pk), "--reject", "--as", "bob", "--note", "duplicate"
    )
    staging.refresh_from_db()
    assert code == 0 and staging.status == "rejected"


def test_deferring_twice_is_refused_the_second_time(staging, bob, capsys):
    assert review(capsys, "--candidate", str(staging.pk), "--defer", "--as", "bob")[0] == 0
    code, _, err = review(capsys, "--candidate", str(staging.pk), "--defer", "--as", "bob")
    assert code == 2 and "already deferred" in err


def test_a_decided_candidate_is_refused(staging, bob, capsys):
    review(capsys, "--candidate", str(staging.pk), "--approve", "--as", "bob")
    code, _, err = review(
        capsys, "--candidate", str(staging.pk), "--reject", "--as", "bob", "--note", "x"
    )
    assert code == 2 and "no longer awaiting review" in err


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--candidate", "999999", "--approve", "--as", "bob"], "no candidate #999999"),
        (["--candidate", "{pk}", "--approve", "--as", "nobody"], "no active user 'nobody'"),
    ],
)
def test_bad_input_exits_2_naming_what_was_wrong(staging, bob, capsys, args, reason):
    args = [a.format(pk=staging.pk) for a in args]
    code, out, err = review(capsys, *args)
    assert code == 2 and out == "" and reason in err


def test_a_candidate_of_another_project_is_not_found(staging, other_project, bob, capsys):
    try:
        call_command(
            "review",
            "--project",
            "elsewhere",
            "--candidate",
            str(staging.pk),
            "--approve",
            "--as",
            "bob",
        )
    except CommandError as exc:
        assert exc.returncode == 2 and "no candidate" in str(exc)
    else:
        pytest.fail("reviewed a candidate through another project")


def test_a_command_that_succeeds_prints_nothing_on_stderr(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "LLMWIKI_DATA_DIR": str(tmp_path)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=root, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0
    assert done.stderr == ""
