"""Limits on /api/ requests that apply before any view reads the body."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from llmwiki.gate import mb


class ApiLimitsMiddleware:
    """Refuse an oversized /api/ body with 413 before it is read; mark answers no-store;
    turn any error Django or ninja answered in HTML or text (405, 500) into JSON; answer
    HEAD wherever GET is answered, with GET's status and headers and no body.

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
            head = request.method == "HEAD"
            if head:
                # ninja routes by method and knows no HEAD.
                request.method = "GET"
            response = self.get_response(request)
            if response.status_code >= 400 and not response.get("Content-Type", "").startswith(
                "application/json"
            ):
                response = _as_json(request, response)
            if head:
                _without_body(response)
        add_never_cache_headers(response)
        return response


def _without_body(response: HttpResponse) -> None:
    """Drop the body, keeping the headers (Content-Length too) GET would have sent."""
    if response.streaming:
        stream = getattr(response, "file_to_stream", None)
        if stream is not None:
            stream.close()
        response.streaming_content = []
    else:
        response.content = b""


def _as_json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if response.status_code == 405:
        message = f"{request.method} is not allowed here; use {response.get('Allow', '')}"
    elif response.status_code >= 500:
        message = "internal error; the server log has the details"
    else:
        message = response.reason_phrase.lower()
    converted = JsonResponse({"message": message}, status=response.status_code)
    if "Allow" in response:
        converted["Allow"] = response["Allow"]
    return converted


def api_not_found(request: HttpRequest, path: str = "") -> HttpResponse:
    """Unknown /api/ addresses answer in JSON too."""
    return HttpResponse(
        json.dumps({"message": f"no API endpoint at /api/{path}; see /api/docs"}),
        status=404,
        content_type="application/json",
    )
