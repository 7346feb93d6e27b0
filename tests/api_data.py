"""Tokens and calls for the JSON API tests."""

from __future__ import annotations

import json

from api.services import token_create


def bearer(project, user, *scopes: str, name: str = "agent") -> dict[str, str]:
    """Authorization headers for a new token of `user` on `project` with `scopes`."""
    _, text = token_create(project=project, name=name, scopes=scopes or ("read",), actor=user)
    return {"Authorization": f"Bearer {text}"}


def url(project, path: str) -> str:
    return f"/api/projects/{project.slug}/{path}"


def post(client, address: str, body: dict, headers: dict):
    return client.post(address, json.dumps(body), content_type="application/json", headers=headers)


def run_async(fn, *args):
    """Run `fn(*args)` on an event loop of its own thread and return its result.

    Browser tests keep Playwright's loop running in the main thread for the whole
    session, and anyio will not start a second one there.
    """
    import threading

    import anyio

    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = anyio.run(fn, *args)
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
