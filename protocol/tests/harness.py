"""Test harness for the tipsd protocol suites: daemons, framed connections, schema checks, transcript matching.

Everything here talks to the real daemon (``TIPSD_BIN``, default ``<repo>/.build/debug/tipsd``).

No check here depends on how fast the daemon or the machine is. Every wait is for a condition, and ``TIMEOUT``
(``$TIPSD_TEST_TIMEOUT`` seconds, default 30) only keeps a broken daemon from hanging the suite. "Nothing arrives" is
proved with a barrier (``Connection.expect_nothing``), never by waiting for a while.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import queue
import re
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable
from typing import Any

import jsonschema
import referencing
import referencing.jsonschema

PROTOCOL = pathlib.Path(__file__).resolve().parent.parent
REPO = PROTOCOL.parent
OPENRPC_PATH = PROTOCOL / "openrpc.json"
META_SCHEMA_PATH = PROTOCOL / "tests" / "openrpc-meta-schema.json"
META_SCHEMA_ID = "https://raw.githubusercontent.com/open-rpc/meta-schema/master/schema.json"
DEFAULT_ARGS = ["--datastore", ":memory:", "--clock", "virtual", "--clock-start", "1000000", "--allow-testing"]
# The one hang guard of the protocol suites: how long any wait (a reply, a notification, EOF, the daemon starting or
# exiting) may take before the test fails. Never an expectation of speed; raise it on a slow machine.
TIMEOUT = float(os.environ.get("TIPSD_TEST_TIMEOUT", "30"))
# A barrier request (Connection.expect_nothing) uses ids of this form; no test or transcript uses them.
BARRIER_ID_PREFIX = "harness-barrier-"
_barrier_ids = itertools.count(1)

FILTER_TIP = {
    "id": "filter.tip",
    "title": "You can narrow this down",
    "actions": [{"id": "learn-more", "title": "Learn more"}],
    "rules": [
        {"event": "search.opened", "count": {"gte": 3}},
        {"event": "filter.used", "count": {"eq": 0}},
        {"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}},
    ],
}


def tipsd_bin() -> str:
    return os.environ.get("TIPSD_BIN") or str(REPO / ".build" / "debug" / "tipsd")


# ---------------------------------------------------------------------------------------------------------------
# Schemas


def _retrieve(uri: str) -> referencing.Resource:
    if uri == META_SCHEMA_ID:
        return referencing.jsonschema.DRAFT7.create_resource(json.loads(META_SCHEMA_PATH.read_text()))
    if uri.startswith("file://"):
        path = pathlib.Path(uri[len("file://") :])
        return referencing.jsonschema.DRAFT7.create_resource(json.loads(path.read_text()))
    raise referencing.exceptions.NoSuchResource(ref=uri)


def schema_registry(document: dict | None = None) -> referencing.Registry:
    """A registry holding the OpenRPC document (at its file URI), the schema files and the meta-schema."""
    registry = referencing.Registry(retrieve=_retrieve)
    if document is not None:
        registry = registry.with_resource(
            OPENRPC_PATH.as_uri(), referencing.jsonschema.DRAFT7.create_resource(document)
        )
    return registry


class Contract:
    """The OpenRPC document as validators: results, params, notifications and errors per method."""

    def __init__(self, document: dict | None = None):
        self.document = document if document is not None else json.loads(OPENRPC_PATH.read_text())
        self.registry = schema_registry(self.document)
        self.methods = {m["name"]: m for m in self.document["methods"]}
        self.notifications = {n["name"]: n for n in self.document.get("x-notifications", [])}
        self.errors = self.document["components"]["errors"]
        self._validators: dict[str, jsonschema.Draft7Validator] = {}

    def pointer_validator(self, pointer: str) -> jsonschema.Draft7Validator:
        if pointer not in self._validators:
            self._validators[pointer] = jsonschema.Draft7Validator(
                {"$ref": f"{OPENRPC_PATH.as_uri()}#{pointer}"},
                registry=self.registry,
                format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER,
            )
        return self._validators[pointer]

    def schema_validator(self, name: str) -> jsonschema.Draft7Validator:
        return self.pointer_validator(f"/components/schemas/{name}")

    def _index(self, name: str) -> int:
        return [m["name"] for m in self.document["methods"]].index(name)

    def result_validator(self, method: str) -> jsonschema.Draft7Validator:
        return self.pointer_validator(f"/methods/{self._index(method)}/result/schema")

    def param_validator(self, method: str, i: int) -> jsonschema.Draft7Validator:
        return self.pointer_validator(f"/methods/{self._index(method)}/params/{i}/schema")

    def notification_validator(self, method: str) -> jsonschema.Draft7Validator:
        i = [n["name"] for n in self.document["x-notifications"]].index(method)
        return self.pointer_validator(f"/x-notifications/{i}/x-params-schema")

    def error_codes(self, method: str | None) -> set[int]:
        refs = list(self.document.get("x-protocol-errors", []))
        if method in self.methods:
            refs += self.methods[method].get("errors", [])
        return {self.resolve(r)["code"] for r in refs}

    def resolve(self, node: dict) -> dict:
        if "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            target: Any = self.document
            for part in ref[2:].split("/"):
                target = target[part]
            return target
        return node


def errors_of(validator: jsonschema.Draft7Validator, instance: Any) -> list[str]:
    out = []
    for e in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in e.absolute_path)
        out.append(f"at /{path}: {e.message[:300]}")
    return out


class Observer:
    """Checks every message a test observes against the contract; remembers request ids and per-subscription seq."""

    def __init__(self, contract: Contract):
        self.contract = contract
        self.pending: dict[Any, str] = {}
        self.seq: dict[str, int] = {}
        self.problems: list[str] = []
        self.checked = 0

    def sent(self, text: str) -> None:
        try:
            value = json.loads(text)
        except ValueError:
            return
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and "id" in item and isinstance(item.get("method"), str):
                if item["id"] is None or isinstance(item["id"], (str, int)) and not isinstance(item["id"], bool):
                    self.pending[json.dumps(item["id"])] = item["method"]

    def received(self, message: Any) -> None:
        for item in message if isinstance(message, list) else [message]:
            self._one(item)

    def _one(self, m: Any) -> None:
        self.checked += 1
        if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
            self.problems.append(f"not a JSON-RPC 2.0 message: {m!r}")
            return
        if "method" in m:
            name = m["method"]
            if name not in self.contract.notifications:
                self.problems.append(f"server sent undocumented notification {name!r}")
                return
            for p in errors_of(self.contract.notification_validator(name), m.get("params")):
                self.problems.append(f"{name} params {p}")
            params = m.get("params") or {}
            sub, seq = params.get("subscription"), params.get("seq")
            if isinstance(sub, str) and isinstance(seq, int):
                expected = self.seq.get(sub, 0) + 1
                if seq != expected:
                    self.problems.append(f"{name}: subscription {sub} seq {seq}, expected {expected}")
                self.seq[sub] = seq
            return
        if set(m) - {"jsonrpc", "id", "result", "error"} or ("result" in m) == ("error" in m) or "id" not in m:
            self.problems.append(f"malformed response {m!r}")
            return
        method = self.pending.get(json.dumps(m["id"])) if m["id"] is not None or "result" in m else None
        if "error" in m:
            err = m["error"]
            if not (
                isinstance(err, dict)
                and isinstance(err.get("code"), int)
                and isinstance(err.get("message"), str)
                and set(err) <= {"code", "message", "data"}
            ):
                self.problems.append(f"malformed error object {err!r}")
                return
            allowed = self.contract.error_codes(method)
            if err["code"] not in allowed:
                self.problems.append(
                    f"{method or 'id ' + json.dumps(m['id'])}: error {err['code']} is not documented for this method "
                    f"(documented: {sorted(allowed)}): {err['message']}"
                )
            return
        if method is None:
            self.problems.append(f"result for an id the client never sent: {m!r}")
            return
        if method not in self.contract.methods:
            self.problems.append(f"result for undocumented method {method!r}")
            return
        for p in errors_of(self.contract.result_validator(method), m["result"]):
            self.problems.append(f"{method} result {p}")

    def assert_clean(self) -> None:
        if self.problems and getattr(self, "reported", False):
            return
        self.reported = True
        assert not self.problems, "messages that disagree with protocol/openrpc.json:\n  " + "\n  ".join(self.problems)


# ---------------------------------------------------------------------------------------------------------------
# Framing and connections


class Connection:
    """One client connection (stdio pipes or a Unix socket) in one framing, with a reader thread."""

    def __init__(self, write, read, framing: str, observer: Observer | None = None, close=None):
        assert framing in ("newline", "content-length")
        self._write, self._read, self._close = write, read, close
        self.framing = framing
        self.observer = observer
        self.inbox: queue.Queue = queue.Queue()
        self.eof = False
        self.log: list[str] = []
        threading.Thread(target=self._reader, daemon=True).start()

    def send_text(self, text: str, *, log: bool = True) -> None:
        data = text.encode()
        if self.framing == "newline":
            frame = data + b"\n"
        else:
            frame = b"Content-Length: %d\r\n\r\n" % len(data) + data
        if self.observer:
            self.observer.sent(text)
        if log:
            self.log.append("--> " + text)
        self._write(frame)

    def send(self, message: Any) -> None:
        self.send_text(json.dumps(message, separators=(",", ":")))

    def _reader(self) -> None:
        buf = b""
        try:
            while True:
                if self.framing == "newline":
                    while b"\n" not in buf:
                        chunk = self._read(65536)
                        if not chunk:
                            raise EOFError
                        buf += chunk
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    body = line
                else:
                    while b"\r\n\r\n" not in buf:
                        chunk = self._read(65536)
                        if not chunk:
                            raise EOFError
                        buf += chunk
                    head, buf = buf.split(b"\r\n\r\n", 1)
                    length = None
                    for h in head.split(b"\r\n"):
                        k, _, v = h.partition(b":")
                        if k.strip().lower() == b"content-length":
                            length = int(v.strip())
                    if length is None:
                        self.inbox.put(("bad", head))
                        continue
                    while len(buf) < length:
                        chunk = self._read(65536)
                        if not chunk:
                            raise EOFError
                        buf += chunk
                    body, buf = buf[:length], buf[length:]
                try:
                    value = json.loads(body)
                except ValueError:
                    self.inbox.put(("bad", body))
                    continue
                self.inbox.put(("msg", value))
        except (EOFError, OSError, ValueError):
            self.inbox.put(("eof", None))

    def _take(self, timeout: float) -> Any:
        """The next message, unlogged and unobserved; TimeoutError, or EOFError once the daemon closed."""
        if self.eof:
            raise EOFError("connection closed")
        try:
            kind, value = self.inbox.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message within {timeout} s (TIPSD_TEST_TIMEOUT)") from None
        if kind == "eof":
            self.eof = True
            raise EOFError("connection closed")
        if kind == "bad":
            raise AssertionError(f"daemon sent a frame that is not JSON: {value!r}")
        return value

    def _seen(self, value: Any, *, log: bool = True) -> Any:
        if log:
            self.log.append("<-- " + json.dumps(value, separators=(",", ":")))
        if self.observer:
            self.observer.received(value)
        return value

    def receive(self, timeout: float = TIMEOUT) -> Any:
        """The next message; raises TimeoutError (only a hang guard), or EOFError when the daemon closed the
        connection."""
        return self._seen(self._take(timeout))

    def expect_nothing(self, timeout: float = TIMEOUT) -> None:
        """Asserts that nothing is pending on this connection, with a barrier instead of a wait.

        Sends a request with a private id (``clock/now``: every lifecycle state answers it, with -32002 before
        `initialize` and -32006 after `shutdown`) and reads up to its reply. The daemon answers a connection's
        messages and delivers its notifications in order, so everything caused by requests answered before the
        barrier was sent (on any connection) arrives before the barrier's reply: any other message read first is
        a failure. The barrier's request and reply go through the observer (they are valid protocol traffic) but
        not into ``log``, so transcripts and failure reports never show them. After the daemon closed the connection
        (EOF, also while waiting for the reply) nothing can arrive any more, which passes.
        """
        if self.eof:
            return
        rid = f"{BARRIER_ID_PREFIX}{next(_barrier_ids)}"
        try:
            self.send_text(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "clock/now"}), log=False)
        except (OSError, ValueError):
            pass  # the daemon's end (or our stdin pipe) is already closed: only EOF may follow
        while True:
            try:
                m = self._take(timeout)
            except EOFError:
                return
            except TimeoutError:
                raise AssertionError(
                    f"no reply to the barrier request {rid!r} within {timeout} s (TIPSD_TEST_TIMEOUT)"
                ) from None
            if isinstance(m, dict) and "method" not in m and m.get("id") == rid:
                self._seen(m, log=False)
                return
            self._seen(m)
            raise AssertionError(f"expected no message, got {json.dumps(m)}")

    def request(self, method: str, params: Any = None, id: Any = None, notifications: list | None = None) -> Any:
        """Sends a request and returns its response; notifications that arrive first go to `notifications`."""
        Connection._next_id = getattr(Connection, "_next_id", 0) + 1
        rid = id if id is not None else Connection._next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            m = self.receive()
            if isinstance(m, dict) and "method" in m:
                if notifications is not None:
                    notifications.append(m)
                continue
            assert isinstance(m, dict) and m.get("id") == rid, m
            return m

    def close(self) -> None:
        if self._close:
            self._close()


class Daemon:
    """A fresh `tipsd serve` over stdio or a Unix socket."""

    def __init__(
        self,
        transport: str,
        extra_args: Iterable[str] = (),
        observer: Observer | None = None,
        base_args: Iterable[str] | None = None,
    ):
        assert transport in ("stdio", "socket")
        self.transport = transport
        self.observer = observer
        self.tmp = tempfile.TemporaryDirectory(prefix="tipsd-proto-")
        self.stderr = open(os.path.join(self.tmp.name, "stderr.log"), "w+b")
        args = [tipsd_bin(), "serve"]
        if transport == "stdio":
            args.append("--stdio")
        else:
            self.socket_path = os.path.join(self.tmp.name, "tipsd.sock")
            args += ["--socket", self.socket_path]
        args += (DEFAULT_ARGS if base_args is None else list(base_args)) + list(extra_args)
        self.args = args
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL,
            stdout=subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL,
            stderr=self.stderr,
            bufsize=0,
        )
        if transport == "socket":
            deadline = time.monotonic() + TIMEOUT
            while not os.path.exists(self.socket_path):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"tipsd did not start: {self.log()}")
                time.sleep(0.01)
        self._stdio_taken = False

    def connect(self, framing: str = "newline", observer: Observer | None = None) -> Connection:
        observer = observer or self.observer
        if self.transport == "stdio":
            assert not self._stdio_taken, "stdio serves one client"
            self._stdio_taken = True
            stdin, stdout = self.proc.stdin, self.proc.stdout

            def write(b):
                stdin.write(b)
                stdin.flush()

            def close():
                try:
                    stdin.close()
                except OSError:
                    pass

            return Connection(
                write, stdout.read1 if hasattr(stdout, "read1") else stdout.read, framing, observer, close
            )
        s = self._connect_socket()

        def close():
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

        return Connection(s.sendall, s.recv, framing, observer, close)

    def _connect_socket(self) -> socket.socket:
        # A daemon that creates its socket file before listening on it refuses connections for an instant: retry
        # (until the hang guard) rather than assume the instant has passed.
        deadline = time.monotonic() + TIMEOUT
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.socket_path)
                return s
            except (ConnectionRefusedError, FileNotFoundError):
                s.close()
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise
            time.sleep(0.01)

    def wait(self, timeout: float = TIMEOUT) -> int:
        return self.proc.wait(timeout=timeout)

    def log(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            if self.transport == "stdio" and self.proc.stdin:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
            else:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()
        self.tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------------------------------------------
# Transcripts

TYPE_PATTERNS = {
    "$any": lambda v: True,
    "$string": lambda v: isinstance(v, str),
    "$number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "$integer": lambda v: isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer()),
    "$boolean": lambda v: isinstance(v, bool),
    "$object": lambda v: isinstance(v, dict),
    "$array": lambda v: isinstance(v, list),
}


def match(pattern: Any, value: Any, bindings: dict, path: str = "") -> str | None:
    """None when `value` matches `pattern` (binding captures into `bindings`), else a description of the mismatch."""
    if isinstance(pattern, str) and pattern.startswith("$"):
        if pattern.startswith("$$"):
            return None if value == pattern[1:] else f"{path or '/'}: expected {pattern[1:]!r}, got {value!r}"
        if pattern in TYPE_PATTERNS:
            return None if TYPE_PATTERNS[pattern](value) else f"{path or '/'}: expected {pattern}, got {value!r}"
        if pattern.startswith("$regex:"):
            ok = isinstance(value, str) and re.fullmatch(pattern[len("$regex:") :], value)
            return None if ok else f"{path or '/'}: expected {pattern}, got {value!r}"
        if pattern.startswith("$capture:"):
            name = pattern[len("$capture:") :]
            if name in bindings and bindings[name] != value:
                return f"{path or '/'}: ${name} was {bindings[name]!r}, got {value!r}"
            bindings[name] = value
            return None
        raise ValueError(f"unknown pattern {pattern!r} (write $$ for a literal $)")
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return f"{path or '/'}: expected an object, got {value!r}"
        keys = {k.rstrip("?"): k for k in pattern}
        for k in value:
            if k not in keys:
                return f"{path}/{k}: unexpected member (value {value[k]!r})"
        for plain, k in keys.items():
            if plain not in value:
                if k.endswith("?"):
                    continue
                return f"{path}/{plain}: missing"
            problem = match(pattern[k], value[plain], bindings, f"{path}/{plain}")
            if problem:
                return problem
        return None
    if isinstance(pattern, list):
        if not isinstance(value, list):
            return f"{path or '/'}: expected an array, got {value!r}"
        if pattern and pattern[0] == "$unordered":
            items = pattern[1:]
            if len(items) != len(value):
                return f"{path or '/'}: expected {len(items)} elements in any order, got {len(value)}: {value!r}"
            found = match_unordered(items, value, bindings, path)
            return None if found is not None else f"{path or '/'}: no ordering of {value!r} matches {items!r}"
        if len(pattern) != len(value):
            return f"{path or '/'}: expected {len(pattern)} elements, got {len(value)}: {value!r}"
        for i, (p, v) in enumerate(zip(pattern, value, strict=True)):
            problem = match(p, v, bindings, f"{path}/{i}")
            if problem:
                return problem
        return None
    if isinstance(pattern, bool) or isinstance(value, bool) or pattern is None or value is None:
        ok = pattern is value or (pattern == value and type(pattern) is type(value))
    elif isinstance(pattern, (int, float)):
        ok = isinstance(value, (int, float)) and pattern == value
    else:
        ok = pattern == value
    return None if ok else f"{path or '/'}: expected {pattern!r}, got {value!r}"


def match_unordered(patterns: list, values: list, bindings: dict, path: str = "") -> list | None:
    """An assignment of values to patterns (any order), updating bindings; None if there is none."""
    if not patterns:
        return []
    first, rest = patterns[0], patterns[1:]
    for i, v in enumerate(values):
        trial = dict(bindings)
        if match(first, v, trial, path) is None:
            remaining = values[:i] + values[i + 1 :]
            tail = match_unordered(rest, remaining, trial, path)
            if tail is not None:
                bindings.clear()
                bindings.update(trial)
                return [v] + tail
    return None


class Transcript:
    """A parsed `.transcript` file (syntax: protocol/conformance/README.md)."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.name = path.stem
        self.args: list[str] = []
        self.serve_args: list[str] | None = None
        self.transports = ["stdio", "socket"]
        self.known_bug: str | None = None
        self.framings = ["newline", "content-length"]
        self.steps: list[
            tuple[str, Any, int]
        ] = []  # ("send", text) | ("expect", [patterns]) | ("nothing"|"eof"|"exit", n)
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#!"):
                key, _, value = line[2:].partition(":")
                key, value = key.strip(), value.strip()
                if key == "args":
                    self.args += self._resolve(value.split())
                elif key == "serve-args":
                    self.serve_args = self._resolve(value.split())
                elif key == "transports":
                    self.transports = value.split()
                elif key == "known-bug":
                    self.known_bug = value
                elif key == "framings":
                    self.framings = value.split()
                else:
                    raise ValueError(f"{path.name}:{number}: unknown directive {key!r}")
                continue
            if line.startswith("#"):
                continue
            if line.startswith("-->"):
                self.steps.append(("send", line[3:].strip(), number))
            elif line.startswith("<--"):
                body = line[3:].strip()
                if body == "nothing":
                    self.steps.append(("nothing", None, number))
                elif body == "eof":
                    self.steps.append(("eof", None, number))
                elif body.startswith("exit "):
                    self.steps.append(("exit", int(body[5:]), number))
                else:
                    try:
                        json.loads(re.sub(r"\$\{(\w+)\}", "0", body))
                    except ValueError as e:
                        raise ValueError(f"{path.name}:{number}: <-- line is not JSON: {e}") from None
                    if self.steps and self.steps[-1][0] == "expect":
                        self.steps[-1][1].append((body, number))
                    else:
                        self.steps.append(("expect", [(body, number)], number))
            else:
                raise ValueError(f"{path.name}:{number}: a line must start with -->, <--, # or #!")

    def _resolve(self, flags: list[str]) -> list[str]:
        """A relative `--catalog` path is relative to the transcript (as `tipsd test` reads it)."""
        out = list(flags)
        for i, flag in enumerate(out[:-1]):
            if flag == "--catalog" and not out[i + 1].startswith("/") and (self.path.parent / out[i + 1]).exists():
                out[i + 1] = str(self.path.parent / out[i + 1])
        return out

    def sent_methods(self) -> set[str]:
        out = set()
        for kind, text, _ in self.steps:
            if kind != "send":
                continue
            try:
                value = json.loads(re.sub(r"\$\{(\w+)\}", '"x"', text))
            except ValueError:
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict) and isinstance(item.get("method"), str):
                    out.add(item["method"])
        return out

    def expected_codes(self) -> set[int]:
        return {
            int(c)
            for kind, lines, _ in self.steps
            if kind == "expect"
            for body, _ in lines
            for c in re.findall(r'"code"\s*:\s*(-?\d+)', body)
        }


def substitute(text: str, bindings: dict) -> str:
    def repl(m):
        name = m.group(1)
        if name not in bindings:
            raise AssertionError(f"${{{name}}} used before it was captured")
        return json.dumps(bindings[name])

    return re.sub(r"\$\{(\w+)\}", repl, text)


def replay(transcript: Transcript, daemon: Daemon, conn: Connection) -> None:
    """Replays a transcript; raises AssertionError with the conversation so far on the first mismatch."""
    bindings: dict = {}

    def fail(number: int, message: str):
        convo = "\n".join(conn.log[-30:])
        raise AssertionError(
            f"{transcript.path.name}:{number}: {message}\n--- conversation (last 30) ---\n{convo}\n"
            f"--- daemon log ---\n{daemon.log()[-1500:]}"
        )

    for kind, arg, number in transcript.steps:
        if kind == "send":
            conn.send_text(substitute(arg, bindings))
        elif kind == "expect":
            patterns = [json.loads(substitute(body, bindings)) for body, _ in arg]
            got = []
            for _ in patterns:
                try:
                    got.append(conn.receive())
                except (TimeoutError, EOFError) as e:
                    fail(number, f"expected {len(patterns)} message(s), got {len(got)} then: {e}")
            trial = dict(bindings)
            if match_unordered(patterns, got, trial) is None:
                details = []
                for (_body, n), p in zip(arg, patterns, strict=True):
                    problems = [match(p, g, dict(bindings)) for g in got]
                    details.append(f"line {n}: " + (" | ".join(str(x) for x in problems)))
                fail(
                    number,
                    "messages do not match the block (any order):\n  got:\n    "
                    + "\n    ".join(json.dumps(g) for g in got)
                    + "\n  mismatches:\n    "
                    + "\n    ".join(details),
                )
            bindings = trial
        elif kind == "nothing":
            try:
                conn.expect_nothing()
            except AssertionError as e:
                fail(number, str(e))
        elif kind == "eof":
            try:
                m = conn.receive()
            except EOFError:
                continue
            except TimeoutError:
                fail(number, f"expected the daemon to close the connection; it did not within {TIMEOUT} s")
            fail(number, f"expected the connection to close, got {json.dumps(m)}")
        elif kind == "exit":
            if daemon.transport == "stdio":
                try:
                    status = daemon.wait()
                except subprocess.TimeoutExpired:
                    fail(number, "expected the daemon to exit")
                if status != arg:
                    fail(number, f"expected exit status {arg}, got {status}")
    if not conn.eof:
        try:
            conn.expect_nothing()
        except AssertionError as e:
            fail(transcript.steps[-1][2] if transcript.steps else 0, "after the transcript's end: " + str(e))
