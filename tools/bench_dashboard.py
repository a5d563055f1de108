"""Dashboard page load times in headless chromium, at several memory counts; screenshots.

    nice -n 10 python -m tools.bench_dashboard [--sizes 10000,100000] [--homes DIR,...]
                                               [--loads 7] [--keep DIR]
    python -m tools.bench_dashboard --screenshots docs/

Each size is a home built through the real import path (``store_many``: events with two of
200 entity names, and facts of 500 subjects whose values change, so histories are long), or
an existing one (``--homes``). A real ``ferrex ui`` process serves it; Debian's chromium
(through /usr/bin/chromedriver, the flags of the browser tests) loads each page ``--loads``
times after one warm-up load, and the median of the navigation timing's ``loadEventEnd`` is
reported per page, with the server's share (``responseEnd - requestStart``). The JSON API is
timed the same way over plain HTTP. Speed is reported, never asserted.

``--screenshots DIR`` builds a small demonstration home and writes ``dashboard-*.png`` there.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from ferrex.app import App
from ferrex.config import load
from ferrex.rules.memory_input import StoreRequest
from ferrex.server.service import Caller, Service
from ferrex.server.tool_calls import decode
from tools import harness
from tools.bench_journal import WORDS

NAMES = [f"{a}-{b}" for a in ("billing", "search", "auth", "ledger", "edge", "infra", "mobile",
         "web", "data", "ops") for b in ("api", "db", "queue", "cache", "ui", "worker", "cron",
         "proxy", "sdk", "team", "oncall", "ml", "etl", "gateway", "store", "index", "jobs",
         "auditor", "relay", "vault")]  # fmt: skip
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1200,900")  # fmt: skip


def requests_for(n: int, rng: random.Random) -> list[StoreRequest]:
    out = []
    for i in range(n):
        if i % 4 == 3:  # a fact whose value changes: subject i%500 gets a new version
            subject = f"service-{i % 500}"
            out.append(StoreRequest(subject=subject, predicate="uses",
                                    object=f"runtime {i // 500}.{i % 7}",
                                    entities=(subject, rng.choice(NAMES))))  # fmt: skip
        else:
            words = " ".join(rng.choice(WORDS) for _ in range(14))
            out.append(StoreRequest(content=f"INC-{20000 + i}: {words} (note {i})",
                                    entities=tuple(rng.sample(NAMES, 2))))  # fmt: skip
    return out


def build(home: Path, n: int, rng: random.Random) -> None:
    app = App(home=home, config=load(home, env={}))
    try:
        started = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if done == total or done % 5120 < 512:
                print(f"  {done}/{total} stored, {time.perf_counter() - started:.0f} s", flush=True)

        app.writer().store_many(requests_for(n, rng), chunk=512, progress=progress)
    finally:
        app.close()


def chromium(profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service as DriverService

    os.environ["SE_AVOID_STATS"] = "true"
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=DriverService("/usr/bin/chromedriver"))
    driver.set_page_load_timeout(600)
    return driver


class Served:
    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen([harness.FERREX, "--home", str(home), "ui"],
                                        stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.process.stdout is not None
        self.login = self.process.stdout.readline().strip()
        self.base = self.login.split("/?", 1)[0].rstrip("/")
        self.token = self.login.split("token=", 1)[1] if "token=" in self.login else ""
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit(f"ferrex ui did not start on {home}")
            time.sleep(0.2)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def api(served: Served, path: str) -> Any:
    answer = httpx.get(served.base + path, timeout=600,
                       headers={"Authorization": f"Bearer {served.token}"})  # fmt: skip
    answer.raise_for_status()
    return answer.json()


def pages(served: Served) -> dict[str, str]:
    """One URL per page, chosen from what the home holds."""
    hit = api(served, "/api/v1/recall?q=service-7+uses+runtime&limit=1")["results"][0]["id"]
    name = api(served, "/api/v1/entities")["names"][0]
    return {
        "search (recall, 10 hits)": "/?q=INC+deploy+rollback+latency&limit=10",
        "memory + history": f"/memory/{hit}",
        "entity + graph": f"/entities?name={name}",
        "entities list": "/entities",
        "health (stats + reflect)": "/health",
        "journal": "/journal",
    }


def measure(served: Served, profile: Path, loads: int) -> list[tuple[str, float, float]]:
    driver = chromium(profile)
    rows = []
    try:
        driver.get(served.login)
        for label, path in pages(served).items():
            totals, server = [], []
            for k in range(loads + 1):
                driver.get(served.base + path)
                timing = driver.execute_script(
                    "const t = performance.getEntriesByType('navigation')[0];"
                    "return [t.loadEventEnd, t.responseEnd - t.requestStart];"
                )
                if k:  # the first load warms the server's caches
                    totals.append(float(timing[0]))
                    server.append(float(timing[1]))
            rows.append((label, statistics.median(totals), statistics.median(server)))
        for label, path in (("api recall", "/api/v1/recall?q=INC+deploy&limit=10"),
                            ("api stats", "/api/v1/stats")):  # fmt: skip
            times = []
            for _ in range(loads):
                started = time.perf_counter()
                api(served, path)
                times.append((time.perf_counter() - started) * 1000)
            rows.append((label, statistics.median(times), statistics.median(times)))
    finally:
        driver.quit()
    return rows


def screenshots(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ferrex-shots-") as work:
        home = Path(work) / "home"
        demo(home)
        export = Path(work) / "audit"
        subprocess.run([harness.FERREX, "--home", str(home), "export", "git", str(export)],
                       check=True, capture_output=True)  # fmt: skip
        (home / "ferrex.toml").write_text(f'[dashboard]\ngit_export = "{export}"\n')
        served = Served(home)
        driver = chromium(Path(work) / "profile")
        try:
            driver.get(served.login)
            httpx.post(served.base + "/journal/verify", timeout=60,
                       headers={"Authorization": f"Bearer {served.token}"})  # fmt: skip
            fact = "/api/v1/recall?q=api-server+uses+tokio&types=semantic&limit=1"
            hit = api(served, fact)["results"][0]["id"]
            shots = {
                "search": "/?q=which+tokio+does+api-server+use&include_invalidated=1",
                "memory": f"/memory/{hit}",
                "entity": "/entities?name=api-server",
                "health": "/health",
                "journal": "/journal",
            }
            for name, path in shots.items():
                driver.get(served.base + path)
                height = driver.execute_script("return document.body.scrollHeight")
                driver.set_window_size(1100, min(max(int(height) + 20, 500), 1300))
                target = directory / f"dashboard-{name}.png"
                driver.save_screenshot(str(target))
                _shrink(target)
                print(f"wrote {target} ({target.stat().st_size} bytes)")
        finally:
            driver.quit()
            served.close()


def _shrink(png: Path) -> None:
    """A 64-colour palette: a flat page loses nothing visible and the file a lot."""
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with matplotlib (a dev dependency); else keep it
        return
    with Image.open(png) as image:
        small = image.convert("RGB").quantize(colors=64)
    small.save(png, optimize=True)


def demo(home: Path) -> None:
    """A small home that shows each page: a fact's history, entities, a shared note."""
    app = App(home=home, config=load(home, env={}))
    assert app.claim()
    service = Service(app)

    def store(**args: Any) -> str:
        return str(service.call(decode("store", args), Caller())["id"])

    try:
        store(subject="api-server", predicate="uses", object="tokio 1.32",
              entities=["api-server", "tokio"], valid_from="2025-11-03T09:00:00Z")  # fmt: skip
        store(subject="api-server", predicate="uses", object="tokio 1.36",
              entities=["api-server", "tokio"], valid_from="2026-03-01T09:00:00Z")  # fmt: skip
        new = store(subject="api-server", predicate="uses", object="tokio 1.38",
                    entities=["api-server", "Tokio"],
                    valid_from="2026-09-15T09:00:00Z")  # fmt: skip
        store(content="On 2026-11-02 Ana deployed api-server v2.3 to production after the "
              "load test passed", entities=["Ana", "api-server"])  # fmt: skip
        store(content="Ana and Ravi agreed to move api-server's sessions to Redis 7 in Q1",
              entities=["Ana", "Ravi", "api-server", "Redis"])  # fmt: skip
        store(name="rollback api-server", steps=["freeze deploys", "redeploy the previous tag",
              "tell #ops"], entities=["api-server"])  # fmt: skip
        store(subject="billing-api", predicate="written in", object="Go 1.22",
              entities=["billing-api", "Go"])  # fmt: skip
        store(content="INC-4417: api-server latency spike traced to the tokio blocking pool",
              entities=["api-server", "tokio", "INC-4417"])  # fmt: skip
        service.call(decode("confirm", {"ids": [new]}), Caller())
        service.call(decode("recall", {"query": "what does api-server use"}), Caller())
    finally:
        app.flush_access()
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000", help="memory counts to build")
    parser.add_argument("--homes", default="", help="existing data directories to measure")
    parser.add_argument("--loads", type=int, default=7, help="timed loads per page")
    parser.add_argument("--keep", type=Path, help="build homes here and keep them")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--screenshots", type=Path, help="write screenshots here and stop")
    harness.add_arguments(parser)
    args = parser.parse_args()
    harness.begin(args)
    if args.screenshots is not None:
        screenshots(args.screenshots)
        return
    print(f"load average before: {os.getloadavg()}, cores: {os.cpu_count()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="ferrex-bench-dashboard-"))
    homes = [Path(h) for h in args.homes.split(",") if h]
    for size in [int(s) for s in args.sizes.split(",") if s and not homes]:
        home = work / f"home-{size}"
        if not (home / "journal").exists():
            started = time.perf_counter()
            build(home, size, random.Random(args.seed))
            print(f"built {size} memories in {time.perf_counter() - started:.0f} s")
        homes.append(home)
    for home in homes:
        served = Served(home)
        try:
            count = api(served, "/api/v1/stats")["total"]
            print(f"\n{home}: {count} active memories; medians of {args.loads} loads (ms)")
            print(f"  {'page':28} {'loaded':>9} {'server':>9}")
            for label, total, server in measure(served, work / f"profile-{home.name}", args.loads):
                print(f"  {label:28} {total:9.0f} {server:9.0f}")
        finally:
            served.close()
    print(f"\nload average after: {os.getloadavg()}; work dir {work}")


if __name__ == "__main__":
    main()
