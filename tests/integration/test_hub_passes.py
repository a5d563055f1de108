"""The owner's background passes outlive a failed turn: the expiry sweep after an ``OSError``
(the process out of descriptors) and the consolidation pass after any exception.

A real owner (a :class:`Hub` owning a home in this process, its sweep every 0.2 s) whose
service's two passes are wrapped to fail their first turns; the sweep then forgets the
expired memory, on the same thread.
"""

from __future__ import annotations

import errno
import json
import threading
import time
from pathlib import Path

from ferrex.app import App
from ferrex.config import load as load_config
from ferrex.models import Embedder
from ferrex.server.hub import Hub
from ferrex.server.service import Caller
from ferrex.server.tool_calls import decode


def test_the_expiry_sweep_goes_on_after_an_os_error(
    tmp_path: Path, shared_embedder: Embedder
) -> None:
    home = tmp_path / "home"
    owner = Hub(home, lambda: App(home=home, config=load_config(home, None),
                                  _embedder=shared_embedder),
                Caller(), flush_every=None, sweep_every=0.2)  # fmt: skip
    try:
        stored = owner.call(decode("store", {"content": "Scratch: the canary run 7 is in progress",
                                      "ttl": "1s"}))  # fmt: skip
        ownership = owner._ownership
        assert ownership is not None
        service = ownership.service.service
        real_sweep, real_consolidate = service.sweep_expired, service.consolidate_due
        failures = {"sweep": 0, "consolidate": 0}
        forgot: list[int] = []

        def sweep() -> int:
            if failures["sweep"] < 3:
                failures["sweep"] += 1
                raise OSError(errno.EMFILE, "Too many open files")
            forgot.append(real_sweep())
            return forgot[-1]

        def consolidate() -> int:
            if failures["consolidate"] < 3:
                failures["consolidate"] += 1
                raise RuntimeError("consolidation broke")
            return real_consolidate()

        service.sweep_expired = sweep  # type: ignore[method-assign]
        service.consolidate_due = consolidate  # type: ignore[method-assign]
        deadline = time.monotonic() + 30
        while sum(forgot) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert failures == {"sweep": 3, "consolidate": 3}
        assert sum(forgot) == 1
        assert not service.app.projections().read_model.expiring(by=time.time() + 10**6)
        threads = {t.name for t in threading.enumerate()}
        assert "ferrex-expiry" in threads
        assert stored["id"] not in json.dumps(
            owner.call(decode("recall", {"query": "canary run 7"}))
        )
    finally:
        owner.close()
