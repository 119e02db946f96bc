"""Validate the traffic the integration suite exchanged with the real daemon
against protocol/openrpc.json (issue #5: "every response and notification
observed while running the conformance and integration suites validates
against its schema").

The client's traffic tap (``TIPSD_TRAFFIC_LOG``, see tipsd_client.transport)
writes one JSON line per message: ``{"conn", "peer", "dir", "msg", ...}``.
Per connection, requests the client sent (``dir: "out"``) give each id its
method; every incoming message is then checked:

* a result against ``methods[i].result.schema`` of its request's method;
* an error's ``code`` against that method's ``errors`` plus the document's
  ``x-protocol-errors`` (only the latter when the id is unknown or null, and,
  for id null, ``x-session-errors``: hosted mode's -32013 at a token's expiry);
* a notification's params against ``x-notifications[i].x-params-schema``.

Connections to the suite's fake server (tests/fake_server.py) are skipped: it
is not tipsd. The loading and ``$ref`` resolution follow protocol/tests/harness.py
(a ``referencing`` registry holding the document at a file URI, so relative
refs such as ``schemas/tip.json`` resolve to protocol/schemas/).

``TIPSD_OPENRPC=/path/doc.json`` validates against another copy of the
document (e.g. a deliberately broken one); relative schema refs still resolve
against protocol/ when the copy has no ``schemas/`` directory beside it.

Other suites write the same log: the TypeScript client's tap (its fakes,
test-support/fake.js and echo-daemon.js, answer initialize as "fake-tipsd"
and are skipped like ours) and the Swift tests' RPCClient
(Tests/TipsTestSupport/TrafficTap.swift), whose lines also carry ``suite``,
the test target that opened the connection. ``--suite NAME`` (repeatable)
checks only the connections of those suites: the Swift hardening suite sends
malformed input on purpose. ``--require-traffic`` fails when no daemon
connection was checked (a tap that silently stopped logging).
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
PROTOCOL = REPO / "protocol"
DEFAULT_OPENRPC = PROTOCOL / "openrpc.json"
META_SCHEMA_PATH = PROTOCOL / "tests" / "openrpc-meta-schema.json"
META_SCHEMA_ID = "https://raw.githubusercontent.com/open-rpc/meta-schema/master/schema.json"

FAKE_SERVER_NAME = "fake-tipsd"


def openrpc_path() -> pathlib.Path:
    return pathlib.Path(os.environ.get("TIPSD_OPENRPC") or DEFAULT_OPENRPC).resolve()


def pointer_escape(part: Any) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def pointer(parts: Iterable[Any]) -> str:
    return "".join("/" + pointer_escape(p) for p in parts)


class Contract:
    """protocol/openrpc.json as validators (cf. protocol/tests/harness.py)."""

    def __init__(self, path: pathlib.Path | None = None) -> None:
        import jsonschema
        import referencing
        import referencing.exceptions
        import referencing.jsonschema

        self._jsonschema = jsonschema
        self.path = path or openrpc_path()
        self.document = json.loads(self.path.read_text())
        # The URI the document lives at for $ref purposes: beside its own
        # schemas/ if it has one, else the repository's protocol/ directory.
        base = self.path if (self.path.parent / "schemas").is_dir() else DEFAULT_OPENRPC
        self.base_uri = base.as_uri()
        draft7 = referencing.jsonschema.DRAFT7

        def retrieve(uri: str) -> referencing.Resource:
            if uri == META_SCHEMA_ID and META_SCHEMA_PATH.is_file():
                return draft7.create_resource(json.loads(META_SCHEMA_PATH.read_text()))
            if uri.startswith("file://"):
                return draft7.create_resource(json.loads(pathlib.Path(uri[len("file://") :]).read_text()))
            raise referencing.exceptions.NoSuchResource(ref=uri)

        self.registry = referencing.Registry(retrieve=retrieve).with_resource(
            self.base_uri, draft7.create_resource(self.document)
        )
        self.method_index = {m["name"]: i for i, m in enumerate(self.document["methods"])}
        self.notification_index = {n["name"]: i for i, n in enumerate(self.document.get("x-notifications", []))}
        self._validators: dict[str, Any] = {}

    def validator(self, ptr: str) -> Any:
        if ptr not in self._validators:
            cls = self._jsonschema.Draft7Validator
            self._validators[ptr] = cls(
                {"$ref": f"{self.base_uri}#{ptr}"}, registry=self.registry, format_checker=cls.FORMAT_CHECKER
            )
        return self._validators[ptr]

    def result_validator(self, method: str) -> Any:
        return self.validator(f"/methods/{self.method_index[method]}/result/schema")

    def notification_validator(self, name: str) -> Any:
        return self.validator(f"/x-notifications/{self.notification_index[name]}/x-params-schema")

    def resolve(self, node: Any) -> Any:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
            target: Any = self.document
            for part in node["$ref"][2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            return target
        return node

    def error_codes(self, method: str | None, *, id_null: bool = False) -> set[int]:
        refs = list(self.document.get("x-protocol-errors", []))
        if id_null:
            refs += self.document.get("x-session-errors", [])
        if method in self.method_index:
            refs += self.document["methods"][self.method_index[method]].get("errors", [])
        return {self.resolve(r).get("code") for r in refs}


@dataclass
class Mismatch:
    method: str
    pointer: str
    message: str
    where: str
    kind: str = ""  # groups repeats: the failing schema keyword, else the message

    def key(self) -> tuple[str, str, str]:
        return (self.method, self.pointer, self.kind or self.message)


@dataclass
class Connection:
    conn: str
    peer: dict[str, Any]
    test: str | None = None
    suite: str | None = None
    pending: dict[str, str] = field(default_factory=dict)
    lines: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        peer = self.peer or {}
        target = peer.get("path") or " ".join(str(a) for a in (peer.get("command") or [])[:2]) or "?"
        text = f"conn {self.conn} ({peer.get('kind', '?')} {target})"
        return f"{text}, opened during {self.test}" if self.test else text


def is_fake(c: Connection) -> bool:
    """The suite's scripted fake server, not tipsd."""
    peer = c.peer or {}
    if any("fake_server" in str(part) for part in peer.get("command") or []):
        return True
    if os.path.basename(str(peer.get("path") or "")) == "fake.sock":
        return True
    for line in c.lines:
        msg = line.get("msg")
        if line.get("dir") == "in" and isinstance(msg, dict) and isinstance(msg.get("result"), dict):
            info = msg["result"].get("serverInfo")
            if isinstance(info, dict) and info.get("name") == FAKE_SERVER_NAME:
                return True
    return False


def _id_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class TrafficReport:
    def __init__(self) -> None:
        self.mismatches: list[Mismatch] = []
        self.connections = 0
        self.skipped_connections = 0
        self.suites: list[str] | None = None  # set when only some suites' connections are checked
        self.other_suite_connections = 0
        self.checked = {"result": 0, "error": 0, "notification": 0}

    def add(self, method: str, ptr: str, message: str, where: str, kind: str = "") -> None:
        self.mismatches.append(Mismatch(method, ptr or "/", message, where, kind))

    def add_schema_error(self, method: str, prefix: str, error: Any, where: str) -> None:
        kind = f"{error.validator} at {pointer(error.absolute_schema_path)}"
        self.add(method, prefix + pointer(error.absolute_path), error.message[:300], where, kind)

    def summary(self) -> str:
        c = self.checked
        others = ""
        if self.suites is not None:
            others = (
                f", {self.other_suite_connections} connections of suites other than {'/'.join(self.suites)} skipped"
            )
        return (
            f"{c['result']} results, {c['error']} errors and {c['notification']} notifications "
            f"on {self.connections} daemon connections ({self.skipped_connections} fake-server connections skipped{others})"
        )

    def format_mismatches(self, limit: int = 60) -> str:
        groups: dict[tuple[str, str, str], list[Mismatch]] = {}
        for m in self.mismatches:
            groups.setdefault(m.key(), []).append(m)
        out = []
        for (method, ptr, _), ms in list(groups.items())[:limit]:
            times = f" (x{len(ms)}, first shown)" if len(ms) > 1 else ""
            out.append(f"  {method}  {ptr}: {ms[0].message}{times}\n      first seen: {ms[0].where}")
        if len(groups) > limit:
            out.append(f"  ... and {len(groups) - limit} more kinds of mismatch")
        return "\n".join(out)


def read_log(path: pathlib.Path, offset: int = 0) -> dict[str, Connection]:
    conns: dict[str, Connection] = {}
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f:
            try:
                line = json.loads(raw)
            except ValueError:
                continue  # a torn line can only come from a crashed writer; nothing to check
            if not isinstance(line, dict) or "conn" not in line:
                continue
            c = conns.get(line["conn"])
            if c is None:
                c = conns[line["conn"]] = Connection(
                    line["conn"], line.get("peer") or {}, line.get("test"), line.get("suite")
                )
            c.lines.append(line)
    return conns


def check_connection(contract: Contract, c: Connection, report: TrafficReport) -> None:
    for line in c.lines:
        msg = line.get("msg")
        if line.get("dir") == "out":
            for item in msg if isinstance(msg, list) else [msg]:
                if isinstance(item, dict) and isinstance(item.get("method"), str) and item.get("id") is not None:
                    c.pending[_id_key(item["id"])] = item["method"]
            continue
        if "msg" not in line:
            report.add(
                "(frame)", "", f"daemon sent a frame that is not JSON: {line.get('raw', '')[:120]!r}", c.describe()
            )
            continue
        if isinstance(msg, list):
            if not msg:
                report.add("(batch)", "", "daemon sent an empty batch array", c.describe())
            for item in msg:
                check_message(contract, c, item, report)
        else:
            check_message(contract, c, msg, report)


def check_message(contract: Contract, c: Connection, m: Any, report: TrafficReport) -> None:
    where = c.describe()
    if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
        report.add("(message)", "", f"not a JSON-RPC 2.0 message: {json.dumps(m)[:200]}", where)
        return
    if "method" in m:
        name = m["method"]
        report.checked["notification"] += 1
        if "id" in m:
            report.add(str(name), "/id", "the daemon sent a request; the protocol has only notifications", where)
        if name not in contract.notification_index:
            report.add(str(name), "", "undocumented notification (not in x-notifications)", where)
            return
        for e in contract.notification_validator(name).iter_errors(m.get("params")):
            report.add_schema_error(f"{name} (notification)", "/params", e, where)
        return
    if "id" not in m or ("result" in m) == ("error" in m) or set(m) - {"jsonrpc", "id", "result", "error"}:
        report.add("(response)", "", f"malformed response: {json.dumps(m)[:200]}", where)
        return
    method = c.pending.pop(_id_key(m["id"]), None) if m["id"] is not None else None
    if "error" in m:
        report.checked["error"] += 1
        err = m["error"]
        label = method or f"(id {json.dumps(m['id'])})"
        if not (
            isinstance(err, dict)
            and isinstance(err.get("code"), int)
            and not isinstance(err.get("code"), bool)
            and isinstance(err.get("message"), str)
            and set(err) <= {"code", "message", "data"}
        ):
            report.add(f"{label} (error)", "/error", f"malformed error object {json.dumps(err)[:200]}", where)
            return
        allowed = contract.error_codes(method, id_null=m["id"] is None)
        if err["code"] not in allowed:
            report.add(
                f"{label} (error)",
                "/error/code",
                f"code {err['code']} is not documented for this method (documented: {sorted(allowed)}): "
                f"{err['message'][:120]}",
                where,
                kind=f"code {err['code']}",
            )
        return
    report.checked["result"] += 1
    if method is None:
        report.add(f"(id {json.dumps(m['id'])})", "/id", "result for an id the client never sent", where)
        return
    if method not in contract.method_index:
        report.add(method, "/result", "result for a method that is not in the document", where)
        return
    for e in contract.result_validator(method).iter_errors(m["result"]):
        report.add_schema_error(f"{method} (result)", "/result", e, where)


def check_log(
    path: pathlib.Path, offset: int = 0, contract: Contract | None = None, suites: Iterable[str] | None = None
) -> TrafficReport:
    """Validates the log from ``offset``; with ``suites``, only connections whose ``suite`` is one of them."""
    contract = contract or Contract()
    report = TrafficReport()
    if suites is not None:
        report.suites = list(suites)
    if not path.exists():
        return report
    for c in read_log(path, offset).values():
        if report.suites is not None and c.suite not in report.suites:
            report.other_suite_connections += 1
            continue
        if is_fake(c):
            report.skipped_connections += 1
            continue
        report.connections += 1
        check_connection(contract, c, report)
    return report


def main(argv: list[str] | None = None) -> int:
    """python traffic_check.py [--suite NAME]... [--require-traffic] LOGFILE  (e.g. a log from a manual session)"""
    import argparse

    parser = argparse.ArgumentParser(
        description="Validate a tipsd traffic log against protocol/openrpc.json "
        "($TIPSD_OPENRPC overrides the document)."
    )
    parser.add_argument("log", type=pathlib.Path, help="the $TIPSD_TRAFFIC_LOG file")
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="check only connections whose lines carry this suite (repeatable)",
    )
    parser.add_argument("--require-traffic", action="store_true", help="fail when no daemon connection was checked")
    args = parser.parse_args(argv)
    rep = check_log(args.log, suites=args.suite)
    print(f"checked {rep.summary()} against {openrpc_path()}")
    if rep.mismatches:
        print(
            f"FAILED: {len(rep.mismatches)} messages from the daemon disagree with the document "
            f"(method  JSON pointer: message); log: {args.log}"
        )
        print(rep.format_mismatches())
        return 1
    if args.require_traffic and not rep.connections:
        print(f"FAILED: the traffic log {args.log} holds no daemon connection to check")
        return 1
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
