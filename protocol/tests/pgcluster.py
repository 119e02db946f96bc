"""Private PostgreSQL servers for the hosted-mode and fleet tests: initdb into a fresh temporary directory, a loopback
TCP port, started and stopped with pg_ctl; a streaming standby made with pg_basebackup -R.

PostgreSQL refuses to run as root, and CI runs as root: then every PostgreSQL program runs as the ``postgres`` user
(``runuser -u postgres --``; Debian's package creates it), from the cluster's own directory — never from the caller's,
which may be a checkout in a directory only root can enter. A program's result is its standard output alone; its
standard error is kept apart and shown when it fails.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile


def find_bin() -> pathlib.Path | None:
    explicit = os.environ.get("TIPSD_PG_BIN")
    if explicit and (pathlib.Path(explicit) / "initdb").exists():
        return pathlib.Path(explicit)
    base = pathlib.Path("/usr/lib/postgresql")
    versions = sorted((int(p.name) for p in base.iterdir() if p.name.isdigit()), reverse=True) if base.exists() else []
    for version in versions:
        candidate = base / str(version) / "bin"
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    found = shutil.which("initdb")
    return pathlib.Path(found).resolve().parent if found else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresError(RuntimeError):
    pass


class Server:
    """One PostgreSQL server (a primary, or a standby of one) in its own directory, on a loopback port."""

    def __init__(self, root: pathlib.Path, name: str, port: int | None = None, *, bin_dir: pathlib.Path | None = None):
        self.bin = bin_dir or find_bin()
        if self.bin is None:
            raise PostgresError("PostgreSQL's server programs were not found (Debian: apt install postgresql)")
        self.root = root
        self.name = name
        self.data = root / name
        self.log = root / f"{name}.log"
        self.port = port or free_port()
        self.running = False

    # -- running PostgreSQL's programs

    @property
    def as_postgres(self) -> bool:
        return os.geteuid() == 0

    def argv(self, program: str, *args: str) -> list[str]:
        """The command line that runs one of the server's programs (as the postgres user when we are root)."""
        argv = [str(self.bin / program), *args]
        return ["/usr/sbin/runuser", "-u", "postgres", "--", *argv] if self.as_postgres else argv

    def run(self, program: str, *args: str, check: bool = True) -> str:
        argv = self.argv(program, *args)
        # pg_ctl start leaves the server behind holding the program's descriptors: output goes to files, never pipes.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            status = subprocess.run(argv, cwd=self.root, stdin=subprocess.DEVNULL, stdout=out, stderr=err).returncode
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
        if check and status != 0:
            raise PostgresError(f"{program} {' '.join(args)} failed ({status}): {stderr}{stdout}\n{self.server_log()}")
        return stdout

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    # -- lifecycle

    def init(self) -> Server:
        self.run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-locale", "--no-sync"
        )
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\nwal_level = replica\nmax_wal_senders = 10\nhot_standby = on\n")
        return self

    def start(self, *settings: str) -> Server:
        options = [
            f"-p {self.port}",
            f"-k {self.root}",
            "-c listen_addresses=127.0.0.1",
            "-c max_connections=200",
            f"-c cluster_name={self.name}",
            *settings,
        ]
        self.run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "120", "-o", " ".join(options), "start"
        )
        self.running = True
        return self

    def stop(self, mode: str = "fast") -> None:
        if self.running:
            self.run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "120", "stop", check=False)
            self.running = False

    def kill(self) -> None:
        """The server dies at once (pg_ctl stop -m immediate: no shutdown checkpoint, like a crash)."""
        self.stop("immediate")

    def promote(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "promote")

    def standby(self, name: str, port: int | None = None) -> Server:
        """A streaming standby of this server (pg_basebackup -R), not yet started."""
        standby = Server(self.root, name, port, bin_dir=self.bin)
        self.run(
            "pg_basebackup",
            "-D",
            str(standby.data),
            "-R",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-X",
            "stream",
        )
        return standby

    # -- talking to it

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def query(self, sql: str) -> str:
        """Runs SQL with psql; its unaligned, tuples-only output (standard output only)."""
        return self.run("psql", *self.psql_args(sql))

    def psql_args(self, sql: str) -> list[str]:
        """psql's arguments that run `sql` here (unaligned, tuples only, stopping at the first error)."""
        return [
            "-X",
            "-q",
            "-A",
            "-t",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ]


class Cluster:
    """A temporary directory holding one or more servers; removed by ``destroy``."""

    def __init__(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="tipsd-pg-"))
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as error:
                raise PostgresError("running as root, but there is no postgres user to run PostgreSQL as") from error
            os.chown(self.root, user.pw_uid, user.pw_gid)
        os.chmod(self.root, 0o755)
        self.servers: list[Server] = []

    def primary(self, name: str = "primary") -> Server:
        server = Server(self.root, name).init()
        self.servers.append(server)
        return server

    def add(self, server: Server) -> Server:
        self.servers.append(server)
        return server

    def destroy(self) -> None:
        for server in self.servers:
            try:
                server.kill()
            except PostgresError:
                pass
        shutil.rmtree(self.root, ignore_errors=True)
