"""The blob store for raw sources: bytes live at blobs/ab/cd/<sha256 of the original>.

A source with secret findings is stored redacted under its original's sha256, so that
re-importing the same original still finds it (see `llmwiki.security.raw`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings


def blob_path(sha256: str) -> Path:
    return Path(settings.BLOB_DIR) / sha256[:2] / sha256[2:4] / sha256


def blob_write(data: bytes, key: str | None = None, *, replace: bool = False) -> tuple[str, bool]:
    """Store `data` atomically (temp file + rename) under `key` (default: its sha256);
    return (key, newly written). An existing blob is kept unless `replace`."""
    sha = key or hashlib.sha256(data).hexdigest()
    path = blob_path(sha)
    if path.exists() and not replace:
        return sha, False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return sha, True


def blob_write_many(items: list[tuple[str, bytes]]) -> list[tuple[str, bool]]:
    """Store several `(key, data)` blobs; the fsyncs overlap in threads (milliseconds each)."""
    if len(items) < 2:
        return [blob_write(data, key) for key, data in items]
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        return list(pool.map(lambda item: blob_write(item[1], item[0]), items))


def blob_read(sha256: str) -> bytes:
    return blob_path(sha256).read_bytes()


def blob_discard(sha256: str) -> None:
    """Remove a blob this request wrote when its transaction rolled back."""
    blob_path(sha256).unlink(missing_ok=True)
