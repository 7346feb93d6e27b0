"""Bad input: arbitrary bytes, under any importer's file name, through the web upload.

Expected: the page answers (never a 500) with a result per file or one error for the
upload; a rejected file stores nothing, a refused upload stores nothing at all, and what is
stored matches the report exactly. Hypothesis generates the inputs.
"""

from __future__ import annotations

import io
import json
import warnings
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from llmwiki.errors import InputError
from llmwiki.importers import TextFile, parse
from llmwiki.importers.safejson import MAX_JSON_DEPTH
from llmwiki.models import Episode, Source
from tests.reliability.digest import STORED, django_digest

NAMES = st.sampled_from(
    [
        "notes.md",
        "MANIFEST.json",
        "SYSTEM_OVERVIEW.md",
        "memory/2026-11-02.md",
        "chat.jsonl",
        "chat.json",
        "bundle.zip",
        "readme.txt",
        "vault/wiki/page.md",
        "image.png",
        "noext",
    ]
)


def zipped(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    # Duplicate member names are one of the inputs we want; zipfile only warns about them.
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")
        for name, data in members:
            # zipfile cuts a member name at its first NUL and cannot write an empty one.
            archive.writestr(name.split("\0")[0] or "x", data)
    return buffer.getvalue()


TEXTISH = st.one_of(
    st.binary(max_size=2000),
    st.text(max_size=2000).map(str.encode),
    st.lists(
        st.dictionaries(
            st.sampled_from(["role", "content", "ts", "speaker", "text", "x"]),
            st.one_of(st.text(max_size=200), st.integers(), st.none(), st.booleans()),
        ),
        max_size=8,
    ).map(lambda rows: "\n".join(json.dumps(r) for r in rows).encode()),
)


def _nest(depth: int, brackets: str, wrap: str) -> str:
    opener, closer = ('{"a": ', "}") if brackets == "{}" else ("[", "]")
    inner = opener * depth + "1" + closer * depth
    return wrap.replace("X", inner)


# JSON nested from shallow to far past the stack, bare or where each parser looks: a turn's
# content, a conversation's messages, the second line of JSONL, a manifest's file list.
NESTED = st.builds(
    _nest,
    st.one_of(st.integers(1, 120), st.integers(120, 5000)),
    st.sampled_from(["[]", "{}"]),
    st.sampled_from(
        [
            "X",
            '{"messages": X}',
            '{"role": "user", "content": X}',
            '{"role": "user", "content": "hi there"}\n{"role": "user", "content": X}',
            '{"files": X}',
            "# Notes\n\n- X\n",
        ]
    ),
).map(str.encode)
CONTENT = st.one_of(
    TEXTISH,
    NESTED,
    st.lists(st.tuples(st.text(max_size=40), st.one_of(TEXTISH, NESTED)), max_size=4).map(zipped),
)
FILES = st.lists(st.tuples(NAMES, CONTENT), min_size=1, max_size=4)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=FILES)
# The same bytes under two names, or two files under one name: one refused, one imported.
@example(files=[("noext", b'{"role": true}'), ("notes.md", b'{"role": true}')])
@example(files=[("bundle.zip", b""), ("bundle.zip", b"PK\x05\x06" + bytes(18))])
def test_arbitrary_bytes_never_500_and_never_half_import(client, alice, project, files):
    client.force_login(alice)
    url = reverse("upload", args=[project.slug])
    with transaction.atomic():
        stored = django_digest(STORED)
        sources = set(Source.objects.values_list("id", flat=True))
        episodes = Episode.objects.count()

        response = client.post(
            url, {"files": [SimpleUploadedFile(name, data) for name, data in files]}
        )

        assert response.status_code == 200
        report, error = response.context["report"], response.context["error"]
        if report is None:
            assert error
            assert django_digest(STORED) == stored
        else:
            new = Source.objects.exclude(id__in=sources)
            assert Episode.objects.count() - episodes == report.episodes_created
            for refused in (r for r in report.sources if r.status == "rejected"):
                # By name and bytes: equal bytes, or an equal name, may be imported once.
                stored_as = new.filter(path=refused.path, sha256=refused.sha256)
                assert not stored_as.exists(), refused
            assert Episode.objects.filter(source__in=new).count() == report.episodes_created
            if all(r.status == "rejected" for r in report.sources):
                assert django_digest(STORED) == stored
        transaction.set_rollback(True)


@pytest.mark.parametrize(
    ("importer", "name"),
    [
        ("transcript", "chat.json"),
        ("transcript", "chat.jsonl"),
        ("bundle", "MANIFEST.json"),
        ("note", "notes.md"),
        ("daily_log", "memory/2026-11-02.md"),
        ("vault", "vault/wiki/page.md"),
    ],
)
@settings(max_examples=40, deadline=None)
@given(data=NESTED)
@example(data=b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}")
@example(data=b'{"files": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}")
def test_every_parser_reads_or_refuses_nested_json_by_name(importer, name, data):
    files = [TextFile(name, data.decode())]
    if importer == "bundle":
        files.append(TextFile("SYSTEM_OVERVIEW.md", "# Overview\n\nThe queue drains nightly."))
    try:
        parse(importer, files)
    except InputError as exc:
        # The file is named; "nested" only when it is, past the one limit.
        assert exc.name == name, exc
        if "nested deeper" in exc.reason:
            assert data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH
