from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from llmwiki import settings as app_settings

ROOT = Path(__file__).resolve().parent.parent


def run_settings(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    # The test settings export LLMWIKI_* defaults; a child must see only what we pass.
    full_env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL"}
        and not k.startswith("LLMWIKI_")
    }
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("name", "value", "helper"),
    [
        ("X_BOOL", "maybe", lambda: app_settings.env_bool("X_BOOL")),
        ("X_INT", "ten", lambda: app_settings.env_int("X_INT", 1)),
        ("X_INT", "-3", lambda: app_settings.env_int("X_INT", 1, minimum=0)),
    ],
)
def test_it_names_the_variable_with_a_bad_value(monkeypatch, name, value, helper):
    monkeypatch.setenv(name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        helper()


def test_it_parses_a_postgres_url():
    db = app_settings.database_from_url("postgres://u%40x:p%3Ass@db.example:5433/llm")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "u@x",
        "p:ss",
        "db.example",
        "5433",
        "llm",
    )


def test_it_parses_a_sqlite_url_keeping_wal_and_immediate_transactions(tmp_path):
    db = app_settings.database_from_url(f"sqlite:///{tmp_path}/llm.sqlite3")
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == tmp_path / "llm.sqlite3"
    assert db["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert db["OPTIONS"]["timeout"] >= 1
    assert "journal_mode=WAL" in db["OPTIONS"]["init_command"]


def test_a_sqlite_url_runs_the_app_on_that_file(tmp_path):
    target = tmp_path / "elsewhere.sqlite3"
    result = run_settings(
        {"LLMWIKI_DATA_DIR": str(tmp_path / "data"), "DATABASE_URL": f"sqlite:///{target}"},
        "migrate",
        "-v0",
    )
    assert result.returncode == 0, result.stderr
    assert target.exists() and not (tmp_path / "data" / "llmwiki.sqlite3").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://x/y", "postgres:// or sqlite:///"),
        ("postgres://host/", "no database name"),
        ("postgres://h:port/x", "not a valid URL"),
        ("sqlite://:memory:", "names no SQLite file"),
    ],
)
def test_it_refuses_a_bad_database_url(url, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        app_settings.database_from_url(url)


def test_sqlite_runs_in_wal_with_immediate_transactions(db):
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite-only settings")
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 1000


def test_task_retry_is_longer_than_timeout():
    assert settings.Q_CLUSTER["retry"] > settings.Q_CLUSTER["timeout"]
    assert settings.Q_CLUSTER["catch_up"] is False
    assert settings.Q_CLUSTER["max_attempts"] >= 1


def test_a_bad_environment_value_stops_startup_with_its_name(tmp_path):
    result = run_settings({"LLMWIKI_DATA_DIR": str(tmp_path), "LLMWIKI_DEBUG": "perhaps"}, "check")
    assert result.returncode != 0
    assert "LLMWIKI_DEBUG" in result.stderr


def test_the_secret_key_is_generated_once_into_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    first = app_settings.load_secret_key(tmp_path)
    assert (tmp_path / "secret_key").read_text() == first
    assert app_settings.load_secret_key(tmp_path) == first


def test_deploy_checks_pass_under_production_settings(tmp_path):
    result = run_settings(
        {
            "LLMWIKI_DATA_DIR": str(tmp_path),
            "SECRET_KEY": "x" * 20 + "production-secret-key-that-is-long-enough-0123456789",
            "ALLOWED_HOSTS": "wiki.example.com",
        },
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_public_url_without_a_scheme_stops_startup_with_the_variable_named(tmp_path):
    result = run_settings(
        {"LLMWIKI_DATA_DIR": str(tmp_path), "LLMWIKI_PUBLIC_URL": "wiki.example.org"}, "check"
    )
    assert result.returncode != 0
    assert "LLMWIKI_PUBLIC_URL must start with https:// or http://" in result.stderr
