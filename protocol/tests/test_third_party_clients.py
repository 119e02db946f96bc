"""Clients nobody on this project wrote, from PyPI, each running seed 000's FilterTip scenario against the real daemon:
initialize, register the FilterTip, observe it, subscribe to actions, donate three times, receive
tips/shouldDisplayChanged, perform an action, receive the array-shaped tips/actionPerformed payload.

- python-lsp-jsonrpc (pylsp_jsonrpc): Content-Length framing over stdio
- jsonrpcclient: request building and response parsing; newline-delimited JSON over the Unix socket
- pygls: its JsonRPCClient.start_io against `tipsd serve --stdio` (Content-Length), notifications via `feature`

Every result and notification they receive is validated against protocol/openrpc.json as well.
"""

import asyncio
import json
import queue
import socket
import subprocess
import threading

import pytest

import harness

INIT = {"protocolVersion": "1.0", "clientInfo": {"name": "third-party"}}
ACTIONS = [{"id": "learn-more", "title": "Learn more", "index": 0}]


def check_result(contract, method, result):
    problems = harness.errors_of(contract.result_validator(method), result)
    assert not problems, f"{method}: {problems}"


def check_notification(contract, method, params):
    problems = harness.errors_of(contract.notification_validator(method), params)
    assert not problems, f"{method}: {problems}"


def test_python_lsp_jsonrpc_content_length_over_stdio(contract):
    from pylsp_jsonrpc.endpoint import Endpoint
    from pylsp_jsonrpc.exceptions import JsonRpcException
    from pylsp_jsonrpc.streams import JsonRpcStreamReader, JsonRpcStreamWriter

    proc = subprocess.Popen(
        [harness.tipsd_bin(), "serve", "--stdio", *harness.DEFAULT_ARGS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    notes: queue.Queue = queue.Queue()
    dispatcher = {
        "tips/shouldDisplayChanged": lambda params: notes.put(("tips/shouldDisplayChanged", params)),
        "tips/actionPerformed": lambda params: notes.put(("tips/actionPerformed", params)),
        "groups/currentTipChanged": lambda params: notes.put(("groups/currentTipChanged", params)),
    }
    writer = JsonRpcStreamWriter(proc.stdin)
    reader = JsonRpcStreamReader(proc.stdout)
    endpoint = Endpoint(dispatcher, writer.write)
    thread = threading.Thread(target=reader.listen, args=(endpoint.consume,), daemon=True)
    thread.start()

    def call(method, params=None):
        result = endpoint.request(method, params).result(timeout=harness.TIMEOUT)
        check_result(contract, method, result)
        return result

    try:
        init = call("initialize", INIT)
        assert init["protocolVersion"] == "1.3"
        registered = call("tips/register", {"tips": [harness.FILTER_TIP]})
        assert registered["tips"][0]["status"] == "pending"
        observed = call("tips/observe", {"ids": ["filter.tip"]})
        assert observed["tips"][0]["shouldDisplay"] is False
        actions_sub = call("actions/subscribe", {"tipIds": ["filter.tip"]})["subscription"]
        counts = [call("events/donate", {"id": "search.opened"})["count"] for _ in range(3)]
        assert counts == [1, 2, 3]
        method, params = notes.get(timeout=harness.TIMEOUT)
        check_notification(contract, method, params)
        assert method == "tips/shouldDisplayChanged"
        assert params["subscription"] == observed["subscription"] and params["seq"] == 1
        assert params["shouldDisplay"] is True and params["status"] == "available"
        state = call("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
        assert state["status"] == "invalidated" and state["reason"] == "actionPerformed"
        got = dict(notes.get(timeout=harness.TIMEOUT) for _ in range(2))
        for m, p in got.items():
            check_notification(contract, m, p)
        assert got["tips/actionPerformed"]["subscription"] == actions_sub
        assert got["tips/actionPerformed"]["actions"] == ACTIONS
        assert got["tips/shouldDisplayChanged"]["shouldDisplay"] is False
        # errors surface as the library's exception with the protocol's code
        with pytest.raises(JsonRpcException) as err:
            endpoint.request("tips/explain", {"id": "nope"}).result(timeout=harness.TIMEOUT)
        assert err.value.code == -32001
        assert call("shutdown") is None
        endpoint.notify("exit")
        assert proc.wait(timeout=harness.TIMEOUT) == 0
    finally:
        endpoint.shutdown()
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_jsonrpcclient_newline_over_unix_socket(contract):
    from jsonrpcclient import Error, Ok, notification, parse, request

    with harness.Daemon("socket") as daemon:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(daemon.socket_path)
        sock.settimeout(harness.TIMEOUT)
        rfile = sock.makefile("rb")
        notes = []

        def send(message):
            sock.sendall(json.dumps(message).encode() + b"\n")

        def read():
            line = rfile.readline()
            assert line, "daemon closed the connection"
            return json.loads(line)

        def call(method, params=None):
            req = request(method, params=params) if params is not None else request(method)
            send(req)
            while True:
                message = read()
                if "method" in message:  # a server notification, not a response
                    check_notification(contract, message["method"], message["params"])
                    notes.append(message)
                    continue
                response = parse(message)
                assert response.id == req["id"]
                if isinstance(response, Ok):
                    check_result(contract, method, response.result)
                return response

        def ok(method, params=None):
            response = call(method, params)
            assert isinstance(response, Ok), response
            return response.result

        assert ok("initialize", INIT)["serverInfo"]["name"] == "tipsd"
        ok("tips/register", {"tips": [harness.FILTER_TIP]})
        sub = ok("tips/observe", {"ids": ["filter.tip"]})["subscription"]
        act = ok("actions/subscribe")["subscription"]
        for n in (1, 2, 3):
            assert ok("events/donate", {"id": "search.opened"}) == {"count": n, "lifetime": n}
        # the notification is sent before the reply that caused it, so it is already here
        assert [m["method"] for m in notes] == ["tips/shouldDisplayChanged"]
        assert notes[0]["params"]["subscription"] == sub and notes[0]["params"]["shouldDisplay"] is True
        ok("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
        performed = [m for m in notes if m["method"] == "tips/actionPerformed"]
        assert len(performed) == 1
        assert performed[0]["params"] == {"subscription": act, "seq": 1, "tipId": "filter.tip", "actions": ACTIONS}
        failed = call("tips/performAction", {"id": "filter.tip", "actionId": "nope"})
        assert isinstance(failed, Error) and failed.code == -32008
        send(notification("exit"))
        assert rfile.readline() == b""  # the daemon closes this connection
        assert daemon.proc.poll() is None  # and keeps serving
        sock.close()


def plain(value):
    """pygls structures untyped JSON objects as namedtuples (`Object`); turn them back into dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def test_pygls_json_rpc_client_over_stdio(contract):
    from pygls.client import JsonRPCClient
    from pygls.exceptions import JsonRpcException

    async def scenario():
        client = JsonRPCClient()
        notes: asyncio.Queue = asyncio.Queue()

        @client.feature("tips/shouldDisplayChanged")
        def should_display_changed(params):
            notes.put_nowait(("tips/shouldDisplayChanged", plain(params)))

        @client.feature("tips/actionPerformed")
        def action_performed(params):
            notes.put_nowait(("tips/actionPerformed", plain(params)))

        await client.start_io(harness.tipsd_bin(), "serve", "--stdio", *harness.DEFAULT_ARGS)

        async def call(method, params=None):
            result = plain(await asyncio.wait_for(client.protocol.send_request_async(method, params), harness.TIMEOUT))
            check_result(contract, method, result)
            return result

        async def note():
            method, params = await asyncio.wait_for(notes.get(), harness.TIMEOUT)
            check_notification(contract, method, params)
            return method, params

        try:
            assert (await call("initialize", INIT))["capabilities"]["virtualClock"] is True
            await call("tips/register", {"tips": [harness.FILTER_TIP]})
            sub = (await call("tips/observe", {"ids": ["filter.tip"]}))["subscription"]
            act = (await call("actions/subscribe"))["subscription"]
            for _ in range(3):
                await call("events/donate", {"id": "search.opened"})
            method, params = await note()
            assert method == "tips/shouldDisplayChanged" and params["subscription"] == sub
            assert params["seq"] == 1 and params["shouldDisplay"] is True
            await call("tips/performAction", {"id": "filter.tip", "actionId": "learn-more"})
            got = dict([await note(), await note()])
            assert got["tips/actionPerformed"] == {
                "subscription": act,
                "seq": 1,
                "tipId": "filter.tip",
                "actions": ACTIONS,
            }
            assert got["tips/shouldDisplayChanged"]["seq"] == 2
            with pytest.raises(JsonRpcException) as err:
                await call("tips/status", {"ids": ["nope"]})
            assert err.value.code == -32001
            # pygls sends "params": null when params is None; tipsd takes it as absent params
            assert await call("shutdown") is None
            client.protocol.notify("exit")  # also "params": null
            assert await asyncio.wait_for(client._server.wait(), harness.TIMEOUT) == 0
        finally:
            if client._server and client._server.returncode is None:
                client._server.kill()
            await client.stop()

    asyncio.run(scenario())
