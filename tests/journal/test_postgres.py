"""The PostgreSQL journal's bad inputs and faults, on a real cluster: every one is a clear
error naming what is wrong, and none writes anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ferrex.app import translated
from ferrex.errors import BackendUnavailable
from journal import JournalError, JournalFormatError, JournalTooNew
from journal.errors import JournalConnectError, JournalUnavailable
from journal.postgres import SCHEMA_VERSION, PostgresJournal
from tests.pg_cluster import Cluster
from tests.strategies import stored


def _tables(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "ORDER BY table_name"
        ).fetchall()
    return [r[0] for r in rows]


def _sql(url: str, *statements: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[call-overload]


def test_an_empty_database_gets_the_schema_once(pg_url: str) -> None:
    with PostgresJournal.open(pg_url) as journal:
        assert journal.head.position == 0 and journal.first() is None
    assert _tables(pg_url) == [
        "ferrex_journal_head",
        "ferrex_journal_meta",
        "ferrex_journal_records",
    ]
    with PostgresJournal.open(pg_url) as again:  # a second open checks, creates nothing
        assert again.append([stored(1)]).position == 1


def test_two_first_opens_at_once_create_one_schema(pg_url: str) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            PostgresJournal.open(pg_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_malformed_url_is_refused_with_the_url_named(pg_cluster: Cluster) -> None:
    with pytest.raises(JournalConnectError, match="not a valid PostgreSQL URL"):
        PostgresJournal.open("postgresql://127.0.0.1:notaport/x?bogus_option=1")


def test_a_wrong_password_is_a_refused_login(pg_cluster: Cluster) -> None:
    url = pg_cluster.url(password="wrong")
    with pytest.raises(JournalConnectError, match="refused the connection") as info:
        PostgresJournal.open(url)
    assert "password authentication failed" in str(info.value)  # PostgreSQL's own reason
    assert "wrong" not in str(info.value)  # the password is never echoed
    assert info.value.code == "connect"


def test_a_missing_database_is_named(pg_cluster: Cluster) -> None:
    with pytest.raises(JournalConnectError, match='database "does_not_exist" does not exist'):
        PostgresJournal.open(pg_cluster.url("does_not_exist"))


def test_nothing_listening_is_unavailable(pg_cluster: Cluster) -> None:
    from tests.ports import free_port

    url = f"postgresql://postgres:x@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(JournalUnavailable, match="cannot reach PostgreSQL"):
        PostgresJournal.open(url)
    with pytest.raises(BackendUnavailable) as info, translated():
        PostgresJournal.open(url)
    assert info.value.code == "backend_unavailable"


def test_a_partial_schema_is_refused_naming_what_is_missing(pg_url: str) -> None:
    PostgresJournal.open(pg_url).close()
    _sql(pg_url, "DROP TABLE ferrex_journal_head")
    with pytest.raises(JournalFormatError, match=r"partial .* no ferrex_journal_head"):
        PostgresJournal.open(pg_url)
    assert "ferrex_journal_head" not in _tables(pg_url)  # nothing was recreated


def test_a_foreign_table_with_our_name_is_refused(pg_url: str) -> None:
    _sql(
        pg_url,
        "CREATE TABLE ferrex_journal_meta (key text PRIMARY KEY, value text NOT NULL)",
        "INSERT INTO ferrex_journal_meta VALUES ('schema_version', '1')",
        "CREATE TABLE ferrex_journal_head (id integer, position bigint, hash bytea, "
        "recorded_at timestamptz, newest_version integer)",
        "CREATE TABLE ferrex_journal_records (id serial, payload json)",
    )
    with pytest.raises(JournalFormatError, match="ferrex_journal_records is not a ferrex"):
        PostgresJournal.open(pg_url)


def test_a_foreign_meta_table_is_refused(pg_url: str) -> None:
    _sql(pg_url, "CREATE TABLE ferrex_journal_meta (key text PRIMARY KEY, value text)")
    with pytest.raises(JournalFormatError, match="no schema version"):
        PostgresJournal.open(pg_url)


def test_a_newer_schema_is_refused_with_its_version(pg_url: str) -> None:
    PostgresJournal.open(pg_url).close()
    _sql(
        pg_url,
        f"UPDATE ferrex_journal_meta SET value = '{SCHEMA_VERSION + 1}' "
        "WHERE key = 'schema_version'",
    )
    with pytest.raises(JournalTooNew, match=f"version {SCHEMA_VERSION + 1}") as info:
        PostgresJournal.open(pg_url)
    assert info.value.found == SCHEMA_VERSION + 1


def test_records_of_a_newer_format_refuse_writers(pg_url: str) -> None:
    with PostgresJournal.open(pg_url) as journal:
        journal.append([stored(1)])
        _sql(pg_url, "UPDATE ferrex_journal_head SET newest_version = 99")
        with pytest.raises(JournalTooNew):
            journal.append([stored(2)])
    with pytest.raises(JournalTooNew, match="format version 99"):
        PostgresJournal.open(pg_url)


def test_a_session_killed_mid_call_is_unavailable_and_writes_nothing(pg_url: str) -> None:
    """The server side of the writer's session dies inside exclusive(): the append that
    follows fails as unavailable, nothing of it is written, and the next call reconnects."""
    with PostgresJournal.open(pg_url) as journal:
        journal.append([stored(1)])
        with pytest.raises(JournalUnavailable), journal.exclusive():
            _sql(
                pg_url,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                "application_name = 'ferrex' AND pid <> pg_backend_pid()",
            )
            journal.append_batch([[stored(2)], [stored(3)]])
        assert journal.refresh().position == 1  # reconnected; nothing half-written
        assert journal.append([stored(4)]).position == 2
        assert journal.verify().ok


def test_a_closed_journal_refuses(pg_url: str) -> None:
    journal = PostgresJournal.open(pg_url)
    journal.close()
    with pytest.raises(JournalError, match="closed"):
        journal.append([stored(1)])


def test_a_follower_polls_when_no_notification_comes(pg_url: str) -> None:
    """A record committed without a notification (as if it were lost) is still followed,
    within the polling interval."""
    from datetime import UTC, datetime

    from journal.record import encode_record

    with PostgresJournal.open(pg_url) as writer, PostgresJournal.open(pg_url) as reader:
        first = writer.append([stored(1)])
        assert first.hash is not None
        stop = threading.Event()
        seen: list[int] = []
        got = threading.Event()

        def follow() -> None:
            for record in reader.follow(after=1, stop=stop, poll_ms=300):
                seen.append(record.position)
                got.set()

        thread = threading.Thread(target=follow)
        thread.start()
        frame, _ = encode_record(2, datetime.now(UTC), first.hash, [stored(2)])
        time.sleep(0.5)  # the follower has read what there was and waits; no NOTIFY below
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO ferrex_journal_records (position, frame) VALUES (2, %s)", (frame,)
            )
        assert got.wait(5), "the follower did not poll"
        stop.set()
        thread.join(5)
        assert seen == [2] and not thread.is_alive()


def test_a_journal_url_that_is_not_postgresql_is_a_usage_error(tmp_path: Path) -> None:
    from ferrex.app import App
    from ferrex.config import load
    from ferrex.errors import UsageError

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "ferrex.toml").write_text('[journal]\nurl = "mysql://db/ferrex"\n')
    app = App(home=home, config=load(home, None))
    with pytest.raises(UsageError, match="postgresql:// URL"):
        app.journal()
    assert not (home / "journal").exists()  # nor did it fall back to files


def test_a_server_shutting_down_is_unavailable_and_a_retry_after_its_restart_succeeds(
    tmp_path: Path,
) -> None:
    """While PostgreSQL refuses new sessions (SQLSTATE 57P03: shutting down, starting up), the
    journal is unavailable, not misconfigured: the URL is right and a retry succeeds."""
    from tests.pg_cluster import binary, start_cluster

    cluster = start_cluster()  # its own: this test stops it
    try:
        url = cluster.new_database()
        PostgresJournal.open(url).close()
        held = psycopg.connect(url)  # a smart shutdown waits for this session to end
        try:
            cluster._run(binary("pg_ctl"), "-D", cluster.data, "-W", "-m", "smart", "stop")
            with pytest.raises(JournalUnavailable) as info:
                PostgresJournal.open(url)
            assert info.value.code == "unavailable"
            assert "57P03" in str(info.value)
            with pytest.raises(BackendUnavailable) as mapped, translated():
                PostgresJournal.open(url)
            assert mapped.value.code == "backend_unavailable"
            assert "user, password" not in str(mapped.value)
            done = subprocess.run(
                [sys.executable, "-c", "from ferrex.cli import main; main()",
                 "--home", str(tmp_path / "home"), "stats"],
                capture_output=True, text=True, timeout=120,
                env={**os.environ, "FERREX_JOURNAL_URL": url},
            )  # fmt: skip
            assert done.returncode == 5, done.stderr
            assert "error [backend_unavailable]" in done.stderr and "retry" in done.stderr
        finally:
            held.close()
        deadline = time.monotonic() + 60
        while cluster._run(binary("pg_ctl"), "-D", cluster.data, "status", check=False
                           ).returncode == 0:  # fmt: skip
            assert time.monotonic() < deadline, "PostgreSQL never finished shutting down"
            time.sleep(0.1)
        cluster.start()
        with PostgresJournal.open(url) as journal:  # the retry
            assert journal.append([stored(1)]).position == 1
    finally:
        cluster.stop("immediate")
        shutil.rmtree(cluster.data.parent, ignore_errors=True)


def test_a_server_that_failed_a_connection_while_restarting_is_not_a_refused_login(
    pg_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first connection fails the way libpq reports a server going down or coming up
    (no SQLSTATE); by the time the server's answer is read it is up and asks for a
    password. That is a restart, not a refusal: the second try connects (it was reported
    as "refused the connection … check the user and password" once in ~240 stores)."""
    import psycopg

    real = psycopg.connect
    calls: list[str] = []

    def flaky(url: str, **kwargs: Any) -> Any:
        calls.append(url)
        if len(calls) == 1:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return real(url, **kwargs)

    monkeypatch.setattr(psycopg, "connect", flaky)
    with PostgresJournal.open(pg_cluster.url()) as journal:
        assert journal.head.position >= 0
    assert len(calls) >= 2
    # A login PostgreSQL refuses is still refused, after one more try.
    calls.clear()
    with pytest.raises(JournalConnectError, match="refused the connection"):
        PostgresJournal.open(pg_cluster.url(password="wrong"))
    assert len(calls) == 2
