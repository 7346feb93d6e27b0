"""One archive holding the database and the data directory, and its restore.

The database is copied first, as a snapshot (SQLite's online backup API, or `pg_dump`),
then the files. Blobs are content-addressed and only ever added or erased, so the files
copied after the snapshot hold every blob the snapshot needs unless a source was erased
in between; that is checked, and the backup refused ("run it again") if so. Left out:
collected static files (`collectstatic` makes them) and the Whoosh index (its watermark
starts at zero after a restore, so the first fold rebuilds it from the database).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import connection
from django.utils import timezone

FORMAT = 1
MANIFEST = "MANIFEST.json"
SQLITE_MEMBER = "database.sqlite3"
PG_MEMBER = "database.pgdump"
SKIPPED_DIRS = {"static", "index"}
ACTIVE_SOURCES = "SELECT sha256 FROM llmwiki_source WHERE status = 'active'"


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why and what to do."""


@dataclass
class Summary:
    archive: str
    vendor: str
    files: int
    bytes: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _db() -> dict:
    return settings.DATABASES["default"]


def _vendor() -> str:
    return connection.vendor  # "sqlite" or "postgresql"


def _data_files() -> list[Path]:
    data_dir = Path(settings.DATA_DIR)
    skip: set[Path] = set()
    if _vendor() == "sqlite":
        name = Path(_db()["NAME"]).resolve()
        skip = {name, *(name.with_name(name.name + s) for s in ("-wal", "-shm", "-journal"))}
    found = []
    for root, dirs, files in os.walk(data_dir):
        if Path(root) == data_dir:
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(".")]
        for name in files:
            path = Path(root) / name
            if not name.startswith(".tmp-") and path.resolve() not in skip:
                found.append(path)
    return sorted(found)


def _pg_env() -> dict[str, str]:
    db = _db()
    env = {**os.environ, "PGDATABASE": db["NAME"]}
    for key, var in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER")):
        if db.get(key):
            env[var] = str(db[key])
    if db.get("PASSWORD"):
        env["PGPASSWORD"] = db["PASSWORD"]  # not on the command line, where ps shows it
    return env


def _run(command: list[str]) -> None:
    if shutil.which(command[0]) is None:
        raise BackupError(f"{command[0]} is not installed (Debian: postgresql-client)")
    result = subprocess.run(command, env=_pg_env(), capture_output=True, text=True)
    if result.returncode:
        raise BackupError(f"{command[0]} failed: {result.stderr.strip()[:500]}")


def _snapshot(work: Path) -> tuple[Path, set[str]]:
    """Copy the database into `work`; return the copy and the blobs it needs."""
    if _vendor() == "sqlite":
        target = work / SQLITE_MEMBER
        source, copy = sqlite3.connect(_db()["NAME"]), sqlite3.connect(target)
        try:
            source.backup(copy)
            needed = {row[0] for row in copy.execute(ACTIVE_SOURCES)}
        finally:
            copy.close()
            source.close()
        return target, needed
    # The sources that exist before the dump starts are in it; one erased meanwhile is
    # reported as missing by the check, which errs on the safe side.
    with connection.cursor() as cursor:
        cursor.execute(ACTIVE_SOURCES)
        needed = {row[0] for row in cursor.fetchall()}
    target = work / PG_MEMBER
    _run(["pg_dump", "--format=custom", "--no-owner", "--no-privileges", f"--file={target}"])
    return target, needed


def backup(archive: str | Path) -> Summary:
    archive = Path(archive).resolve()
    if archive.exists():
        raise BackupError(f"{archive} already exists; name a new file")
    archive.parent.mkdir(parents=True, exist_ok=True)
    data_dir, blobs = Path(settings.DATA_DIR), Path(settings.BLOB_DIR)
    with tempfile.TemporaryDirectory(prefix="llmwiki-backup-") as tmp:
        database, needed = _snapshot(Path(tmp))
        entries = {database.name: database}
        entries.update({f"data/{p.relative_to(data_dir).as_posix()}": p for p in _data_files()})
        missing = sorted(s for s in needed if not (blobs / s[:2] / s[2:4] / s).exists())
        if missing:
            raise BackupError(
                f"{len(missing)} blob(s) the database names are gone (e.g. {missing[0]}): "
                "a source was erased during the backup; run it again"
            )
        files = {n: {"sha256": _sha256(p), "size": p.stat().st_size} for n, p in entries.items()}
        manifest = {
            "format": FORMAT,
            "created_at": timezone.now().isoformat(),
            "vendor": _vendor(),
            "database": database.name,
            "files": files,
        }
        partial = archive.with_name(archive.name + ".partial")
        with tarfile.open(partial, "w:gz") as tar:
            body = json.dumps(manifest, indent=1, sort_keys=True).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
            for name, path in entries.items():
                tar.add(path, arcname=name, recursive=False)
        os.replace(partial, archive)  # never a half-written archive under the real name
    return Summary(str(archive), _vendor(), len(files), sum(f["size"] for f in files.values()))


def _read_archive(archive: Path, into: Path) -> dict:
    """Unpack into `into` and check every file against the manifest."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(into, filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"{archive} is not a readable backup archive: {exc}") from None
    try:
        manifest = json.loads((into / MANIFEST).read_text())
    except (OSError, ValueError):
        raise BackupError(f"{archive} has no {MANIFEST}; not an llmwiki backup") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{archive} is backup format {manifest.get('format')}, not {FORMAT}")
    for name, meta in manifest["files"].items():
        path = into / PurePosixPath(name)
        if not path.is_file() or _sha256(path) != meta["sha256"]:
            raise BackupError(f"{archive}: {name} is missing or damaged (sha256 differs)")
    return manifest


def _refuse_unless_fresh() -> None:
    data_dir = Path(settings.DATA_DIR)
    for sub in ("blobs", "exports"):
        if (data_dir / sub).exists() and any((data_dir / sub).iterdir()):
            raise BackupError(
                f"{data_dir} already holds {sub}/; restore into a fresh data directory"
            )
    if _vendor() == "sqlite":
        name = Path(_db()["NAME"])
        if name.exists():
            with sqlite3.connect(name) as db:
                tables = db.execute("SELECT count(*) FROM sqlite_master WHERE type='table'")
                if tables.fetchone()[0]:
                    raise BackupError(
                        f"{name} already has tables; restore into a fresh data directory"
                    )
    elif connection.introspection.table_names():
        raise BackupError(
            f"database {_db()['NAME']!r} already has tables; restore into an empty database"
        )


def _restore_database(work: Path, manifest: dict) -> None:
    dump = work / manifest["database"]
    if _vendor() == "sqlite":
        source, target = sqlite3.connect(dump), sqlite3.connect(_db()["NAME"])
        try:
            source.backup(target)
            check = target.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            target.close()
            source.close()
        if check != "ok":
            raise BackupError(f"the restored database fails integrity_check: {check}")
        return
    _run(
        [
            "pg_restore",
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "--single-transaction",
            f"--dbname={_db()['NAME']}",
            str(dump),
        ]
    )


def restore(archive: str | Path) -> Summary:
    archive = Path(archive).resolve()
    if not archive.is_file():
        raise BackupError(f"{archive} does not exist")
    data_dir = Path(settings.DATA_DIR)
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".restore-", dir=data_dir) as tmp:
        work = Path(tmp)
        manifest = _read_archive(archive, work)
        if manifest["vendor"] != _vendor():
            raise BackupError(
                f"the archive holds a {manifest['vendor']} database but DATABASE_URL selects "
                f"{_vendor()}; restore it with the same kind of database"
            )
        _refuse_unless_fresh()
        connection.close()
        _restore_database(work, manifest)
        for name in manifest["files"]:
            if name.startswith("data/"):
                target = data_dir / PurePosixPath(name).relative_to("data")
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(work / PurePosixPath(name), target)
    files = manifest["files"]
    return Summary(str(archive), _vendor(), len(files), sum(f["size"] for f in files.values()))
