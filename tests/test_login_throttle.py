"""Login throttling (django-axes): wrong passwords lock one username from one address."""

from __future__ import annotations

from datetime import timedelta

from axes.models import AccessAttempt
from django.urls import reverse

from tests.conftest import PASSWORD


def log_in(client, username, password, addr="203.0.113.7"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=addr
    )


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_fifteen_wrong_passwords_then_the_right_one_is_refused(client, carol):
    for _ in range(15):
        response = log_in(client, "carol", "wrong-password")
        assert response.status_code in (200, 429)
    response = log_in(client, "carol", PASSWORD)
    assert response.status_code == 429
    assert not logged_in(client)
    body = response.content.decode()
    assert "Log-in locked for 15 minutes" in body
    assert "after 5 failed attempts to log in as <strong>carol</strong> from this address" in body
    assert "even with the right password" in body


def test_the_lock_starts_at_the_fifth_failure(client, carol):
    for _ in range(4):
        assert log_in(client, "carol", "wrong-password").status_code == 200
    assert log_in(client, "carol", "wrong-password").status_code == 429


def test_the_lock_holds_one_username_from_one_address(client, carol, bob):
    for _ in range(5):
        log_in(client, "carol", "wrong-password")
    assert log_in(client, "bob", PASSWORD).status_code == 302  # a colleague on the same network
    client.logout()
    # Nobody elsewhere can lock carol out of her own account.
    assert log_in(client, "carol", PASSWORD, addr="198.51.100.4").status_code == 302


def test_the_lock_lifts_after_the_cool_off(client, carol):
    for _ in range(5):
        log_in(client, "carol", "wrong-password")
    assert log_in(client, "carol", PASSWORD).status_code == 429
    attempt = AccessAttempt.objects.get(username="carol")
    attempt.attempt_time -= timedelta(minutes=16)
    attempt.save()
    assert log_in(client, "carol", PASSWORD).status_code == 302
    assert logged_in(client)


def test_a_successful_log_in_forgets_earlier_failures(client, carol):
    for _ in range(4):
        log_in(client, "carol", "wrong-password")
    assert log_in(client, "carol", PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        assert log_in(client, "carol", "wrong-password").status_code == 200
