"""`manage.py backup` then `restore` into a fresh data directory: every table and every
file identical. Real processes, real files; on PostgreSQL through pg_dump/pg_restore."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

from tests.test_commands_run import ROOT, clean_env

FIXTURES = ROOT / "tests" / "fixtures" / "importers"
LEFT_OUT = {"static", "index", "llmwiki.sqlite3", "llmwiki.sqlite3-wal", "llmwiki.sqlite3-shm"}


def manage(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def fill(env) -> None:
    ok(manage(env, "migrate", "--noinput", "-v0"))
    ok(manage(env, "ingest", "--project", "bk", "--create", str(FIXTURES), "--json"))
    ok(manage(env, "dream", "--project", "bk", "--json"))
    ok(manage(env, "setup_schedules"))


def rows_digest(tables: dict[str, list[tuple]]) -> dict[str, str]:
    return {
        name: hashlib.sha256(repr(sorted(map(repr, rows))).encode()).hexdigest()
        for name, rows in tables.items()
    }


def sqlite_tables(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        names = [
            r[0]
            for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return rows_digest({n: db.execute(f'SELECT * FROM "{n}"').fetchall() for n in names})  # noqa: S608


def files_digest(data_dir: Path) -> dict[str, str]:
    return {
        p.relative_to(data_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(data_dir.rglob("*"))
        if p.is_file() and p.relative_to(data_dir).parts[0] not in LEFT_OUT
    }


def test_backup_then_restore_into_a_fresh_data_directory_is_identical(tmp_path):
    first = clean_env(tmp_path / "first")
    fill(first)
    archive = tmp_path / "llmwiki.tar.gz"
    summary = json.loads(ok(manage(first, "backup", str(archive), "--json")))
    assert summary["vendor"] == "sqlite" and summary["files"] > 3
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "MANIFEST.json" in names and "database.sqlite3" in names
    assert any(n.startswith("data/blobs/") for n in names)
    assert "data/secret_key" in names

    second = clean_env(tmp_path / "second")
    ok(manage(second, "restore", str(archive)))
    before = sqlite_tables(tmp_path / "first" / "llmwiki.sqlite3")
    after = sqlite_tables(tmp_path / "second" / "llmwiki.sqlite3")
    assert len(before) > 20 and after == before
    assert files_digest(tmp_path / "first") == files_digest(tmp_path / "second")
    assert any(k.startswith("blobs/") for k in files_digest(tmp_path / "second"))
    # The restored copy works: the search index is rebuilt from the database on demand.
    ok(manage(second, "search_index", "--project", "bk", "--rebuild"))
    assert manage(second, "search_index", "--project", "bk", "--check").returncode == 0


def test_restore_refuses_a_data_directory_in_use_and_a_damaged_archive(tmp_path):
    first = clean_env(tmp_path / "first")
    fill(first)
    archive = tmp_path / "llmwiki.tar.gz"
    ok(manage(first, "backup", str(archive)))
    again = manage(first, "backup", str(archive))
    assert again.returncode == 2 and "already exists" in again.stderr

    into_used = manage(first, "restore", str(archive))
    assert into_used.returncode == 2
    assert "fresh data directory" in into_used.stderr

    damaged = tmp_path / "damaged.tar.gz"
    with tarfile.open(archive) as src, tarfile.open(damaged, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()
            if member.name.startswith("data/blobs/"):
                data = data[:-1] + b"!"
            member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    second = clean_env(tmp_path / "second")
    refused = manage(second, "restore", str(damaged))
    assert refused.returncode == 2 and "damaged" in refused.stderr
    assert not (tmp_path / "second" / "llmwiki.sqlite3").exists() or not sqlite_tables(
        tmp_path / "second" / "llmwiki.sqlite3"
    )
    assert not (tmp_path / "second" / "blobs").exists()


def pg_url() -> str:
    return os.environ.get("DATABASE_URL", "")


@pytest.mark.postgres
@pytest.mark.skipif(
    not pg_url().startswith("postgres") or not shutil.which("pg_dump"),
    reason="needs DATABASE_URL (PostgreSQL) and pg_dump",
)
def test_backup_then_restore_on_postgresql_is_identical(tmp_path):
    import psycopg

    names = [f"bk_{uuid.uuid4().hex[:8]}_{side}" for side in ("src", "dst")]
    admin = psycopg.connect(pg_url(), autocommit=True)
    urls = [urlunparse(urlparse(pg_url())._replace(path=f"/{n}")) for n in names]
    for name in names:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        first = clean_env(tmp_path / "first", DATABASE_URL=urls[0])
        fill(first)
        archive = tmp_path / "llmwiki.tar.gz"
        assert json.loads(ok(manage(first, "backup", str(archive), "--json")))["vendor"] == (
            "postgresql"
        )
        second = clean_env(tmp_path / "second", DATABASE_URL=urls[1])
        ok(manage(second, "restore", str(archive)))

        def tables(url: str) -> dict[str, str]:
            with psycopg.connect(url) as db:
                found = [
                    r[0]
                    for r in db.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                    )
                ]
                return rows_digest(
                    {t: db.execute(f'SELECT * FROM "{t}"').fetchall() for t in found}  # noqa: S608
                )

        before, after = tables(urls[0]), tables(urls[1])
        assert len(before) > 20 and after == before
        assert files_digest(tmp_path / "first") == files_digest(tmp_path / "second")
        again = manage(second, "restore", str(archive))
        assert again.returncode == 2 and "fresh data directory" in again.stderr
    finally:
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
