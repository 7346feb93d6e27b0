from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers


class ContentSecurityPolicyMiddleware:
    """Send our Content-Security-Policy on every response (Django 5.2 has no built-in one)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # The admin and debug pages use inline scripts; they set their own policy needs.
        if not request.path.startswith("/admin/"):
            response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response


class NoStoreForMembersMiddleware:
    """Pages rendered for a logged-in user carry project text: no cache may keep them.

    Without it a shared proxy, or the browser's back button after logout, serves them again.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.user.is_authenticated:
            add_never_cache_headers(response)
        return response


class OneLineForbidden(logging.Filter):
    """Log a refused request (403) as one line with its reason, not a traceback.

    A refusal is an expected answer, not an error; the traceback would bury real ones.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, PermissionDenied):
            record.msg = f"{record.getMessage()} ({exc})" if str(exc) else record.getMessage()
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


BUSY_RETRY_SECONDS = 5
BUSY_RETRY_AFTER = str(BUSY_RETRY_SECONDS)
BUSY_MESSAGE = (
    "The database is busy with another write (a sweep or an import); "
    f"try again in {BUSY_RETRY_SECONDS} s."
)


class BusyDatabaseMiddleware:
    """A write that waited out SQLite's busy timeout answers 503 "busy, try again", not 500.

    IMMEDIATE transactions make a writer wait for the lock at BEGIN, so nothing was written
    when this happens; the request is safe to repeat.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        from django.db import OperationalError

        if not isinstance(exc, OperationalError) or "locked" not in str(exc):
            return None
        logging.getLogger(__name__).warning("busy database on %s: %s", request.path, exc)
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse({"message": BUSY_MESSAGE}, status=503)
        else:
            response = HttpResponse(
                f"<!doctype html><title>Busy, try again</title><h1>Busy, try again</h1>"
                f"<p>{BUSY_MESSAGE}</p>",
                status=503,
            )
        response["Retry-After"] = BUSY_RETRY_AFTER
        return response
