"""The write API's idempotency keys (pure bookkeeping, no server)."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from ferrex.errors import KeyReused
from ferrex.server.dashboard.keys import IdempotencyKeys


def test_a_key_runs_its_work_once_and_replays_the_answer() -> None:
    keys = IdempotencyKeys()
    runs: list[int] = []

    def work() -> tuple[int, dict[str, object]]:
        runs.append(1)
        return 200, {"id": "mem_1"}

    assert keys.run("agent:alice", "k", "fp", work) == ((200, {"id": "mem_1"}), False)
    assert keys.run("agent:alice", "k", "fp", work) == ((200, {"id": "mem_1"}), True)
    assert len(runs) == 1
    # another principal's key of the same name is its own
    assert keys.run("agent:bob", "k", "fp", work)[1] is False
    assert len(runs) == 2
    with pytest.raises(KeyReused):
        keys.run("agent:alice", "k", "another body", work)
    assert len(runs) == 2


def test_a_retry_while_the_first_runs_waits_for_its_answer() -> None:
    keys = IdempotencyKeys()
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow() -> tuple[int, dict[str, object]]:
        runs.append(1)
        started.set()
        release.wait()
        return 200, {"id": "mem_slow"}

    answers: list[tuple[tuple[int, dict[str, object]], bool]] = []
    first = threading.Thread(target=lambda: answers.append(keys.run("op", "k", "fp", slow)))
    first.start()
    started.wait()
    second = threading.Thread(target=lambda: answers.append(keys.run("op", "k", "fp", slow)))
    second.start()
    release.set()
    first.join()
    second.join()
    assert len(runs) == 1
    assert sorted(replayed for _, replayed in answers) == [False, True]
    assert all(answer == (200, {"id": "mem_slow"}) for answer, _ in answers)


def test_a_server_error_is_not_kept_so_a_retry_runs_again() -> None:
    keys = IdempotencyKeys()
    outcomes = iter([(503, {"error": {"code": "backend_unavailable"}}), (200, {"id": "m"})])
    assert keys.run("op", "k", "fp", lambda: next(outcomes))[0][0] == 503
    assert keys.run("op", "k", "fp", lambda: next(outcomes)) == ((200, {"id": "m"}), False)
    assert len(keys) == 1


def test_keys_are_bounded_in_count_and_time() -> None:
    keys = IdempotencyKeys(count=3)
    for i in range(5):
        keys.run("op", f"k{i}", "fp", lambda: (200, {}))
    assert len(keys) == 3
    # k0 was dropped (the oldest): the same key runs again, even with another body
    assert keys.run("op", "k0", "other", lambda: (200, {"again": True}))[1] is False
    expiring = IdempotencyKeys(seconds=0)
    expiring.run("op", "k", "fp", lambda: (200, {}))
    assert expiring.run("op", "k", "other", lambda: (200, {}))[1] is False  # expired: new


def test_kept_answers_survive_a_restart_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "run" / "api-idempotency.jsonl"
    first = IdempotencyKeys(path=path)
    assert not path.exists()  # nothing kept yet, nothing written
    first.run("agent:alice", "secret-key-1", "fp", lambda: (200, {"id": "mem_1"}))
    first.run("op", "k503", "fp", lambda: (503, {"error": {"code": "backend_unavailable"}}))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "secret-key-1" not in text and "alice" not in text  # names are hashed
    path.write_text(text + '{"n": "torn')  # a crash mid-append leaves a torn last line
    again = IdempotencyKeys(path=path)
    assert len(again) == 1
    runs: list[int] = []
    answer = again.run("agent:alice", "secret-key-1", "fp", lambda: (runs.append(1), (200, {}))[1])
    assert answer == ((200, {"id": "mem_1"}), True) and not runs
    with pytest.raises(KeyReused):
        again.run("agent:alice", "secret-key-1", "other", lambda: (200, {}))
    assert "torn" not in path.read_text()  # rewritten at load without it


def test_the_file_is_compacted_and_expired_answers_are_not_read_back(tmp_path: Path) -> None:
    path = tmp_path / "keys.jsonl"
    keys = IdempotencyKeys(count=2, path=path)
    for i in range(7):
        keys.run("op", f"k{i}", "fp", lambda: (200, {}))
    assert len(path.read_text().splitlines()) < 4  # rewritten at twice the count
    assert len(IdempotencyKeys(count=2, path=path)) == 2
    expired = IdempotencyKeys(seconds=0, path=tmp_path / "old.jsonl")
    expired.run("op", "k", "fp", lambda: (200, {}))
    assert len(IdempotencyKeys(path=tmp_path / "old.jsonl")) == 0


def test_an_unwritable_file_leaves_the_keys_in_memory(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    keys = IdempotencyKeys(path=blocked / "keys.jsonl")  # its parent is a file
    assert keys.run("op", "k", "fp", lambda: (200, {"id": "m"}))[1] is False
    assert keys.run("op", "k", "fp", lambda: (200, {}))[1] is True
    assert keys.path is None


def test_another_principals_keys_never_evict_mine(tmp_path: Path) -> None:
    path = tmp_path / "keys.jsonl"
    keys = IdempotencyKeys(count=3, total=5, path=path)
    keys.run("agent:alice", "mine", "fp", lambda: (200, {"id": "mem_alice"}))
    for i in range(4):  # more than a principal keeps: bob's oldest go, not alice's
        keys.run("agent:bob", f"b{i}", "fp", lambda: (200, {}))
    for i in range(3):  # beyond the total: the busiest principal's oldest go
        keys.run("agent:carol", f"c{i}", "fp", lambda: (200, {}))
    assert len(keys) == 5
    for again in (keys, IdempotencyKeys(count=3, total=5, path=path)):  # and after a restart
        assert again.run("agent:alice", "mine", "fp", lambda: (200, {"id": "other"})) == (
            (200, {"id": "mem_alice"}),
            True,
        )
        assert again.run("agent:bob", "b0", "fp", lambda: (200, {"ran": True}))[1] is False
