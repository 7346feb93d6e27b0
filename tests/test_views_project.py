from __future__ import annotations

from django.test import Client
from django.urls import reverse

from tests.conftest import PASSWORD


def test_it_redirects_anonymous_users_to_login(client, project):
    response = client.get(reverse("project_home", args=[project.slug]))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_it_lists_only_my_projects(client, carol, project, other_project):
    client.force_login(carol)
    response = client.get(reverse("project_list"))
    assert response.status_code == 200
    assert b"Tidewater" in response.content
    assert b"Elsewhere" not in response.content


def test_it_shows_an_empty_state_without_projects(client, mallory):
    client.force_login(mallory)
    response = client.get(reverse("project_list"))
    assert b"No projects yet" in response.content


def test_it_shows_counts_per_layer(client, carol, project, django_assert_max_num_queries):
    client.force_login(carol)
    with django_assert_max_num_queries(15):
        response = client.get(reverse("project_home", args=[project.slug]))
    assert response.status_code == 200
    assert response.context["layers"]["episodes"] == 0
    assert response.context["layers"]["pages"] == 6
    assert b"Memory layers" in response.content


def test_an_outsider_gets_404(client, mallory, project):
    client.force_login(mallory)
    response = client.get(reverse("project_home", args=[project.slug]))
    assert response.status_code == 404
    assert b"Tidewater" not in response.content


def test_a_missing_project_is_404_too(client, carol):
    client.force_login(carol)
    assert client.get(reverse("project_home", args=["nope"])).status_code == 404


def test_project_pages_refuse_post(client, carol, project):
    client.force_login(carol)
    assert client.post(reverse("project_home", args=[project.slug])).status_code == 405


def test_a_superuser_sees_every_project(client, project, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password=PASSWORD)
    client.force_login(admin)
    assert client.get(reverse("project_home", args=[project.slug])).status_code == 200


def test_every_response_carries_a_content_security_policy(client, carol, project):
    client.force_login(carol)
    response = client.get(reverse("project_home", args=[project.slug]))
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]


def test_the_body_carries_the_csrf_token_for_htmx(client, carol, project):
    client.force_login(carol)
    response = client.get(reverse("project_home", args=[project.slug]))
    assert b'hx-headers=\'{"x-csrftoken": "' in response.content


def test_a_post_without_csrf_token_is_refused(project, carol):
    client = Client(enforce_csrf_checks=True)
    client.force_login(carol)
    response = client.post(reverse("logout"))
    assert response.status_code == 403
    assert b"Form expired" in response.content


def test_an_htmx_post_with_the_csrf_header_passes(project, carol):
    client = Client(enforce_csrf_checks=True)
    client.force_login(carol)
    page = client.get(reverse("project_list"))
    token = page.context["csrf_token"]
    response = client.post(
        reverse("logout"), headers={"HX-Request": "true", "X-CSRFToken": str(token)}
    )
    assert response.status_code == 302


def test_login_and_logout_work_with_a_password(client, carol):
    response = client.post(reverse("login"), {"username": "carol", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("project_list")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("project_list")).status_code == 302


def test_a_wrong_password_shows_an_error(client, carol):
    response = client.post(reverse("login"), {"username": "carol", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_the_project_list_shows_counts_in_a_constant_number_of_queries(
    client, alice, project, django_assert_max_num_queries
):
    from llmwiki.services import project_create
    from tests.dreaming_data import seed

    seed(project)
    for i in range(5):
        project_create(slug=f"extra-{i}", name=f"Extra {i}", actor="t", owner=alice)
    client.force_login(alice)
    with django_assert_max_num_queries(6):
        response = client.get(reverse("project_list"))
    tidewater = next(p for p in response.context["projects"] if p.slug == "tidewater")
    assert tidewater.counts["episodes"] == project.episodes.count() > 0
