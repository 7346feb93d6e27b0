from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from dreaming.models import Candidate
from tests.dreaming_data import seed


def run_json(capsys, *args):
    call_command(*args, "--json")
    return json.loads(capsys.readouterr().out)


def test_dream_prints_the_contract_and_candidates_lists_them(project, capsys):
    seed(project)
    preview = run_json(capsys, "dream", "--project", project.slug, "--preview")
    assert set(preview) >= {
        "run_id",
        "status",
        "phases",
        "selected",
        "proposed",
        "duplicates",
        "conflicts",
        "blocked",
        "watermark_before",
        "watermark_after",
    }
    assert preview["status"] == "succeeded" and not Candidate.objects.exists()
    result = run_json(capsys, "dream", "--project", project.slug)
    assert result["proposed"] >= 1 and result["watermark_after"] > result["watermark_before"]
    candidates = run_json(capsys, "candidates", "--project", project.slug, "--status", "proposed")
    assert {
        "id",
        "text",
        "page_target",
        "score",
        "signals",
        "status",
        "lifecycle",
        "flags",
        "evidence",
    } <= set(candidates[0])
    assert {"episode_id", "locator", "source_sha256", "role"} <= set(candidates[0]["evidence"][0])
    conflicts = run_json(capsys, "conflicts", "--project", project.slug)
    assert conflicts and {"id", "status", "subject", "sides"} <= set(conflicts[0])
    assert conflicts[0]["sides"][0]["evidence"]


def test_dream_backfill_leaves_the_watermark(project, capsys):
    seed(project)
    result = run_json(
        capsys, "dream", "--project", project.slug, "--backfill", "2026-11-01", "2026-11-05"
    )
    assert result["selected"] > 0
    assert result["watermark_after"] == result["watermark_before"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dream", "--project", "nope"], "no project 'nope'"),
        (
            ["dream", "--project", "tidewater", "--backfill", "2026-13-01", "2026-11-05"],
            "YYYY-MM-DD",
        ),
        (
            ["dream", "--project", "tidewater", "--backfill", "2026-11-05", "2026-11-01"],
            "starts after it ends",
        ),
        (["candidates", "--project", "nope", "--json"], "no project"),
    ],
)
def test_bad_input_exits_2_with_a_reason(project, args, message):
    with pytest.raises(CommandError, match=message) as exc:
        call_command(*args)
    assert exc.value.returncode == 2
