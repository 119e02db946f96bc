"""A hosted tipsd for the TypeScript client's tests (test/hosted.integration.test.js): a private PostgreSQL and one
`tipsd serve --hosted` node started with protocol/tests/hosted.py's fixtures, and tokens minted by PyJWT
(protocol/tests/tokens.py) — never by tipsd's own code.

Prints one JSON line — {"socket", "port", "url", "admin"} — once the node is healthy, then answers requests read
from stdin, one JSON object a line:

    {"id": 1, "token": "alice", "lifetime": 3}   ->   {"id": 1, "token": "<JWT whose sub is alice, valid 3 s>"}
    {"id": 2, "sql": "SELECT ..."}               ->   {"id": 2, "rows": "<psql's unaligned output>"}
    {"id": 3, "restart": true}                   ->   {"id": 3, "port": <the same port>}

(`restart`: kill -9 the node, then start it again on the same WebSocket port, answering once it is healthy; what it
had written is in PostgreSQL.)

until stdin closes (or SIGTERM), then stops the node and PostgreSQL. Extra arguments are passed to `tipsd serve`.
"""

from __future__ import annotations

import json
import pathlib
import signal
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "protocol" / "tests"))

from hosted import ADMIN_TOKEN, Hosted  # noqa: E402


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    world = Hosted()
    try:
        node = world.node("ts-client", extra=sys.argv[1:])
        ready = {
            "socket": node.socket_path,
            "port": node.port,
            "url": f"ws://127.0.0.1:{node.port}/",
            "admin": ADMIN_TOKEN,
        }
        print(json.dumps(ready), flush=True)
        for line in sys.stdin:
            if not line.strip():
                continue
            request = json.loads(line)
            reply: dict = {"id": request.get("id")}
            try:
                if "token" in request:
                    reply["token"] = world.token(request["token"], lifetime=float(request.get("lifetime", 3600)))
                elif "sql" in request:
                    reply["rows"] = world.query(request["sql"])
                elif request.get("restart"):
                    port = node.port
                    node.kill()
                    node.args[node.args.index("--listen") + 1] = f"127.0.0.1:{port}"
                    node.start()
                    reply["port"] = node.port
                else:
                    reply["error"] = f"unknown request {sorted(request)}"
            except Exception as error:  # reported to the test, which fails with it
                reply["error"] = repr(error)
            print(json.dumps(reply), flush=True)
    finally:
        world.close()


if __name__ == "__main__":
    main()
