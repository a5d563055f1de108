"""The dashboard over HTTP: a real ``ferrex ui`` process on a real home, plain requests.

Sessions from a token, the JSON API and its error codes, what an agent's token may see, and
actions that need the dashboard's own Origin (and, for forget, a confirmation).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.mcp_auth import token_hash
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from tests.e2e.dashboard_helpers import (
    ALICE,
    BOB,
    Home,
    Served,
    ferrex_ui,
    operator_token,
    populate,
    write_tokens,
)
from tests.e2e.mcp_helpers import FERREX
from tests.healthz import wait_healthy


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, shared_embedder: Embedder) -> Home:
    return populate(tmp_path_factory.mktemp("dashboard") / "home", shared_embedder)


@pytest.fixture(scope="module")
def served(home: Home) -> Iterator[Served]:
    with ferrex_ui(home.path) as served:
        yield served


def _get(
    served: Served, path: str, token: str | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    sent = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(served.base + path, headers={**sent, **(headers or {})}, timeout=60)


def test_ui_prints_one_url_with_the_operators_token(home: Home, served: Served) -> None:
    assert served.login_url == f"{served.base}/?token={operator_token(home.path)}"


def test_the_token_becomes_a_strict_httponly_session_and_leaves_the_url(served: Served) -> None:
    answer = httpx.get(served.login_url + "&q=tokio", timeout=60)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/?q=tokio"  # the token is gone, the query kept
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert operator_token_in(cookie, served) is False
    with httpx.Client(base_url=served.base, cookies=answer.cookies, timeout=60) as browser:
        page = browser.get("/?q=tokio")
        assert page.status_code == 200 and "tokio 1.38" in page.text
        assert browser.get("/api/v1/stats").json()["total"] == 6
    assert answer.headers["referrer-policy"] == "same-origin"
    assert "default-src 'none'" in answer.headers["content-security-policy"]


def operator_token_in(cookie: str, served: Served) -> bool:
    return served.login_url.split("token=", 1)[1] in cookie


def test_without_a_token_nothing_is_shown(served: Served) -> None:
    for path in ("/", "/health", "/journal", "/entities", "/memory/x"):
        answer = _get(served, path)
        assert answer.status_code == 401, path
        assert "tokio" not in answer.text
    api = _get(served, "/api/v1/stats")
    assert api.status_code == 401 and api.json()["error"]["code"] == "unauthorized"
    assert _get(served, "/?token=not-a-token").status_code == 401
    assert _get(served, "/api/v1/stats", token="not-a-token").status_code == 401
    forged = httpx.get(served.base + "/api/v1/stats", cookies={"ferrex_session": "made-up"})
    assert forged.status_code == 401


def test_the_api_answers_with_the_tools_documents(home: Home, served: Served) -> None:
    token = operator_token(home.path)
    found = _get(served, "/api/v1/recall?q=what+does+api-server+use&types=semantic", token)
    assert found.status_code == 200
    results = found.json()["results"]
    assert [r["object"] for r in results] == ["tokio 1.38"]  # the superseded one hidden
    assert {"dense", "bm25", "context", "rerank", "boost"} <= set(results[0]["explain"])
    both = _get(served, "/api/v1/recall?q=api-server+tokio&include_invalidated=true", token)
    labels = {r["object"]: r["freshness"]["label"] for r in both.json()["results"] if "object" in r}
    assert labels == {"tokio 1.38": "fresh", "tokio 1.36": "superseded"}

    memory = _get(served, f"/api/v1/memory/{home.ids['new']}", token).json()
    assert memory["body"]["object"] == "tokio 1.38" and memory["last_validated"]
    history = _get(served, f"/api/v1/history/{home.ids['new']}", token).json()
    versions = history["versions"]
    assert [v["id"] for v in versions] == [home.ids["old"], home.ids["new"]]
    assert versions[0]["t_invalid"] is not None and versions[1]["t_invalid"] is None
    assert versions[0]["t_valid"].startswith("2026-03-01")

    entity = _get(served, "/api/v1/entities?name=TOKIO", token).json()
    assert entity["name"] == "tokio"
    assert {a["alias"] for a in entity["aliases"]} >= {"tokio"}
    assert all({"match", "score"} <= set(a) for a in entity["aliases"])
    assert "api-server" in {n["name"] for n in entity["graph"]["nodes"]}
    listing = _get(served, "/api/v1/entities", token).json()
    assert {"api-server", "tokio", "Ana", "Zanzibar-Seven"} <= set(listing["names"])


def test_api_errors_carry_the_tools_codes(home: Home, served: Served) -> None:
    token = operator_token(home.path)
    cases = {
        "/api/v1/recall": (400, "invalid_input"),
        "/api/v1/recall?q=x&limit=many": (400, "invalid_input"),
        "/api/v1/recall?q=x&limit=1000": (400, "invalid_input"),
        "/api/v1/recall?q=x&types=poems": (400, "invalid_input"),
        "/api/v1/recall?q=x&as_of=yesterday-ish": (400, "invalid_input"),
        "/api/v1/memory/mem_00000000000000000000000000": (404, "not_found"),
        "/api/v1/history/mem_00000000000000000000000000": (404, "not_found"),
        "/api/v1/entities?name=nobody-knows-this": (404, "not_found"),
        "/api/v1/entities?offset=-1": (400, "invalid_input"),
    }
    for path, (status, code) in cases.items():
        answer = _get(served, path, token)
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), path


def test_an_agents_token_sees_only_what_that_agent_may(home: Home, served: Served) -> None:
    secret = home.ids["secret"]
    assert "Zanzibar" in _get(served, f"/api/v1/memory/{secret}", ALICE).text
    missing = "mem_00000000000000000000000000"
    for path in (f"/api/v1/memory/{secret}", f"/api/v1/history/{secret}"):
        hidden = _get(served, path, BOB)
        nothing = _get(served, path.replace(secret, missing), BOB)
        assert hidden.status_code == nothing.status_code == 404
        assert hidden.json()["error"]["code"] == nothing.json()["error"]["code"] == "not_found"
    reads = [
        "/api/v1/recall?q=staging+database+password&limit=50&include_stale=true",
        "/api/v1/recall?q=Zanzibar-Seven&strategy=relational",
        "/api/v1/entities",
        "/api/v1/entities?prefix=z",
        "/api/v1/stats",
        "/?q=staging+database+password",
        "/entities",
        "/health",
    ]
    for path in reads:
        answer = _get(served, path, BOB)
        text = answer.text
        if path.startswith("/api/"):
            doc = answer.json()
            doc.pop("query", None)  # the question bob asked, echoed
            text = json.dumps(doc)
        assert "Zanzibar" not in text and secret not in text, path
        assert "rotates on Fridays" not in text, path
    page = _get(served, f"/memory/{secret}", BOB)
    assert page.status_code == 404 and "not_found" in page.text
    assert "Zanzibar" not in page.text and "rotates on Fridays" not in page.text
    shared = _get(served, "/api/v1/recall?q=staging+database", BOB).json()["results"]
    assert home.ids["team"] in {r["id"] for r in shared}  # shared memories are seen
    assert _get(served, "/api/v1/entities?name=Zanzibar-Seven", BOB).status_code == 404
    assert _get(served, "/api/v1/stats", BOB).json()["total"] == 5
    journal = _get(served, "/journal", BOB)
    assert journal.status_code == 403 and "forbidden" in journal.text
    assert "memory.stored" not in journal.text


def test_a_dashboard_search_is_not_a_use(home: Home, served: Served) -> None:
    token = operator_token(home.path)
    before = _get(served, f"/api/v1/memory/{home.ids['deploy']}", token).json()["access_count"]
    for _ in range(3):
        hits = _get(served, "/api/v1/recall?q=Ana+deployed+api-server", token).json()["results"]
        assert home.ids["deploy"] in {r["id"] for r in hits}
    after = _get(served, f"/api/v1/memory/{home.ids['deploy']}", token).json()["access_count"]
    assert after == before


def test_actions_need_the_dashboards_origin_and_forget_a_confirmation(
    home: Home, served: Served
) -> None:
    login = httpx.get(served.login_url, timeout=60)
    scratch = home.ids["scratch"]
    token = operator_token(home.path)
    with httpx.Client(base_url=served.base, cookies=login.cookies, timeout=60) as browser:
        form = {"ids": [scratch], "confirmed": "yes"}
        for headers in ({}, {"Origin": "http://evil.example"}, {"Origin": "null"}):
            refused = browser.post("/actions/forget", data=form, headers=headers)
            assert refused.status_code == 403, headers
        asked = browser.post("/actions/forget", data={"ids": [scratch]},
                             headers={"Origin": served.base})  # fmt: skip
        assert asked.status_code == 200 and "really-forget" in asked.text
        assert "bigger connection pool" in asked.text
        still = _get(served, f"/api/v1/memory/{scratch}", token)
        assert still.status_code == 200  # asking changed nothing
        done = browser.post("/actions/forget", data=form, headers={"Origin": served.base})
        assert done.status_code == 200 and "Forgotten" in done.text
    assert _get(served, f"/api/v1/memory/{scratch}", token).status_code == 404


def test_an_agent_cannot_forget_what_it_cannot_see(home: Home, served: Served) -> None:
    login = httpx.get(served.base + f"/?token={BOB}", timeout=60)
    secret = home.ids["secret"]
    with httpx.Client(base_url=served.base, cookies=login.cookies, timeout=60) as browser:
        answer = browser.post("/actions/forget", data={"ids": [secret], "confirmed": "yes"},
                              headers={"Origin": served.base})  # fmt: skip
        assert "Zanzibar" not in answer.text
    assert _get(served, f"/api/v1/memory/{secret}", ALICE).status_code == 200


def test_the_journal_page_verifies_on_request(home: Home, served: Served) -> None:
    login = httpx.get(served.login_url, timeout=60)
    with httpx.Client(base_url=served.base, cookies=login.cookies, timeout=60) as browser:
        first = browser.get("/journal")
        assert "not verified since this server started" in first.text
        assert "memory.stored" in first.text
        verified = browser.post("/journal/verify", headers={"Origin": served.base})
        assert verified.status_code == 303
        page = browser.get("/journal")
        assert "intact" in page.text
        assert "no export configured" in page.text


def test_a_foreign_host_name_is_refused_on_loopback(home: Home, served: Served) -> None:
    # DNS rebinding: another site's name pointed at 127.0.0.1, with the operator's token too
    rebound = {"Host": "attacker.example"}
    for path in ("/", "/api/v1/stats", f"/?token={operator_token(home.path)}"):
        answer = _get(served, path, operator_token(home.path), headers=rebound)
        assert answer.status_code == 403, path
        assert "tokio" not in answer.text
    local = {"Host": served.base.removeprefix("http://").replace("127.0.0.1", "localhost")}
    assert _get(served, "/api/v1/stats", operator_token(home.path), headers=local).is_success


def test_home_paths_are_not_served(served: Served, home: Home) -> None:
    # The token file and the journal are never reachable as files.
    for path in ("/run/http.token", "/../run/http.token", "/journal/segment-1"):
        assert _get(served, path, operator_token(home.path)).status_code in (404, 405)


def test_serve_http_serves_the_dashboard_and_a_revoked_token_ends_its_session(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    write_tokens(home)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(server, base, timeout=90)
        assert httpx.get(f"{base}/mcp", timeout=10).status_code == 401  # /mcp as before
        login = httpx.get(f"{base}/?token={BOB}", timeout=60)
        assert login.status_code == 303
        with httpx.Client(base_url=base, cookies=login.cookies, timeout=60) as browser:
            page = browser.get("/")
            assert page.status_code == 200 and "agent bob" in page.text
            # bob's token leaves ferrex.toml: his session ends with it
            (home / "ferrex.toml").write_text(
                f'[[auth.tokens]]\nsha256 = "{token_hash(ALICE)}"\nagent = "alice"\n'
            )
            deadline = time.monotonic() + 30
            while browser.get("/api/v1/stats").status_code != 401:
                assert time.monotonic() < deadline, "the revoked token still opens the session"
                time.sleep(0.2)
            assert browser.get("/").status_code == 401
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_name_that_starts_like_an_address_is_not_one(home: Home, served: Served) -> None:
    # DNS rebinding with a name made to look like a loopback address
    token = operator_token(home.path)
    port = served.base.rsplit(":", 1)[1]
    for name in ("127.attacker.example", "127.0.0.1.nip.io", "localhost.attacker.example"):
        for path in ("/api/v1/stats", "/api/v1/recall?q=tokio", "/"):
            answer = _get(served, path, token, headers={"Host": f"{name}:{port}"})
            assert answer.status_code == 403, (name, path)
            assert "tokio" not in answer.text
    for local in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "127.0.0.2"):
        assert _get(served, "/api/v1/stats", token, headers={"Host": local}).is_success, local


def test_an_authorization_header_does_not_switch_the_origin_check_off(
    home: Home, served: Served
) -> None:
    login = httpx.get(served.login_url, timeout=60)
    scratch = home.ids["deploy"]
    with httpx.Client(base_url=served.base, cookies=login.cookies, timeout=60) as browser:
        for header in ("Basic YWxpY2U6c2VjcmV0", "Bearer", "Digest x", "Bearer not-a-token"):
            for action in ("/actions/forget", "/actions/confirm"):
                refused = browser.post(
                    action,
                    data={"ids": [scratch], "confirmed": "yes"},
                    headers={"Origin": "http://evil.example", "Authorization": header},
                )
                assert refused.status_code in (401, 403), (header, action)
                assert "Forgotten" not in refused.text and "Confirmed" not in refused.text
        # a trusted proxy's headers are believed only when configured (not here)
        forwarded = browser.post(
            "/actions/confirm",
            data={"ids": [scratch]},
            headers={"Origin": "https://evil.example", "X-Forwarded-Proto": "https",
                     "X-Forwarded-Host": "evil.example"},
        )  # fmt: skip
        assert forwarded.status_code == 403
    assert _get(served, f"/api/v1/memory/{scratch}", operator_token(home.path)).is_success
    # a script's bearer token needs no Origin: a browser never adds one by itself
    scripted = httpx.post(
        served.base + "/actions/confirm",
        data={"ids": [scratch]},
        headers={"Authorization": f"Bearer {operator_token(home.path)}"},
        timeout=60,
    )
    assert scripted.status_code == 200 and "Confirmed" in scripted.text


def test_an_agents_logins_never_log_the_operator_out(served: Served) -> None:
    operator = httpx.get(served.login_url, timeout=60)
    first_bob = httpx.get(served.base + f"/?token={BOB}", timeout=60)
    with httpx.Client(base_url=served.base, timeout=60) as client:
        for _ in range(300):
            assert client.get(f"/?token={BOB}").status_code == 303
            client.cookies.clear()
    with httpx.Client(base_url=served.base, cookies=operator.cookies, timeout=60) as browser:
        assert browser.get("/api/v1/stats").status_code == 200
    with httpx.Client(base_url=served.base, cookies=first_bob.cookies, timeout=60) as browser:
        assert browser.get("/api/v1/stats").status_code == 401  # bob's own oldest went


def test_not_found_carries_the_security_headers(served: Served, home: Home) -> None:
    for path in ("/no-such-page", "/api/v1/nothing"):
        answer = _get(served, path, operator_token(home.path))
        assert answer.status_code == 404, path
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "same-origin"
    wrong = httpx.delete(served.base + "/health", timeout=60)
    assert wrong.status_code == 405 and "GET" in wrong.headers["allow"]
    assert "frame-ancestors 'none'" in wrong.headers["content-security-policy"]


def _serve_http(home: Path) -> tuple[subprocess.Popen[str], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(
        [FERREX, "--home", str(home), "serve", "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        assert server.poll() is None, server.communicate()[1]
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return server, base
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)


def test_behind_a_tls_proxy_actions_work_and_the_cookie_is_secure(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_tokens(home)
    with (home / "ferrex.toml").open("a") as f:
        f.write('[server]\npublic_url = "https://memory.example.test"\n'
                'trusted_proxies = ["127.0.0.1"]\n')  # fmt: skip
    server, base = _serve_http(home)
    public = "https://memory.example.test"
    try:
        # the proxy passes the browser's Host on
        login = httpx.get(f"{base}/?token={ALICE}", headers={"Host": "memory.example.test"},
                          timeout=60)  # fmt: skip
        assert login.status_code == 303
        assert "Secure" in login.headers["set-cookie"]
        session = {"Cookie": login.headers["set-cookie"].split(";", 1)[0]}
        acted = httpx.post(
            f"{base}/actions/confirm", data={"ids": ["mem_00000000000000000000000000"]},
            headers={**session, "Host": "memory.example.test", "Origin": public}, timeout=60,
        )  # fmt: skip
        assert acted.status_code == 200 and "Confirmed" in acted.text
        # or it says what the browser used, from a trusted address
        forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "memory.example.test"}
        login = httpx.get(f"{base}/?token={ALICE}", headers=forwarded, timeout=60)
        assert login.status_code == 303 and "Secure" in login.headers["set-cookie"]
        acted = httpx.post(
            f"{base}/actions/confirm", data={"ids": ["mem_00000000000000000000000000"]},
            headers={**session, **forwarded, "Origin": public}, timeout=60,
        )  # fmt: skip
        assert acted.status_code == 200
        # plain http on the loopback address itself: no Secure (the browser would drop it)
        direct = httpx.get(f"{base}/?token={ALICE}", timeout=60)
        assert direct.status_code == 303 and "Secure" not in direct.headers["set-cookie"]
        # other names stay refused, by Host or by a forwarded host
        for headers in (
            {"Host": "attacker.example"},
            {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "attacker.example"},
        ):
            refused = httpx.get(f"{base}/api/v1/stats",
                                headers={**headers, "Authorization": f"Bearer {ALICE}"},
                                timeout=60)  # fmt: skip
            assert refused.status_code == 403, headers
        # /mcp answers to the public name too (the SDK's own Host check)
        mcp = httpx.post(
            f"{base}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Host": "memory.example.test", "Authorization": f"Bearer {ALICE}",
                     "Accept": "application/json, text/event-stream",
                     "MCP-Protocol-Version": "2025-06-18"},
            timeout=60,
        )  # fmt: skip
        assert mcp.status_code == 200 and "recall" in mcp.text
        cross = httpx.post(
            f"{base}/actions/confirm", data={"ids": ["mem_00000000000000000000000000"]},
            headers={**session, "Host": "memory.example.test",
                     "Origin": "https://evil.example"}, timeout=60,
        )  # fmt: skip
        assert cross.status_code == 403
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_public_url_that_is_not_an_origin_is_refused_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for bad in ('public_url = "memory.example.test"', 'public_url = "https://x.test/path"',
                'trusted_proxies = ["proxy.local"]', "max_connections = 0"):  # fmt: skip
        (home / "ferrex.toml").write_text(f"[server]\n{bad}\n")
        done = subprocess.run(
            [FERREX, "--home", str(home), "serve", "--http", "127.0.0.1:1"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode != 0, bad
        assert "server." in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.fixture(scope="module")
def pg_cluster() -> Iterator[Any]:
    from tests.pg_cluster import start_cluster

    cluster = start_cluster()
    yield cluster
    cluster.stop("fast")


def test_the_journal_check_verifies_the_journal_in_use(
    tmp_path: Path, pg_cluster: Any, shared_embedder: Embedder
) -> None:
    """With journal.url naming PostgreSQL, verify reads its records, not an empty directory."""
    home = tmp_path / "home"
    write_tokens(home)
    with (home / "ferrex.toml").open("a") as f:
        f.write(f'[journal]\nurl = "{pg_cluster.new_database()}"\n')
    app = App(home=home, config=load_config(home, None), _embedder=shared_embedder)
    assert app.claim()
    try:
        for text in ("The release train leaves on Thursdays", "Nadia owns the billing-api"):
            assert (
                Service(app).call(decode("store", {"content": text}), Caller())["status"]
                == "stored"
            )
    finally:
        app.close()
    with ferrex_ui(home) as served:
        login = httpx.get(served.login_url, timeout=60)
        with httpx.Client(base_url=served.base, cookies=login.cookies, timeout=60) as browser:
            verified = browser.post("/journal/verify", headers={"Origin": served.base})
            assert verified.status_code == 303
            page = browser.get("/journal").text
    assert "intact" in page and ": 2 records, head 2," in page, page
