"""Settings for llmwiki, read from environment variables.

The embedded default needs no configuration: SQLite (WAL) and the django-q2 ORM broker
under ``LLMWIKI_DATA_DIR``. ``DATABASE_URL`` and ``REDIS_URL`` switch to the scale-out path.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def sqlite_database(name: str | Path) -> dict:
    """A SQLite DATABASES entry with the options every process here relies on."""
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": name,
        "OPTIONS": {
            # IMMEDIATE takes the write lock at BEGIN, so a writer waits on the busy
            # timeout instead of failing with "database is locked" mid-transaction.
            "transaction_mode": "IMMEDIATE",
            "timeout": env_int("LLMWIKI_SQLITE_TIMEOUT", 20, minimum=1),
            "init_command": (
                "PRAGMA journal_mode=WAL;"
                "PRAGMA synchronous=NORMAL;"
                "PRAGMA foreign_keys=ON;"
                "PRAGMA mmap_size=134217728;"
                "PRAGMA cache_size=-65536;"
            ),
        },
    }


def database_from_url(url: str) -> dict:
    """Turn ``postgres://user:pass@host:port/name`` or ``sqlite:////path`` into DATABASES."""
    scheme = url.partition("://")[0].lower()
    if scheme not in {"postgres", "postgresql", "pgsql", "sqlite"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must start with postgres:// or sqlite:/// (got scheme {scheme!r}); "
            "leave it unset for the embedded SQLite database"
        )
    try:
        parsed = dj_database_url.parse(url)
    except (ValueError, dj_database_url.ParseError):
        raise ImproperlyConfigured(
            "DATABASE_URL is not a valid URL (an invalid port, or characters in the "
            "password that need %-escaping?)"
        ) from None
    if scheme == "sqlite":
        name = parsed["NAME"]
        if not name or name == ":memory:":
            raise ImproperlyConfigured(
                "DATABASE_URL names no SQLite file (sqlite:////absolute/path.sqlite3); "
                "an in-memory database would lose everything at each restart"
            )
        return sqlite_database(Path(name).resolve())
    if not parsed["NAME"]:
        raise ImproperlyConfigured("DATABASE_URL has no database name (postgres://…/NAME)")
    return {
        **parsed,
        "PORT": str(parsed["PORT"] or ""),
        "CONN_MAX_AGE": env_int("LLMWIKI_DB_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
    }


def load_secret_key(data_dir: Path) -> str:
    """Use SECRET_KEY from the environment, else one generated once into the data directory."""
    if key := os.environ.get("SECRET_KEY"):
        return key
    path = data_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # O_EXCL: two processes starting at once must not each write a different key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    return key


DATA_DIR = Path(env_str("LLMWIKI_DATA_DIR", str(BASE_DIR / "var"))).resolve()
BLOB_DIR = DATA_DIR / "blobs"
INDEX_DIR = DATA_DIR / "index"
EXPORT_DIR = DATA_DIR / "exports"

DEBUG = env_bool("LLMWIKI_DEBUG", False)
SECRET_KEY = load_secret_key(DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
# Where readers reach this app (https://wiki.example.org): exports carry absolute "why?"
# links then, which still resolve once a packet has left the server. Unset: app paths.
PUBLIC_URL = env_str("LLMWIKI_PUBLIC_URL").rstrip("/")
if PUBLIC_URL and not PUBLIC_URL.startswith(("https://", "http://")):
    raise ImproperlyConfigured(
        f"LLMWIKI_PUBLIC_URL must start with https:// or http:// (got {PUBLIC_URL!r})"
    )

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "django_q",
    "axes",
    # In INSTALLED_APPS so that the API docs load Swagger UI from our static files, not a CDN.
    "ninja",
    "llmwiki",
    "dreaming",
    "reviews",
    "wizard",
    "api",
    "ops",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "api.middleware.ApiLimitsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "llmwiki.middleware.ContentSecurityPolicyMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "llmwiki.middleware.NoStoreForMembersMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "llmwiki.middleware.BusyDatabaseMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during login into its response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "llmwiki.urls"
WSGI_APPLICATION = "llmwiki.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

if database_url := env_str("DATABASE_URL"):
    DATABASES = {"default": database_from_url(database_url)}
else:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {"default": sqlite_database(DATA_DIR / "llmwiki.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
# In debug, serve straight from the finders (make run). Otherwise only what collectstatic
# put under STATIC_ROOT: hashed names, pre-compressed, cached for a year ("immutable");
# the WSGI application refuses to start when that is missing (llmwiki/deploy.py).
WHITENOISE_USE_FINDERS = DEBUG

# Login throttling (django-axes): after LLMWIKI_LOGIN_FAILURES wrong passwords for one
# username from one address, that pair is locked out for LLMWIKI_LOGIN_COOLOFF_MINUTES,
# even with the right password. Keyed on the pair so that nobody can lock a colleague
# out from elsewhere. `manage.py axes_reset_username NAME` lifts a lockout early.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LLMWIKI_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LLMWIKI_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "llmwiki.views.locked_out"
# Axes announces itself on stderr at every start; command-line tools promise one line of
# output per refusal, so it stays quiet (lockouts are still logged).
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project_list"
LOGOUT_REDIRECT_URL = "login"

# Upload limits: the gate enforces per-file limits with a message naming the file;
# these stop oversized requests before they are read.
LLMWIKI_MAX_FILE_BYTES = env_int("LLMWIKI_MAX_FILE_BYTES", 5 * 1024 * 1024, minimum=1024)
# PostgreSQL search: the postings each process holds (llmwiki.search.postings); 0 ranks
# every query in SQL.
LLMWIKI_SEARCH_POSTINGS_MB = env_int("LLMWIKI_SEARCH_POSTINGS_MB", 48, minimum=0)
LLMWIKI_MAX_UPLOAD_BYTES = env_int("LLMWIKI_MAX_UPLOAD_BYTES", 50 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("LLMWIKI_MAX_UPLOAD_FILES", 200, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440

# The JSON API (/api/): the largest request body, and the writes (events, review actions,
# dream triggers) one token may make a minute.
LLMWIKI_API_MAX_BODY_BYTES = env_int("LLMWIKI_API_MAX_BODY_BYTES", 1024 * 1024, minimum=1024)
LLMWIKI_API_WRITES_PER_MINUTE = env_int("LLMWIKI_API_WRITES_PER_MINUTE", 60, minimum=1)

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
CSRF_FAILURE_VIEW = "llmwiki.views.csrf_failure"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("LLMWIKI_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_HSTS_SECONDS = env_int("LLMWIKI_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_SSL_REDIRECT = env_bool("LLMWIKI_SSL_REDIRECT", True)
    # Load balancers and Prometheus probe the app directly over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Images may come only from us; scripts and styles only from our own static files.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# django-q2. Our own models hold the state of long work (leases, attempts); the task
# table is a log. timeout < retry, otherwise a slow task is delivered twice while running.
Q_CLUSTER = {
    "name": "llmwiki",
    "workers": env_int("LLMWIKI_Q_WORKERS", 2, minimum=1),
    "timeout": env_int("LLMWIKI_Q_TIMEOUT", 900, minimum=10),
    "retry": env_int("LLMWIKI_Q_RETRY", 1200, minimum=11),
    "max_attempts": 2,
    "catch_up": False,
    "save_limit": 500,
    "ack_failures": True,
    "poll": 1,
}
if Q_CLUSTER["retry"] <= Q_CLUSTER["timeout"]:
    raise ImproperlyConfigured("LLMWIKI_Q_RETRY must be greater than LLMWIKI_Q_TIMEOUT")
if redis_url := env_str("REDIS_URL"):
    if not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"REDIS_URL must start with redis:// (got {redis_url!r})")
    Q_CLUSTER["redis"] = redis_url
else:
    Q_CLUSTER["orm"] = "default"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"one_line_forbidden": {"()": "llmwiki.middleware.OneLineForbidden"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LLMWIKI_LOG_LEVEL", "INFO")},
    "loggers": {
        "django_q": {"level": "WARNING"},
        "django.request": {"filters": ["one_line_forbidden"]},
    },
}
