"""The project dashboard (maintainers) and the admin dashboard (staff): access, charts,
empty states, the day range, and query counts that do not grow with projects or days."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from llmwiki.services import project_create
from ops.charts import Line, chart, fmt, nice_ceiling, sparkline
from ops.dashboard_views import CHARTS
from tests.conftest import PASSWORD, make_user
from tests.dashboard_data import busy_project


def login(client, user):
    client.force_login(user)


def url(project):
    return f"/p/{project.slug}/dashboard/"


@pytest.fixture
def staff(db):
    return make_user("sam", is_staff=True)


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", "", PASSWORD)


def test_a_maintainer_sees_every_chart_as_svg_with_its_numbers(client, project, alice):
    busy_project(project)
    login(client, alice)
    r = client.get(url(project))
    assert r.status_code == 200
    html = r.content.decode()
    drawn = re.findall(r'<svg class="chart"[^>]*data-testid="chart-([a-z-]+)"', html)
    # busy_project has no episodes, escalations or claims: those three say so instead.
    assert set(drawn) == {s.key for s in CHARTS} - {"episodes", "questions", "citations"}
    assert 'data-testid="empty-questions"' in html
    assert 'data-testid="empty-episodes"' in html
    assert '<title id="review-t">Candidates</title>' in html
    assert "Promoted (approved), " in html  # a point's own title
    assert "<details>" in html and '<th scope="row">' in html  # the numbers as a table
    assert "p95 dreaming latency" in html and "4,000 ms" in html
    assert "stale" not in html.split('data-testid="export-status"')[1].split("</p>")[0]


@pytest.mark.parametrize(
    ("who", "status"), [("bob", 403), ("carol", 403), ("mallory", 404), ("root", 200)]
)
def test_only_maintainers_see_a_project_dashboard(
    client, project, bob, carol, mallory, root, who, status
):
    users = {"bob": bob, "carol": carol, "mallory": mallory, "root": root}
    login(client, users[who])
    assert client.get(url(project)).status_code == status


def test_the_dashboards_need_a_login(client, project):
    for path in (url(project), "/dashboard/"):
        r = client.get(path)
        assert r.status_code == 302 and "/accounts/login/" in r["Location"]


def test_the_admin_dashboard_is_for_staff_and_superusers(client, project, alice, staff, root):
    login(client, alice)  # maintains a project, not staff
    assert client.get("/dashboard/").status_code == 403
    for user in (staff, root):
        login(client, user)
        assert client.get("/dashboard/").status_code == 200


def test_the_admin_dashboard_has_a_row_per_project_and_charts_across_them(
    client, project, other_project, staff
):
    busy_project(project)
    busy_project(other_project)
    project_create(slug="quiet", name="Quiet", actor="system")
    login(client, staff)
    html = client.get("/dashboard/?days=7").content.decode()
    rows = re.findall(r'<tr data-testid="row-([a-z-]+)"', html)
    assert rows == ["elsewhere", "quiet", "tidewater"]  # by name
    tidewater = html.split('data-testid="row-tidewater"')[1].split("</tr>")[0]
    assert "/p/tidewater/dashboard/" in tidewater
    assert '<svg class="spark"' not in tidewater  # no episodes: a dash, not a flat line
    assert "current" in tidewater
    quiet = html.split('data-testid="row-quiet"')[1].split("</tr>")[0]
    assert "none" in quiet
    # Across projects: two approvals a day on days 1 and 3, none on day 8 (outside 7 days).
    review = html.split('data-testid="card-review"')[1].split("</section>")[0]
    assert review.count("Promoted (approved), ") == 7
    assert "Promoted (approved), " in review and ": 2</title>" in review


def test_a_new_project_says_there_is_nothing_yet_instead_of_empty_axes(client, project, alice):
    login(client, alice)
    html = client.get(url(project)).content.decode()
    assert 'data-testid="dashboard-empty"' in html
    assert "<svg" not in html.split("<main")[1]


def test_the_day_range_is_a_plain_get_form(client, project, alice):
    busy_project(project)
    login(client, alice)
    html = client.get(url(project) + "?days=7").content.decode()
    assert '<form class="card filters" method="get"' in html
    card = html.split('data-testid="card-rollbacks"')[1].split("</section>")[0]
    assert card.count('<th scope="row">') == 7
    html = client.get(url(project) + "?days=90").content.decode()
    card = html.split('data-testid="card-rollbacks"')[1].split("</section>")[0]
    assert card.count('<th scope="row">') == 90


@pytest.mark.parametrize("days", ["5", "abc", "-1"])
def test_a_range_not_offered_is_a_400_naming_the_choices(client, project, alice, staff, days):
    login(client, alice)
    r = client.get(url(project), {"days": days})
    assert r.status_code == 400
    assert "Choose a range of 7, 30 or 90 days" in r.content.decode()
    login(client, staff)
    assert client.get("/dashboard/", {"days": days}).status_code == 400


def test_the_project_home_links_the_dashboard_for_maintainers_only(client, project, alice, bob):
    login(client, alice)
    assert 'data-testid="dashboard-link"' in client.get(f"/p/{project.slug}/").content.decode()
    login(client, bob)
    assert 'data-testid="dashboard-link"' not in client.get(f"/p/{project.slug}/").content.decode()


def test_the_nav_links_the_admin_dashboard_for_staff_only(client, project, alice, staff):
    login(client, alice)
    assert 'href="/dashboard/"' not in client.get("/").content.decode()
    login(client, staff)
    assert 'href="/dashboard/"' in client.get("/").content.decode()


def make_projects(n, owner, start=0):
    projects = []
    for i in range(start, start + n):
        p = project_create(slug=f"p{i}", name=f"P{i}", actor="system", owner=owner)
        busy_project(p)
        projects.append(p)
    return projects


def count_queries(client, django_assert_num_queries, path, expected=None):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert client.get(path).status_code == 200
    if expected is not None:
        with django_assert_num_queries(expected):
            client.get(path)
    return len(ctx.captured_queries)


def test_the_project_dashboard_query_count_does_not_grow_with_days(
    client, alice, django_assert_num_queries
):
    [p] = make_projects(1, alice)
    login(client, alice)
    week = count_queries(client, django_assert_num_queries, url(p) + "?days=7")
    count_queries(client, django_assert_num_queries, url(p) + "?days=90", expected=week)


def test_the_admin_dashboard_query_count_does_not_grow_with_projects_or_days(
    client, alice, staff, django_assert_num_queries
):
    make_projects(1, alice)
    login(client, staff)
    small = count_queries(client, django_assert_num_queries, "/dashboard/?days=7")
    make_projects(5, alice, start=1)
    count_queries(client, django_assert_num_queries, "/dashboard/?days=90", expected=small)


def test_nice_ceiling_and_formats():
    assert [nice_ceiling(v) for v in (0, 0.3, 1, 3, 7, 11, 240, 260)] == [
        1.0,
        0.5,
        1,
        5,
        10,
        20,
        250,
        500,
    ]
    assert fmt(0.5, "percent") == "50.0%" and fmt(1, "percent") == "100%"
    assert fmt(2.5, "count") == "2.5" and fmt(12.5, "ms") == "12.5 ms"
    assert fmt(12_345, "ms") == "12.3 s" and fmt(40, "ms") == "40 ms"
    assert fmt(None, "count") == "–" and fmt(1.625, "ratio") == "1.62×"


def test_a_chart_splits_its_line_at_missing_days_and_escapes_labels():
    from datetime import date, timedelta

    days = tuple(date(2026, 11, 1) + timedelta(days=i) for i in range(5))
    c = chart("k", "T <b>", days, [Line("<x>", [1, 2, None, 3, 4])], unit="count")
    svg = str(c.svg)
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 4
    assert "<b>" not in svg and "&lt;x&gt;, 2026-11-04: 3" in svg
    assert 'role="img"' in svg and 'aria-labelledby="k-t k-d"' in svg
    assert "latest 4 on 2026-11-05, highest 4 on 2026-11-05" in svg
    zeros = chart("z", "Z", days, [Line("z", [0] * 5)], unit="count")
    assert zeros.empty and str(zeros.svg) == ""
    rate = chart("r", "R", days, [Line("r", [0.0, None, None, None, None])], unit="percent")
    assert not rate.empty  # 0% is a value
    assert "&lt;script&gt;" in str(sparkline([1, 2], "<script>", "count"))
