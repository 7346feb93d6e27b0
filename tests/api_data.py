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
