"""The NinjaAPI instance: bearer-token auth, JSON errors with a message, shared limits.

Every endpoint names the scope it needs through `caller()`; the operations it calls are
the same services, gates and access rules as the web pages and the MCP server.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer

from api.models import ApiToken
from api.services import (
    Caller,
    NotFound,
    TooManyWrites,
    Unauthorized,
    caller_for,
    token_authenticate,
)
from llmwiki.errors import InputError, Refused
from llmwiki.middleware import BUSY_RETRY_AFTER

PAGE_DEFAULT = 50
PAGE_MAX = 200
# Deeper than any list goes. It keeps offset + limit inside the 64-bit LIMIT/OFFSET both
# databases take: past it SQLite answered "datatype mismatch" and PostgreSQL "bigint out of
# range", as 500s.
OFFSET_MAX = 1_000_000_000


class JsonBody(Parser):
    """A body that is not JSON is refused naming where it stops being JSON."""

    def parse_body(self, request: HttpRequest) -> Any:
        try:
            return json.loads(request.body)
        except UnicodeDecodeError:
            raise InputError("body", "is not UTF-8 text, so it is not JSON") from None
        except json.JSONDecodeError as exc:
            raise InputError(
                "body", f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        return token_authenticate(token)


class Api(NinjaAPI):
    """NinjaAPI whose schema is finished by hooks when it is asked for: a vocabulary that
    is declared as data elsewhere (the review actions) is listed as it is then."""

    schema_hooks: list

    def get_openapi_schema(self, **kwargs: Any):
        schema = super().get_openapi_schema(**kwargs)
        for hook in self.schema_hooks:
            hook(schema)
        return schema


api = Api(
    title="llmwiki API",
    version="1",
    description=(
        "Governed project memory for agents. Authenticate with `Authorization: Bearer "
        "<token>`; a maintainer creates tokens under the project's Settings → API tokens. "
        'Scopes: read, write-events, review. Errors are JSON: `{"message": ...}`.'
    ),
    auth=TokenAuth(),
    parser=JsonBody(),
    urls_namespace="api",
)
api.schema_hooks = []


def error(request: HttpRequest, status: int, message: str, **extra: Any) -> HttpResponse:
    response = api.create_response(request, {"message": message, **extra}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="llmwiki"'
    return response


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error(request, 401, "an API token is required: Authorization: Bearer <token>")


@api.exception_handler(Unauthorized)
def _unauthorized(request: HttpRequest, exc: Unauthorized) -> HttpResponse:
    return error(request, 401, str(exc))


@api.exception_handler(Refused)
def _refused(request: HttpRequest, exc: Refused) -> HttpResponse:
    response = error(request, exc.status, str(exc))
    if isinstance(exc, TooManyWrites):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(InputError)
def _bad_input(request: HttpRequest, exc: InputError) -> HttpResponse:
    return error(request, 400, str(exc), field=exc.name)


@api.exception_handler(NotFound)
@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
    return error(request, 404, str(exc) or "not found")


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    def where(e: dict) -> str:
        return ".".join(
            str(p)
            for p in e.get("loc", ())
            if p not in {"body", "payload", "query", "path", "paging"}
        )

    first = exc.errors[0] if exc.errors else {}
    return error(
        request,
        422,
        f"{where(first)}: {first.get('msg', 'invalid')}" if first else "invalid request",
        field=where(first) if first else None,
        errors=[{"field": where(e), "message": e.get("msg", "")} for e in exc.errors],
    )


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps what the body parser raised in "Cannot parse request body".
    if isinstance(exc.__cause__, InputError):
        return _bad_input(request, exc.__cause__)
    return error(request, exc.status_code, str(exc))


def _retry_after_documented(schema: dict) -> None:
    """429 and 503 answers say when to try again, in a header as well as in words."""
    waits = {
        "429": "seconds until the token's write window has room again (the message says the same)",
        "503": f"seconds to wait for the other write to finish ({BUSY_RETRY_AFTER})",
    }
    for item in schema["paths"].values():
        for operation in item.values():
            # Status codes are still ints here; they become strings in the JSON.
            for status, response in operation.get("responses", {}).items():
                if str(status) in waits:
                    response["headers"] = {
                        "Retry-After": {
                            "description": waits[str(status)],
                            "schema": {"type": "integer"},
                        }
                    }
                if str(status) == "503":
                    response["description"] = (
                        "The database is busy with another write (a sweep or an import); "
                        "nothing was written and the request is safe to repeat"
                    )


api.schema_hooks.append(_retry_after_documented)


def caller(request: HttpRequest, slug: str, scope: str) -> Caller:
    return caller_for(request.auth, slug, scope)
