"""Deterministic file sets: canonical JSON, the manifest, the zip, and verifying a folder.

No Django here. Determinism comes from three rules: JSON is written with sorted keys and a
fixed layout, files are listed and zipped in name order, and the only timestamp anywhere
(the manifest's `generated_at` and every zip entry's date) is the time of the newest
reviewed change the export reflects, never the clock.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from llmwiki.importers.bundle import EXPORT_FORMAT as FORMAT
from llmwiki.importers.bundle import LEDGER, MANIFEST

__all__ = ["FORMAT", "LEDGER", "MANIFEST"]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_entries(files: dict[str, bytes]) -> list[dict]:
    return [
        {"name": name, "sha256": sha256(data), "size": len(data)}
        for name, data in sorted(files.items())
    ]


def with_manifest(files: dict[str, bytes], manifest: dict) -> tuple[dict[str, bytes], dict]:
    """Add MANIFEST.json (listing every other file) to `files`; return them and it."""
    document = {**manifest, "format": FORMAT, "files": file_entries(files)}
    return {**files, MANIFEST: canonical_json(document).encode()}, document


def zip_bytes(files: dict[str, bytes], moment: datetime) -> bytes:
    """A zip of `files` whose bytes depend only on the files and `moment`."""
    stamp = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute, 0)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, whatever machine wrote it
            info.external_attr = 0o100644 << 16
            archive.writestr(info, data, compresslevel=9)
    return buffer.getvalue()


@dataclass
class Verification:
    """What checking a folder against its MANIFEST.json found; `ok` when nothing."""

    differs: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    manifest: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.differs or self.missing or self.unlisted)

    def summary(self) -> str:
        parts = [f"{name} differs" for name in self.differs]
        parts += [f"{name} is missing" for name in self.missing]
        parts += [f"{name} is not in the manifest" for name in self.unlisted]
        return "; ".join(parts) or "every file matches MANIFEST.json"

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "differs": self.differs,
            "missing": self.missing,
            "unlisted": self.unlisted,
        }


def read_manifest(folder: Path) -> dict:
    """The folder's MANIFEST.json; ValueError naming what is wrong with it."""
    path = folder / MANIFEST
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise ValueError(f"{path} has no list of files")
    return manifest


def verify_folder(folder: Path, zip_names: tuple[str, ...] = ()) -> Verification:
    """Recompute every listed file's sha256 and size; check the zip's members the same way.

    `zip_names` are archives expected beside the files (a handoff bundle's zip), which hold
    the files and MANIFEST.json itself; a member that differs is named `ZIP:MEMBER`.
    """
    manifest = read_manifest(folder)
    listed = {e["name"]: e for e in manifest["files"] if isinstance(e, dict) and "name" in e}
    result = Verification(manifest=manifest)
    manifest_bytes = (folder / MANIFEST).read_bytes()
    for name, entry in sorted(listed.items()):
        path = folder / name
        if not path.is_file():
            result.missing.append(name)
            continue
        data = path.read_bytes()
        if sha256(data) != entry.get("sha256") or len(data) != entry.get("size"):
            result.differs.append(name)
    present = {p.name for p in folder.iterdir() if p.is_file()}
    for name in sorted(present - set(listed) - {MANIFEST} - set(zip_names)):
        result.unlisted.append(name)
    for zip_name in zip_names:
        path = folder / zip_name
        if not path.is_file():
            result.missing.append(zip_name)
            continue
        _verify_zip(path, listed, manifest_bytes, result)
    return result


def _verify_zip(path: Path, listed: dict, manifest_bytes: bytes, result: Verification) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            members = {info.filename: archive.read(info) for info in archive.infolist()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, ValueError):
        result.differs.append(path.name)  # a flipped byte can break the archive itself
        return
    expected = {name: entry.get("sha256") for name, entry in listed.items()}
    expected[MANIFEST] = sha256(manifest_bytes)
    for name in sorted(set(expected) | set(members)):
        if name not in members:
            result.missing.append(f"{path.name}:{name}")
        elif name not in expected:
            result.unlisted.append(f"{path.name}:{name}")
        elif sha256(members[name]) != expected[name]:
            result.differs.append(f"{path.name}:{name}")
