"""An expired memory is hidden by the dashboard as by the tools: its pages and ``/api/v1/``
over HTTP, a real ``ferrex ui`` on a real home whose owner does not sweep (so the memory is
still in the read model, past its ``expires_at``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.e2e.dashboard_helpers import ferrex_ui, operator_token, write_tokens
from tests.e2e.mcp_helpers import FERREX

GONE, KEPT = "mem_expired_printer", "mem_kept_printer"
LINES = [
    {"id": KEPT, "type": "episodic", "content": "The main printer on floor 2 works again",
     "entities": ["main-printer"], "t_valid": "2026-01-01T00:00:00Z"},
    {"id": GONE, "type": "episodic",
     "content": "The ghost-printer on floor 3 is being repaired until noon",
     "entities": ["ghost-printer"], "t_valid": "2026-01-01T00:00:00Z",
     "expires_at": "2026-01-02T00:00:00Z"},
]  # fmt: skip


def test_the_dashboard_hides_an_expired_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_tokens(home)
    with (home / "ferrex.toml").open("a") as config:
        config.write("\n[store]\nexpiry_sweep_seconds = 0\n")
    dump = tmp_path / "dump.jsonl"
    dump.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    done = subprocess.run([FERREX, "--home", str(home), "import", str(dump)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with ferrex_ui(home) as served:
        token = operator_token(home)

        def get(path: str) -> httpx.Response:
            headers = {"Authorization": f"Bearer {token}"}
            return httpx.get(served.base + path, headers=headers, timeout=60)

        for path in (f"/api/v1/memory/{GONE}", f"/api/v1/history/{GONE}",
                     "/api/v1/entities?name=ghost-printer"):  # fmt: skip
            answer = get(path)
            assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found"), path
        assert get("/api/v1/entities").json()["names"] == ["main-printer"]
        assert get("/api/v1/stats").json()["total"] == 1
        found = get("/api/v1/recall?q=ghost-printer+repaired+floor+3").json()["results"]
        assert GONE not in {r["id"] for r in found}
        assert get(f"/api/v1/history/{KEPT}").json()["versions"][0]["id"] == KEPT
        for page in ("/?q=ghost-printer+repaired", "/entities", "/entities?name=main-printer",
                     f"/memory/{KEPT}"):  # fmt: skip
            html = get(page)
            assert html.status_code == 200, page
            assert "repaired until noon" not in html.text and GONE not in html.text, page
            if "q=" not in page:  # the search page shows the query it was asked
                assert "ghost-printer" not in html.text, page
        assert get(f"/memory/{GONE}").status_code == 404
        assert "ghost-printer" not in get("/health").text
