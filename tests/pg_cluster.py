"""A throwaway PostgreSQL 15 cluster for tests: ``initdb`` in a temporary directory as the
``postgres`` OS user (PostgreSQL refuses to run as root), ``pg_ctl start`` on a free loopback
port, a fresh database per test, ``pg_ctl stop`` at the end of the session. Each test worker
(pytest-xdist) starts its own cluster, in its own directory on its own port."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import psycopg

from tests.ports import free_port

BIN_DIRS = (Path("/usr/lib/postgresql/15/bin"), Path("/usr/local/bin"))
USER = "postgres"
PASSWORD = "ferrex-test"


def binary(name: str) -> Path:
    for directory in BIN_DIRS:
        if (directory / name).is_file():
            return directory / name
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (looked in {BIN_DIRS})")
    return Path(found)


def _os_user() -> pwd.struct_passwd | None:
    """The account the cluster runs as: ``postgres`` when we are root (created if missing),
    else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        # Parallel test workers may each find it missing: whichever adds it, all then use it.
        done = subprocess.run(["useradd", "--system", "--no-create-home", USER],
                              capture_output=True, text=True, check=False)  # fmt: skip
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        raise RuntimeError(f"cannot add the {USER} user: {done.stderr.strip()}") from None


@dataclass
class Cluster:
    data: Path
    port: int
    user: pwd.struct_passwd | None
    _names = count(1)

    def _run(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(a) for a in args]
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=120)

    @classmethod
    def create(cls, root: Path) -> Cluster:
        user = _os_user()
        root.mkdir(parents=True, exist_ok=True)
        data = root / "data"
        pwfile = root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        cluster = cls(data, free_port(), user)
        cluster._run(
            binary("initdb"), "-D", data, "-U", USER, "--auth=scram-sha-256",
            f"--pwfile={pwfile}", "--encoding=UTF8", "--no-instructions",
        )  # fmt: skip
        with open(data / "postgresql.conf", "a") as conf:
            conf.write(
                f"listen_addresses = '127.0.0.1'\nport = {cluster.port}\n"
                f"unix_socket_directories = '{root}'\nfsync = on\n"
                "max_connections = 200\n"
            )
        cluster.start()
        return cluster

    def start(self) -> None:
        self._run(binary("pg_ctl"), "-D", self.data, "-w", "-l", self.data.parent / "log",
                  "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(binary("pg_ctl"), "-D", self.data, "-w", "-m", mode, "stop", check=False)

    def url(self, database: str = "postgres", *, password: str = PASSWORD) -> str:
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def start_cluster() -> Cluster:
    return Cluster.create(Path(tempfile.mkdtemp(prefix="ferrex-pg-")))
