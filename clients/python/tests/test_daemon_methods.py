"""Every protocol method through the client, against the real daemon.

Waits (sub.next()) are bounded by the fixture client's timeout ($TIPSD_TEST_TIMEOUT) only against hanging; "no
(other) notification" is checked with sub.expect_none(), a barrier round trip, not a pause."""

import datetime as dt

import pytest

from tipdefs import FILTER_TIP, event_tip, plain_tip
from tipsd_client import (
    CurrentTipChanged,
    InvalidParamsError,
    MethodNotFoundError,
    TipsdError,
    UnknownActionError,
    UnknownTipError,
    VirtualClockDisabledError,
)


def test_fixture_gives_initialized_client_on_fresh_daemon(tipsd, tipsd_daemon):
    assert tipsd.protocol_version.split(".")[0] == "1"
    assert tipsd.server_info["name"] == "tipsd"
    caps = tipsd.capabilities
    assert caps["virtualClock"] is True
    assert set(caps["framings"]) >= {"newline", "contentLength"}
    assert "tips/shouldDisplayChanged" in caps["notifications"]
    for m in ("events/donate", "tips/observe", "clock/advance", "testing/showAllTips"):
        assert tipsd.supports(m), m
    assert tipsd_daemon.returncode is None
    assert tipsd_daemon.socket_path.endswith("tipsd.sock")
    assert tipsd.status() == []  # in-memory datastore: nothing yet
    clock = tipsd.clock()
    assert clock["virtual"] is True


def test_discover(tipsd):
    doc = tipsd.discover()
    assert "openrpc" in doc and isinstance(doc["methods"], list)
    names = {m["name"] for m in doc["methods"]}
    if names:  # protocol/openrpc.json may still be a draft with no methods
        assert {"events/donate", "tips/register", "tips/observe"} <= names


def test_configure_register_unregister(tipsd):
    assert tipsd.configure("daily") == {"displayFrequency": "daily"}
    assert tipsd.configure(display_frequency="immediate")["displayFrequency"] == "immediate"
    states = tipsd.register([FILTER_TIP, plain_tip("always.tip")])
    assert {s["id"] for s in states} == {"filter.tip", "always.tip"}
    always = next(s for s in states if s["id"] == "always.tip")
    assert always["shouldDisplay"] is True and always["status"] == "available"
    assert always["displayCount"] == 0 and always["displayedDuration"] == 0
    assert always["tip"]["message"] is None and always["tip"]["actions"] == []
    assert tipsd.unregister(["always.tip", "never.registered"]) == ["always.tip"]
    assert [s["id"] for s in tipsd.status()] == ["filter.tip"]


def test_status_state_and_explain(tipsd):
    tipsd.register([event_tip("a.tip", "a"), event_tip("b.tip", "b")])
    assert {s["id"] for s in tipsd.status()} == {"a.tip", "b.tip"}
    assert [s["id"] for s in tipsd.status("b.tip")] == ["b.tip"]
    assert tipsd.state("a.tip")["shouldDisplay"] is False
    assert tipsd.should_display("a.tip") is False
    why = tipsd.explain("a.tip")
    assert why["status"] == "pending" and why["shouldDisplay"] is False
    assert why["rules"][0]["holds"] is False and "a" in why["rules"][0]["detail"]
    assert isinstance(why["lines"], list) and why["lines"]
    tipsd.donate("a")
    assert tipsd.should_display("a.tip") is True
    assert tipsd.explain("a.tip")["rules"][0]["holds"] is True


def test_donate_counts_info_and_configure_event(tipsd):
    assert tipsd.donate("trail.visited", {"region": "north"}) == 1
    assert tipsd.donate("trail.visited", info={"region": "south"}) == 2
    assert tipsd.configure_event("trail.visited", 3) == {"id": "trail.visited", "maxDonations": 3, "maxAge": None}
    counts = [tipsd.donate("trail.visited") for _ in range(3)]
    assert counts[-1] == 3  # capped
    tipsd.register(
        plain_tip("north.tip", rules=[{"event": "trail.visited", "where": {"region": "north"}, "count": {"gte": 1}}])
    )
    assert tipsd.should_display("north.tip") is False  # the north donation was dropped by the cap
    tipsd.donate("trail.visited", {"region": "north"})
    assert tipsd.should_display("north.tip") is True


def test_parameters(tipsd):
    assert tipsd.define_parameters(
        [{"id": "isLoggedIn", "default": False}, {"id": "tier", "default": "free", "transient": True}]
    ) == ["isLoggedIn", "tier"]
    assert tipsd.define_parameters({"launches": 0}) == ["launches"]
    tipsd.register(plain_tip("login.tip", rules=[{"parameter": "isLoggedIn", "eq": True}]))
    sub = tipsd.observe("login.tip")
    assert sub.initial["tips"][0]["shouldDisplay"] is False
    assert tipsd.set_parameter("isLoggedIn", True) == {"id": "isLoggedIn", "value": True}
    assert sub.next().should_display is True
    tipsd.set_parameter("isLoggedIn", False)
    assert sub.next().should_display is False


def test_groups(tipsd):
    tipsd.register([event_tip("first.tip", "one"), event_tip("second.tip", "two")])
    group = tipsd.register_group("onboarding", ["first.tip", "second.tip"], priority="firstAvailable")
    assert group == {"id": "onboarding", "currentTip": None}
    sub = tipsd.observe(groups=["onboarding"])
    assert sub.initial["groups"] == [{"group": "onboarding", "tipId": None}]
    tipsd.donate("two")
    tipsd.barrier()  # every notification the donation caused has arrived
    changes = sub.pending()
    group_changes = [c for c in changes if isinstance(c, CurrentTipChanged)]
    assert group_changes and group_changes[-1].group == "onboarding" and group_changes[-1].tip_id == "second.tip"
    assert sub.current_tip["onboarding"] == "second.tip"
    tipsd.unregister_group("onboarding")
    with pytest.raises(TipsdError) as ei:
        tipsd.unregister_group("onboarding")
    assert ei.value.code == -32007


def test_displayed_counts_and_durations(tipsd):
    tipsd.register(plain_tip("shown.tip", options={"maxDisplayCount": 2}))
    s = tipsd.displayed("shown.tip")
    assert s["displayCount"] == 1
    s = tipsd.displayed("shown.tip", duration=2.5)
    assert s["displayCount"] == 2
    assert s["displayedDuration"] == pytest.approx(2.5)
    assert s["status"] == "invalidated" and s["reason"] == "displayCountExceeded"


def test_observe_everything_includes_later_tips_and_unobserve(tipsd):
    sub = tipsd.observe()
    assert sub.initial["tips"] == []
    tipsd.register(plain_tip("late.tip"))
    change = sub.next()
    assert change.id == "late.tip" and change.should_display is True
    assert sub.close() is True
    assert sub.close() is True  # idempotent
    assert tipsd.unobserve(sub.id) is False  # server: already gone


def test_on_action_filters_by_tip(tipsd):
    tipsd.register(
        [
            plain_tip("a.tip", actions=[{"id": "go", "title": "Go"}]),
            plain_tip("b.tip", actions=[{"id": "go", "title": "Go"}]),
        ]
    )
    only_b = tipsd.on_action_stream("b.tip")
    everything = tipsd.on_action_stream()
    tipsd.perform_action("a.tip", "go", invalidate=False)
    tipsd.perform_action("b.tip", "go", invalidate=False)
    assert [everything.next().tip_id, everything.next().tip_id] == ["a.tip", "b.tip"]
    assert only_b.next().tip_id == "b.tip"
    only_b.expect_none()
    everything.expect_none()


def test_testing_helpers(tipsd):
    tipsd.register([event_tip("pending.tip", "never"), plain_tip("ready.tip")])
    sub = tipsd.observe()
    assert sub.should_display == {"pending.tip": False, "ready.tip": True}
    tipsd.show_all_tips()
    assert tipsd.should_display("pending.tip") is True
    tipsd.barrier()  # every notification show_all_tips caused has arrived
    changes = sub.pending()
    assert [(c.id, c.should_display) for c in changes] == [("pending.tip", True)]
    tipsd.hide_all_tips()  # showAll still wins over hideAll until cleared
    assert tipsd.should_display("pending.tip") is True
    tipsd.clear_testing()
    tipsd.hide_all_tips()
    assert tipsd.should_display("ready.tip") is False
    assert tipsd.should_display("pending.tip") is False
    tipsd.clear_testing()
    assert tipsd.should_display("ready.tip") is True
    assert tipsd.should_display("pending.tip") is False
    tipsd.show_tips(["pending.tip"])
    assert tipsd.should_display("pending.tip") is True
    tipsd.hide_tips("ready.tip")
    assert tipsd.should_display("ready.tip") is False
    tipsd.clear_testing()
    tipsd.reset_datastore()
    assert tipsd.donate("never") == 1  # donations were wiped


def test_virtual_clock(tipsd):
    now = tipsd.now()
    assert isinstance(now, (int, float))
    assert tipsd.advance_clock(60) == pytest.approx(now + 60)
    assert tipsd.advance_clock(dt.timedelta(hours=1)) == pytest.approx(now + 3660)
    assert tipsd.set_clock(1767225600) == 1767225600
    when = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
    assert tipsd.set_clock(when) == when.timestamp()
    assert tipsd.now() == when.timestamp()


@pytest.mark.tipsd(clock=None)
def test_system_clock_refuses_virtual_methods(tipsd):
    assert tipsd.clock()["virtual"] is False
    with pytest.raises(VirtualClockDisabledError) as ei:
        tipsd.advance_clock(1)
    assert ei.value.code == -32004


def test_errors(tipsd):
    tipsd.register(FILTER_TIP)
    with pytest.raises(UnknownTipError) as ei:
        tipsd.invalidate("no.such.tip")
    assert ei.value.code == -32001
    with pytest.raises(UnknownTipError):
        tipsd.explain("no.such.tip")
    with pytest.raises(UnknownActionError) as ei:
        tipsd.perform_action("filter.tip", "no-such-action")
    assert ei.value.code == -32008
    bad = dict(FILTER_TIP, rules=[{"event": "search.opened", "count": {"gte ": 3}}])
    with pytest.raises(InvalidParamsError) as ei:
        tipsd.register([bad])
    assert ei.value.code == -32602
    assert "rules[0].count" in ei.value.message
    with pytest.raises(InvalidParamsError):
        tipsd.request("events/donate", {"id": 3})
    with pytest.raises(InvalidParamsError):
        tipsd.invalidate("filter.tip", reason="bored")
    with pytest.raises(MethodNotFoundError) as ei:
        tipsd.request("tips/frobnicate", {})
    assert ei.value.code == -32601
    with pytest.raises(TipsdError) as ei:
        tipsd.initialize()
    assert ei.value.code == -32600


def test_donate_positional_params_via_raw_request(tipsd):
    assert tipsd.request("events/donate", ["positional.event"]) == {"count": 1, "lifetime": 1}
    assert tipsd.request("events/donate", ["positional.event", {"k": 1}]) == {"count": 2, "lifetime": 2}


def test_batch(tipsd):
    out = tipsd.batch([("events/donate", {"id": "e"}), ("tips/explain", {"id": "nope"}), "clock/now"])
    assert out[0] == {"count": 1, "lifetime": 1}
    assert isinstance(out[1], UnknownTipError)
    assert out[2]["virtual"] is True


def test_shutdown_then_only_exit(tipsd, tipsd_daemon):
    tipsd.shutdown()
    tipsd_daemon.expected_exit = True
    with pytest.raises(TipsdError) as ei:
        tipsd.donate("late")
    assert ei.value.code == -32006


def test_cancel_request_is_accepted_and_ignored(tipsd):
    tipsd.cancel_request(12345)  # a notification: no reply, no error
    assert tipsd.donate("after.cancel") == 1


def test_define_single_parameter_and_coercion(tipsd):
    assert tipsd.define_parameter("launches", 0, transient=False) == ["launches"]
    tipsd.register(plain_tip("power.tip", rules=[{"parameter": "launches", "gte": 5}]))
    sub = tipsd.observe("power.tip")
    for n in range(1, 6):
        assert tipsd.set_parameter("launches", n)["value"] == n
    change = sub.next()
    assert change.should_display is True
    sub.expect_none()  # only that one change (a barrier round trip, then nothing pending)


def test_unsubscribe_while_action_in_flight(tipsd, tipsd_connect):
    """A callback never runs after unsubscribe() returned, even when the
    daemon had already sent the notification."""
    actor = tipsd_connect()
    tipsd.register(plain_tip("a.tip", actions=[{"id": "go", "title": "Go"}]))
    got = []
    unsubscribe = tipsd.on_action(got.append)
    for _ in range(5):
        actor.perform_action("a.tip", "go", invalidate=False)
    assert unsubscribe() is True
    seen = len(got)
    actor.perform_action("a.tip", "go", invalidate=False)
    tipsd.barrier()  # the notification for that action, if the daemon sent one, has been delivered by now
    assert len(got) == seen
