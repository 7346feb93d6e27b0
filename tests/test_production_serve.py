"""`manage.py serve --production` for real: gunicorn on loopback with DEBUG off."""

from __future__ import annotations

import http.cookiejar
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request

from tests.test_commands_run import ROOT, clean_env, free_port, wait_for, wait_until_gone

PAGES = [
    "/",
    "/p/demo/",
    "/p/demo/episodes/",
    "/p/demo/upload/",
    "/p/demo/quarantine/",
    "/p/demo/audit/",
    "/p/demo/settings/",
    "/p/demo/settings/tokens/",
    "/p/demo/dreaming/",
    "/p/demo/dreaming/candidates/",
    "/p/demo/dreaming/policy/",
    "/p/demo/review/",
    "/p/demo/conflicts/",
    "/p/demo/wiki/",
    "/p/demo/exports/",
    "/wizard/",
    "/api/docs",
    "/admin/",
]


def production_env(tmp_path) -> dict[str, str]:
    # Plain-HTTP cookies for this client; the proxy's X-Forwarded-Proto says "https".
    return clean_env(
        tmp_path,
        LLMWIKI_DEBUG="0",
        LLMWIKI_SECURE_COOKIES="0",
        SECRET_KEY="production-test-" + "k" * 50,
        ALLOWED_HOSTS="127.0.0.1",
    )


def manage(env, *args, check=True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
    )


def test_without_collectstatic_startup_fails_with_a_clear_message(tmp_path):
    env = production_env(tmp_path)
    result = manage(env, "serve", "--production", f"127.0.0.1:{free_port()}", check=False)
    assert result.returncode != 0
    assert "Static files are not collected" in result.stderr
    assert "collectstatic --noinput" in result.stderr
    # gunicorn started by hand refuses too, instead of answering 500 on every page.
    gunicorn = subprocess.run(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "llmwiki.wsgi:application",
            f"-b127.0.0.1:{free_port()}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gunicorn.returncode != 0
    assert "collectstatic --noinput" in gunicorn.stderr


class Client:
    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        # What a TLS-terminating proxy adds; without it SECURE_SSL_REDIRECT answers 301.
        self.headers = {"X-Forwarded-Proto": "https", "Origin": base.replace("http:", "https:")}

    def get(self, path: str, **headers):
        request = urllib.request.Request(self.base + path, headers={**self.headers, **headers})  # noqa: S310
        return self.opener.open(request, timeout=30)

    def post(self, path: str, data: dict):
        body = urllib.parse.urlencode(data).encode()
        request = urllib.request.Request(self.base + path, data=body, headers=self.headers)  # noqa: S310
        return self.opener.open(request, timeout=30)


def test_after_collectstatic_every_page_serves_with_debug_off(tmp_path):
    env = production_env(tmp_path)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "load_demo")
    manage(env, "collectstatic", "--noinput", "-v0")
    manage(env, "setup_schedules")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--production", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        assert wait_for(base + "/accounts/login/", headers={"X-Forwarded-Proto": "https"}) == 200
        client = Client(base)
        form = client.get("/accounts/login/").read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
        password = (tmp_path / "demo-password").read_text().strip()
        with client.post(
            "/accounts/login/",
            {"username": "demo", "password": password, "csrfmiddlewaretoken": token},
        ) as r:
            assert r.url.endswith("/"), r.url
        assets = set()
        for page in PAGES:
            with client.get(page) as r:
                assert r.status == 200, page
                html = r.read().decode()
            assert "Log in" not in html or page == "/admin/", f"{page} asked to log in"
            assets.update(re.findall(r'(?:src|href)="(/static/[^"]+)"', html))
        # The worker's first heartbeat (setup_schedules) turns /healthz from 503 to 200.
        assert wait_for(base + "/healthz") == 200
        with urllib.request.urlopen(base + "/metrics", timeout=30) as r:  # noqa: S310
            assert b"llmwiki_worker_up 1" in r.read()
        assert any(a.endswith(".css") for a in assets)
        for asset in sorted(assets):
            with client.get(asset, **{"Accept-Encoding": "gzip"}) as r:
                assert r.status == 200, asset
                # Hashed names (collectstatic's manifest) cached for a year, never revalidated.
                assert re.search(r"\.[0-9a-f]{12}\.", asset), asset
                assert "immutable" in r.headers["Cache-Control"], asset
                if asset.endswith((".css", ".js")):
                    assert r.headers["Content-Encoding"] == "gzip", asset
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=30)
        finally:
            subprocess.run(["pkill", "-KILL", "-s", str(proc.pid)], check=False)
    assert "Booting worker" in output  # gunicorn, not the development server
    assert wait_until_gone(proc.pid) == []
