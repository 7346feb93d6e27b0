"""Test settings: synchronous tasks, a fast hasher, a throwaway data directory."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("LLMWIKI_DATA_DIR", tempfile.mkdtemp(prefix="llmwiki-test-"))
os.environ.setdefault("LLMWIKI_DEBUG", "0")
os.environ.setdefault("LLMWIKI_SSL_REDIRECT", "0")
os.environ.setdefault("LLMWIKI_SECURE_COOKIES", "0")

from llmwiki.settings import *  # noqa: F403
from llmwiki.settings import DATABASES, Q_CLUSTER

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
Q_CLUSTER = {**Q_CLUSTER, "sync": True}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# A file, not Django's shared-cache in-memory database: that one takes table locks that
# ignore the busy timeout, while production runs SQLite in WAL mode on a file.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(os.environ["LLMWIKI_DATA_DIR"], "test.sqlite3")
    }
