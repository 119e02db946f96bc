"""Finding and running a real ``tipsd`` (used by the pytest plugin, usable
on its own)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .errors import TipsdConnectionError


class TipsdNotFound(FileNotFoundError):
    pass


def find_tipsd(explicit: str | os.PathLike[str] | None = None, start: str | os.PathLike[str] | None = None) -> str:
    """Locate the ``tipsd`` binary.

    Order: ``explicit``; ``$TIPSD_BIN``; ``tipsd`` on ``PATH``;
    ``.build/debug/tipsd`` (then ``.build/release/tipsd``) in ``start`` (the
    current directory) or any parent of it.
    """
    if explicit:
        p = Path(explicit)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve())
        raise TipsdNotFound(f"tipsd binary {explicit} does not exist or is not executable")
    env = os.environ.get("TIPSD_BIN")
    if env:
        p = Path(env)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve())
        raise TipsdNotFound(f"TIPSD_BIN={env} does not exist or is not executable")
    on_path = shutil.which("tipsd")
    if on_path:
        return on_path
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        for rel in (".build/debug/tipsd", ".build/release/tipsd"):
            cand = d / rel
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    raise TipsdNotFound(
        "tipsd binary not found: set TIPSD_BIN, put tipsd on PATH, or build it (swift build) "
        "so that .build/debug/tipsd exists in this directory or a parent"
    )


def _socket_accepts(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(0.5)
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class TipsdDaemon:
    """A ``tipsd serve --socket`` child process.

    ::

        with TipsdDaemon() as daemon:      # in-memory datastore, virtual clock, testing methods on
            client = await TipsClient.connect(socket_path=daemon.socket_path)

    ``allow_testing`` (default true: this class is for tests) passes ``--allow-testing`` so that
    ``testing/*``, ``datastore/reset``, ``clock/advance`` and ``clock/set`` are answered.
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        socket_path: str | None = None,
        datastore: str = ":memory:",
        clock: str | None = "virtual",
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        startup_timeout: float = 15.0,
        workdir: str | None = None,
        allow_testing: bool = True,
    ) -> None:
        self.binary = binary or find_tipsd()
        self.allow_testing = allow_testing
        self._own_dir: tempfile.TemporaryDirectory[str] | None = None
        if socket_path is None:
            # Unix socket paths are limited to ~107 bytes: keep it short.
            base = workdir if workdir and len(workdir) < 80 else None
            self._own_dir = tempfile.TemporaryDirectory(prefix="tipsd-", dir=base)
            socket_path = os.path.join(self._own_dir.name, "tipsd.sock")
        self.socket_path = socket_path
        self.datastore = datastore
        self.clock = clock
        self.extra_args = list(args)
        self.env = env
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        # Set when a test makes the daemon exit on purpose (e.g. shutdown).
        self.expected_exit = False
        self._log_file = tempfile.TemporaryFile(prefix="tipsd-log-")

    @property
    def command(self) -> list[str]:
        cmd = [self.binary, "serve", "--socket", self.socket_path, "--datastore", self.datastore]
        if self.clock:
            cmd += ["--clock", self.clock]
        if self.allow_testing:
            cmd.append("--allow-testing")
        return cmd + self.extra_args

    def start(self) -> TipsdDaemon:
        if self.process is not None:
            return self
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.005
        while True:
            code = self.process.poll()
            if code is not None:
                raise TipsdConnectionError(
                    f"tipsd exited with status {code} before listening on {self.socket_path}\n"
                    f"command: {' '.join(self.command)}\n{self.log()}"
                )
            if os.path.exists(self.socket_path) and _socket_accepts(self.socket_path):
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise TipsdConnectionError(
                    f"tipsd did not listen on {self.socket_path} within {self.startup_timeout}s\n"
                    f"command: {' '.join(self.command)}\n{self.log()}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.1)

    def log(self, limit: int = 8000) -> str:
        """What the daemon wrote to stdout/stderr so far (its tail)."""
        try:
            self._log_file.flush()
            self._log_file.seek(0, os.SEEK_END)
            size = self._log_file.tell()
            self._log_file.seek(max(0, size - limit))
            return self._log_file.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, wait, SIGKILL if needed. Returns the exit status."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        return proc.returncode

    def cleanup(self) -> None:
        self.stop()
        try:
            self._log_file.close()
        except OSError:
            pass
        if self._own_dir is not None:
            self._own_dir.cleanup()
            self._own_dir = None

    def __enter__(self) -> TipsdDaemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def stdio_command(
    binary: str | None = None,
    *,
    datastore: str = ":memory:",
    clock: str | None = "virtual",
    args: Sequence[str] = (),
    allow_testing: bool = True,
) -> list[str]:
    """``[tipsd, "serve", "--stdio", ...]`` for :meth:`TipsClient.connect` (with ``--allow-testing`` unless
    ``allow_testing`` is false)."""
    cmd = [binary or find_tipsd(), "serve", "--stdio", "--datastore", datastore]
    if clock:
        cmd += ["--clock", clock]
    if allow_testing:
        cmd.append("--allow-testing")
    return cmd + list(args)
