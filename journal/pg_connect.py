"""Connecting to the PostgreSQL journal, and what a failed connection means.

:func:`connect` opens an autocommit connection with synchronous commits; a failure becomes a
:class:`~journal.errors.JournalConnectError` (refused: the URL or the login is wrong) or a
:class:`~journal.errors.JournalUnavailable` (away, starting up, shutting down, full), told
apart by :func:`connect_error`. libpq reports a failed connection with no SQLSTATE, so
:func:`_server_answer` reads the server's first answer to a start-up message of its own
(protocol 3.0, without TLS). :func:`is_url` and :func:`redacted` need no driver.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from journal.errors import JournalConnectError, JournalError, JournalUnavailable

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT = 10


def is_url(value: str | None) -> bool:
    """Whether a configured journal location names PostgreSQL."""
    return value is not None and value.startswith(("postgresql://", "postgres://"))


def redacted(url: str) -> str:
    """The URL with any password replaced by ``***`` (for ``ferrex config show``); needs no
    driver."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            credentials, _, hosts = netloc.rpartition("@")
            user, colon, _password = credentials.partition(":")
            netloc = f"{user}{':***' if colon else ''}@{hosts}"
        query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "(a URL that does not parse)"


def driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise JournalConnectError(
            "the journal is configured on PostgreSQL but psycopg is not installed",
            hint="pip install 'ferrex[postgres]', or unset journal.url to use the file journal",
        ) from exc
    return psycopg


def display(url: str) -> str:
    """The URL without its password, for messages."""
    psycopg = driver()
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable URL)"
    user = f"{params['user']}@" if params.get("user") else ""
    host = params.get("host") or "localhost"
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname') or ''}"


def connect(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection with synchronous commits, or a JournalError saying why not."""
    pg = driver()
    where = display(url)
    try:
        pg.conninfo.conninfo_to_dict(url)
    except pg.ProgrammingError as exc:
        raise JournalConnectError(
            f"journal.url is not a valid PostgreSQL URL: {exc}",
            hint="write it as postgresql://user:password@host:5432/database",
        ) from exc
    conn: psycopg.Connection[Any] | None = None
    for attempt in (1, 2):
        try:
            conn = pg.connect(
                url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT,
                application_name="ferrex",
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=3,
            )
            break
        except pg.OperationalError as exc:
            error = connect_error(exc, where, url)
            # A refusal known only from the server's answer a moment later (libpq gave no
            # SQLSTATE) may be a server that was restarting when we connected and is up by
            # the time it is asked: one more try tells a login PostgreSQL refuses from one
            # it merely could not take then.
            if attempt == 1 and isinstance(error, JournalConnectError) and not _sqlstate(exc):
                time.sleep(RETRY_PAUSE)
                continue
            raise error from exc
    assert conn is not None
    try:
        conn.execute("SET synchronous_commit = on")
    except pg.Error as exc:
        conn.close()
        raise JournalUnavailable(f"PostgreSQL at {where} failed at once: {exc}") from exc
    return conn


RETRY_PAUSE = 0.2
"""Seconds before the one more try of a connection the server seemed to refuse."""


def _sqlstate(exc: Exception) -> str | None:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) else None


REFUSED = {
    "28P01": "refused the login (wrong password)",
    "28000": "refused the login (no such role, or not allowed to connect from here)",
    "3D000": "has no such database",
    "42501": "refused (insufficient privilege)",
}


_UNAVAILABLE_CLASSES = ("08", "53", "57")
"""SQLSTATE classes of a server that is there but cannot take us now: connection exceptions,
insufficient resources (53300 too many connections) and operator intervention (57P01
admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now: starting up, shutting down,
in recovery)."""


def connect_error(exc: Exception, where: str, url: str | None = None) -> JournalError:
    """A failed connection: refused (the URL or login is wrong) or unavailable (PostgreSQL is
    away, starting up, shutting down, or full).

    libpq reports a failed connection with no SQLSTATE, so which it is is found out, never
    read from the message: :func:`_server_answer` opens a session of its own and reads the
    server's first answer. An error there carries its SQLSTATE (57P03 while the server starts
    or stops, 53300 when it is full); an authentication request means PostgreSQL is up and
    refused us (its own message then says why: password, role, database, pg_hba); no TCP
    connection at all means it is away.
    """
    state = getattr(exc, "sqlstate", None)
    answer = None if state is not None or url is None else _server_answer(url)
    if answer is not None and answer != _AUTH:
        state = answer
    if (
        state in REFUSED
        or answer == _AUTH
        or (state is not None and not state.startswith(_UNAVAILABLE_CLASSES))
    ):
        why = REFUSED.get(state or "", "refused the connection")
        return JournalConnectError(
            f"PostgreSQL at {where} {why}: {first_line(exc)}",
            hint="check the user, password and database of journal.url (FERREX_JOURNAL_URL)",
        )
    if state is not None:
        return JournalUnavailable(
            f"PostgreSQL at {where} cannot take connections now (SQLSTATE {state}): "
            f"{first_line(exc)}",
            hint="it is starting up, shutting down or full: retry in a moment",
        )
    return JournalUnavailable(
        f"cannot reach PostgreSQL at {where}: {first_line(exc)}",
        hint="is PostgreSQL running, and is journal.url's host and port right?",
    )


_AUTH = "auth"
""":func:`_server_answer`'s word for an authentication request: the server is up."""


def _server_answer(url: str) -> str | None:
    """How the server at the URL's first host answers a session's start: the SQLSTATE of an
    error it sends before authentication (it refuses every new session while starting up or
    shutting down, and when full), :data:`_AUTH` when it asks us to authenticate, None when
    it cannot be reached or its answer is not one of those.

    The start-up message is protocol 3.0's, without TLS: PostgreSQL decides whether it can
    take a session at all before looking at encryption, pg_hba or the password."""
    import os
    import socket
    import struct

    params = driver().conninfo.conninfo_to_dict(url)
    # libpq reads PGHOST and PGPORT when the URL names neither: so does the probe.
    host = str(params.get("host") or os.environ.get("PGHOST") or "localhost").split(",")[0]
    port = int(str(params.get("port") or os.environ.get("PGPORT") or "5432").split(",")[0])
    user = str(params.get("user") or os.environ.get("PGUSER") or _os_user())
    database = str(params.get("dbname") or user)
    body = (
        struct.pack("!i", 3 << 16)
        + b"".join(
            k.encode() + b"\0" + v.encode() + b"\0"
            for k, v in (("user", user), ("database", database))
        )
        + b"\0"
    )
    try:
        if host.startswith("/"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(os.path.join(host, f".s.PGSQL.{port}"))
        else:
            sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        with sock:
            sock.sendall(struct.pack("!i", len(body) + 4) + body)
            head = _read_exactly(sock, 5)
            kind, length = head[:1], struct.unpack("!i", head[1:])[0]
            if kind == b"R":
                return _AUTH
            if kind != b"E" or not 4 < length <= 65536:
                return None
            fields = _read_exactly(sock, length - 4)
    except (OSError, struct.error):
        return None
    for field in fields.split(b"\0"):
        if field[:1] == b"C":  # the SQLSTATE field of an ErrorResponse
            return field[1:].decode("ascii", "replace")
    return None


def _read_exactly(sock: Any, n: int) -> bytes:
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise ConnectionError("the server closed the connection")
        data += more
    return data


def _os_user() -> str:
    import getpass

    return getpass.getuser()


def first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
