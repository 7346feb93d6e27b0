"""Responses to members are never cached; a refusal is logged as one line."""

from __future__ import annotations

import logging

from django.urls import reverse


def test_it_tells_caches_not_to_store_pages_shown_to_a_member(client, carol, project):
    client.force_login(carol)
    for name in ("project_home", "episode_list", "reviews:pages"):
        response = client.get(reverse(name, args=[project.slug]))
        assert response.status_code == 200
        assert "no-store" in response["Cache-Control"], name
        assert "private" in response["Cache-Control"]


def test_a_refused_page_is_not_stored_either(client, carol, project):
    client.force_login(carol)
    response = client.get(reverse("reviews:queue", args=[project.slug]))
    assert response.status_code == 403
    assert "no-store" in response["Cache-Control"]


def test_it_logs_a_403_as_one_line_with_its_reason(client, carol, project, caplog):
    client.force_login(carol)
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("reviews:queue", args=[project.slug]))
    assert response.status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    assert len(records) == 1
    record = records[0]
    assert record.exc_info is None
    line = record.getMessage()
    assert line == (
        f"Forbidden (Permission denied): /p/{project.slug}/review/ "
        "(This needs the reviewer role on Tidewater; you are viewer.)"
    )
    assert "Traceback" not in caplog.text
    assert "\n" not in caplog.handler.format(record)


def test_a_real_error_still_logs_its_traceback(caplog):
    """Only refusals are shortened: an exception that is not a 403 keeps its traceback."""
    logger = logging.getLogger("django.request")
    try:
        raise ValueError("boom")
    except ValueError:
        with caplog.at_level(logging.ERROR, logger="django.request"):
            logger.error("Internal Server Error: /x/", exc_info=True)
    assert "Traceback" in caplog.text and "ValueError: boom" in caplog.text
