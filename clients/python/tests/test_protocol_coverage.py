"""Issue #22: the client wraps every method of protocol/openrpc.json and states the protocol version it speaks in
one place, the document's. Each method is called through its wrapper against the real daemon; the wrapper must
send that method and return the daemon's result (which the suite's traffic check validates against the document).
"""

import json
import os
import pathlib
import re

import pytest

import tipsd_client
from conftest import TIMEOUT, run
from tipdefs import FILTER_TIP
from tipsd_client import PROTOCOL_VERSION, TipsClient, TipsdDaemon
from tipsd_client.errors import ForbiddenError

OPENRPC = pathlib.Path(
    os.environ.get("TIPSD_OPENRPC") or pathlib.Path(__file__).resolve().parents[3] / "protocol" / "openrpc.json"
)
DOCUMENT = json.loads(OPENRPC.read_text())
VARIANTS = {"control": {"title": "You can narrow this down"}, "friendly": {"title": "Find what you want faster"}}
TEMPLATE = {"id": "trail.new.{trailId}", "title": "{trailName} is now available"}


def test_protocol_version_is_the_documents_and_stated_once():
    assert PROTOCOL_VERSION == DOCUMENT["info"]["version"]
    defined_in = []
    for source in sorted(pathlib.Path(tipsd_client.__file__).parent.glob("*.py")):
        text = source.read_text()
        stated = re.findall(r"(?:protocol|version)[ ,]+v?\d+\.\d+\b", text, re.IGNORECASE)
        assert stated == [], f"{source.name} states a protocol version besides PROTOCOL_VERSION: {stated}"
        if re.search(r"^PROTOCOL_VERSION\s*=", text, re.MULTILINE):
            defined_in.append(source.name)
    assert defined_in == ["methods.py"]


async def _observe(c, s):
    s["observed"] = await c.observe("filter.tip")
    return s["observed"].initial


async def _subscribe_actions(c, s):
    s["actions"] = await c.on_action_stream()
    await c.perform_action("filter.tip", "learn-more", invalidate=False)
    return await s["actions"].next(timeout=TIMEOUT)


async def _analytics(c, s):
    s["analytics"] = await c.analytics(after=0)
    first, second = await s["analytics"].next(timeout=TIMEOUT), await s["analytics"].next(timeout=TIMEOUT)
    assert first.cursor < second.cursor, "in cursor order"
    return first


async def _hosted_only(call):
    """A hosted-only call on a daemon that is not hosted: refused with -32014; returns the error."""
    with pytest.raises(ForbiddenError) as refused:
        await call
    return refused.value


# One call per method of the document, through the client's public API; `s` carries what earlier calls leave for
# later ones. Unsubscribing is closing the subscription; `initialize` is connect's (called here by hand).
WRAPPERS = {
    "initialize": lambda c, s: c.initialize(),
    "initialized": lambda c, s: c.notify("initialized"),
    "$/cancelRequest": lambda c, s: c.cancel_request(1),
    "rpc.discover": lambda c, s: c.discover(),
    "catalog/reload": lambda c, s: c.reload_catalog(),
    "tips/configure": lambda c, s: c.configure("immediate"),
    "tips/register": lambda c, s: c.register({**FILTER_TIP, "variants": VARIANTS}),
    "tips/instantiate": lambda c, s: c.instantiate(TEMPLATE["id"], {"trailId": "north", "trailName": "North Ridge"}),
    "tips/unregister": lambda c, s: c.unregister("trail.new.north"),
    "groups/register": lambda c, s: c.register_group("search", ["filter.tip"]),
    "groups/unregister": lambda c, s: c.unregister_group("search"),
    "parameters/define": lambda c, s: c.define_parameter("isLoggedIn", False),
    "parameters/set": lambda c, s: c.set_parameter("isLoggedIn", True),
    "events/donate": lambda c, s: c.donate("search.opened"),
    "events/configure": lambda c, s: c.configure_event("search.opened", 100),
    "tips/invalidate": lambda c, s: c.invalidate("filter.tip"),
    "tips/resetEligibility": lambda c, s: c.reset_eligibility("filter.tip"),
    "tips/displayed": lambda c, s: c.displayed("filter.tip", 2),
    "tips/status": lambda c, s: c.status(),
    "tips/explain": lambda c, s: c.explain("filter.tip"),
    "tips/observe": _observe,
    "tips/unobserve": lambda c, s: s["observed"].close(),
    "actions/subscribe": _subscribe_actions,
    "tips/performAction": lambda c, s: c.perform_action("filter.tip", "learn-more", invalidate=False),
    "actions/unsubscribe": lambda c, s: s["actions"].close(),
    "tips/setVariant": lambda c, s: c.set_variant("filter.tip", "friendly"),
    "tips/suppress": lambda c, s: c.suppress(60, reason="checkout"),
    "tips/resume": lambda c, s: c.resume(),
    "sync/status": lambda c, s: c.sync_status(),
    "sync/push": lambda c, s: _hosted_only(c.sync_push("device:coverage", [])),
    "sync/pull": lambda c, s: _hosted_only(c.sync_pull("device:coverage", after=0)),
    # Hosted mode's methods: a daemon serving one user's state answers them with -32014 (forbidden).
    "auth/refresh": lambda c, s: _hosted_only(c.auth_refresh("token")),
    "accounts/list": lambda c, s: _hosted_only(c.accounts_list(limit=10)),
    "accounts/export": lambda c, s: _hosted_only(c.accounts_export("alice")),
    "accounts/import": lambda c, s: _hosted_only(
        c.accounts_import(
            "bob", {"account": "alice", "exportedAt": 0, "state": {"version": 1, "cursor": 0}, "history": []}
        )
    ),
    "accounts/delete": lambda c, s: _hosted_only(c.accounts_delete("alice")),
    "catalogs/publish": lambda c, s: _hosted_only(c.catalogs_publish("default", {"tips": []}, note="coverage")),
    "catalogs/diff": lambda c, s: _hosted_only(c.catalogs_diff("default", 1, 2)),
    "catalogs/rollback": lambda c, s: _hosted_only(c.catalogs_rollback("default", 1)),
    "catalogs/schedule": lambda c, s: _hosted_only(c.catalogs_schedule("default", 1, 2_000_000_000)),
    "catalogs/history": lambda c, s: _hosted_only(c.catalogs_history("default")),
    "audit/list": lambda c, s: _hosted_only(c.audit_list(limit=10)),
    "webhooks/create": lambda c, s: _hosted_only(
        c.webhooks_create("default", "https://hooks.invalid/tipsd", ["catalog.published"])
    ),
    "webhooks/list": lambda c, s: _hosted_only(c.webhooks_list()),
    "webhooks/delete": lambda c, s: _hosted_only(c.webhooks_delete("default", 1)),
    "webhooks/test": lambda c, s: _hosted_only(c.webhooks_test("default", 1)),
    "webhooks/replay": lambda c, s: _hosted_only(c.webhooks_replay("default", 0)),
    "analytics/subscribe": _analytics,
    "analytics/unsubscribe": lambda c, s: s["analytics"].close(),
    "analytics/read": lambda c, s: c.analytics_read(after=0, limit=10),
    "metrics/get": lambda c, s: c.metrics(tips="filter.tip"),
    "inspect/state": lambda c, s: c.inspect_state(),
    "testing/showAllTips": lambda c, s: c.show_all_tips(),
    "testing/hideAllTips": lambda c, s: c.hide_all_tips(),
    "testing/clear": lambda c, s: c.clear_testing(),
    "testing/showTips": lambda c, s: c.show_tips("filter.tip"),
    "testing/hideTips": lambda c, s: c.hide_tips("filter.tip"),
    "datastore/reset": lambda c, s: c.reset_datastore(),
    "clock/now": lambda c, s: c.clock(),
    "clock/advance": lambda c, s: c.advance_clock(60),
    "clock/set": lambda c, s: c.set_clock(2_000_000_000),
    "shutdown": lambda c, s: c.shutdown(),
    "exit": lambda c, s: c.exit(),
}

# Methods whose wrapper returns nothing: notifications, testing switches, unsubscribing (a `removed` flag).
NO_RESULT = {
    name for name, m in ((m["name"], m) for m in DOCUMENT["methods"]) if m["result"]["name"] in ("noReply", "null")
}


def test_the_wrappers_cover_exactly_the_documents_methods():
    assert sorted(WRAPPERS) == sorted(m["name"] for m in DOCUMENT["methods"])


def test_every_wrapper_sends_its_method_and_returns_the_daemons_result(tipsd_bin, tmp_path):
    catalog = tmp_path / "tips.json"
    catalog.write_text(json.dumps({"tips": [{**FILTER_TIP, "variants": VARIANTS}], "templates": [TEMPLATE]}))

    async def body(daemon):
        client = await TipsClient.connect(
            daemon.socket_path, initialize=False, connect_timeout=TIMEOUT, request_timeout=TIMEOUT
        )
        sent = []
        send = client.transport.send

        async def recording(payload):
            sent.append(json.loads(payload).get("method"))
            await send(payload)

        client.transport.send = recording
        state = {}
        try:
            for method, call in WRAPPERS.items():
                before = len(sent)
                result = await call(client, state)
                assert method in sent[before:], f"{method}: not sent by its wrapper ({sent[before:]})"
                if method not in NO_RESULT and not method.endswith(("unsubscribe", "unobserve")):
                    assert result is not None, f"{method}: no result"
        finally:
            await client.close()

    with TipsdDaemon(tipsd_bin, args=["--catalog", str(catalog)]) as daemon:
        daemon.expected_exit = True
        run(body, daemon)
