"""Daily logs (OpenClaw memory/YYYY-MM-DD.md): entries, times, agents, sleep blocks skipped."""

from __future__ import annotations

import pytest

from llmwiki.importers import (
    EpisodeDraft,
    TextFile,
    is_daily_log,
    is_dreaming_artifact,
    parse_daily_log,
)
from tests.unit.importers.files import by_content, dt, fixture

# --- daily logs -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def daily() -> list[EpisodeDraft]:
    return parse_daily_log(fixture("memory/2026-04-13.md"))


def test_it_skips_light_sleep_and_rem_sleep_blocks(daily: list[EpisodeDraft]) -> None:
    text = "\n".join(d.content for d in daily)
    assert "Tuesdays" not in text
    assert "recalls=0" not in text
    assert "queue reliability" not in text
    # The skip ends at the next heading of the same level.
    assert "Closed the incident ticket." in text


def test_it_takes_the_day_from_the_file_name_and_times_from_entries(
    daily: list[EpisodeDraft],
) -> None:
    assert by_content(daily, "deployed v2").occurred_at == dt("2026-04-13T09:14:00")
    assert by_content(daily, "Workers stalled").occurred_at == dt("2026-04-13T14:02:00")
    assert by_content(daily, "14:30 handoff").occurred_at == dt("2026-04-13T14:30:00")
    assert by_content(daily, "Closed the incident").occurred_at == dt("2026-04-13T16:45:00")


def test_it_keeps_order_with_a_second_per_untimed_entry(daily: list[EpisodeDraft]) -> None:
    assert by_content(daily, "checked the dashboards").occurred_at == dt("2026-04-13T09:14:01")
    assert by_content(daily, "smoke-test").occurred_at == dt("2026-04-13T09:14:02")
    times = [d.occurred_at for d in daily]
    assert times == sorted(times)
    untimed = parse_daily_log(TextFile("memory/2026-04-14.md", "- one\n- two\n- three\n"))
    assert [d.occurred_at for d in untimed] == [
        dt("2026-04-14T00:00:00"),
        dt("2026-04-14T00:00:01"),
        dt("2026-04-14T00:00:02"),
    ]


def test_it_marks_shell_lines_and_ran_output_as_tool_calls(daily: list[EpisodeDraft]) -> None:
    assert by_content(daily, "$ make smoke-test").kind == "tool_call"
    recovery = by_content(daily, "recovered 12 leases")
    assert recovery.kind == "tool_call"
    assert recovery.locator["lines"] == [8, 12]
    assert by_content(daily, "deployed v2").kind == "log_entry"


def test_it_reads_the_agent_from_a_heading_or_front_matter(daily: list[EpisodeDraft]) -> None:
    assert {d.actor for d in daily} == {"agent:scout"}
    assert all("Agent" not in d.locator["section"] for d in daily)
    fm = parse_daily_log(TextFile("2026-04-14.md", "---\nagent: ops-bot\n---\n- restarted q\n"))
    assert fm[0].actor == "agent:ops-bot"
    plain = parse_daily_log(TextFile("2026-04-14.md", "- restarted q\n"))
    assert plain[0].actor == "agent:main"


def test_a_nested_sleep_block_is_skipped_until_a_heading_of_its_level() -> None:
    text = (
        "## 10:00 Morning\n- real entry\n### REM Sleep\n- dream text\n#### Themes\n- more\n"
        "### Afterwards\n- kept entry\n"
    )
    drafts = parse_daily_log(TextFile("2026-04-13.md", text))
    assert [d.content for d in drafts] == ["- real entry", "- kept entry"]


def test_it_uses_an_hhmm_file_name_suffix_as_the_base_time() -> None:
    drafts = parse_daily_log(TextFile("memory/2026-04-13-1430.md", "- session reset\n"))
    assert drafts[0].occurred_at == dt("2026-04-13T14:30:00")


def test_it_understands_am_pm_times_and_bare_time_headings() -> None:
    text = "- 3:45pm call with ops\n## 16:00\n## 17:10 shipped the fix\n"
    drafts = parse_daily_log(TextFile("2026-04-13.md", text))
    assert [(d.content, d.occurred_at) for d in drafts] == [
        ("- 3:45pm call with ops", dt("2026-04-13T15:45:00")),
        ("17:10 shipped the fix", dt("2026-04-13T17:10:00")),
    ]


def test_it_recognises_daily_log_names_and_dreaming_artifacts() -> None:
    assert is_daily_log("memory/2026-04-13.md")
    assert is_daily_log("memory/2026-04-13-clash-fix.md")
    assert not is_daily_log("memory/2026-13-45.md")
    assert not is_daily_log("memory/2026-04-13.txt")
    assert not is_daily_log("memory/dreaming/deep/2026-04-13.md")
    assert is_dreaming_artifact("memory/dreaming/rem/2026-04-13.md")
    assert is_dreaming_artifact("workspace/memory/.dreams/recall.json")
    assert is_dreaming_artifact("DREAMS.md")
    assert is_dreaming_artifact("dreams.md")
    assert not is_dreaming_artifact("notes/dreaming-ideas.md")


def test_it_reads_the_agent_from_an_openclaw_title_line():
    from llmwiki.importers.base import TextFile
    from llmwiki.importers.daily_log import parse_daily_log

    drafts = parse_daily_log(
        TextFile(
            "memory/2026-11-02.md", "# 2026-11-02 — agent:builder\n\n## Done\n- shipped the thing\n"
        )
    )
    assert {d.actor for d in drafts} == {"agent:builder"}
