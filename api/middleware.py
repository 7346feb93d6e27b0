"""Limits on /api/ requests that apply before any view reads the body."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from llmwiki.gate import mb


class ApiLimitsMiddleware:
    """Refuse an oversized /api/ body with 413 before it is read; mark answers no-store.

    Answers carry project memory for one token, so no shared cache may keep them.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        limit = settings.LLMWIKI_API_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            response: HttpResponse = JsonResponse(
                {"message": f"request body is over the {mb(limit)} limit of the API"}, status=413
            )
        else:
            response = self.get_response(request)
        add_never_cache_headers(response)
        return response


def api_not_found(request: HttpRequest, path: str = "") -> HttpResponse:
    """Unknown /api/ addresses answer in JSON too."""
    return HttpResponse(
        json.dumps({"message": f"no API endpoint at /api/{path}; see /api/docs"}),
        status=404,
        content_type="application/json",
    )
