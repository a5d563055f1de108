"""Fixtures of the journal suites: a real PostgreSQL cluster for the session, a fresh database
per test, and the contract suite's ``backend`` parameter (files and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from journal.backend import JournalBackend
from tests.pg_cluster import Cluster, start_cluster

Opener = Callable[[], JournalBackend]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    cluster = start_cluster()
    yield cluster
    cluster.stop("fast")


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """The URL of a fresh, empty database."""
    return pg_cluster.new_database()


@pytest.fixture(params=["files", "postgres"])
def open_journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens (another handle on) one journal of the parametrized backend; all closed after."""
    opened: list[JournalBackend] = []
    if request.param == "files":
        from journal import Journal

        def opener() -> JournalBackend:
            journal = Journal.open(tmp_path / "journal", segment_bytes=4096)
            opened.append(journal)
            return journal
    else:
        from journal.postgres import PostgresJournal

        url = request.getfixturevalue("pg_url")

        def opener() -> JournalBackend:
            journal = PostgresJournal.open(url)
            opened.append(journal)
            return journal

    yield opener
    for journal in opened:
        journal.close()
