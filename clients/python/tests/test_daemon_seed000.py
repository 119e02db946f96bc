"""Seed 000 end to end against the real daemon, through the pytest fixture."""

from tipdefs import FILTER_TIP, filter_tip
from tipsd_client import ActionPerformed, ShouldDisplayChanged


def test_filter_tip_end_to_end(tipsd):
    [state] = tipsd.register([FILTER_TIP])
    assert state["id"] == "filter.tip"
    assert state["shouldDisplay"] is False
    assert state["status"] == "pending"
    assert [a["id"] for a in state["tip"]["actions"]] == ["learn-more", "dismiss"]
    assert [a["index"] for a in state["tip"]["actions"]] == [0, 1]

    sub = tipsd.observe(["filter.tip"])
    assert sub.initial["tips"][0]["shouldDisplay"] is False
    assert sub.is_displayable("filter.tip") is False

    actions = []
    unsubscribe = tipsd.on_action(actions.append)
    stream = tipsd.on_action_stream(["filter.tip"])

    assert tipsd.donate("search.opened") == 1
    assert tipsd.donate("search.opened", {"screen": "search"}) == 2
    sub.expect_none()  # two donations are not enough (a barrier round trip, then nothing pending)

    assert tipsd.donate("search.opened") == 3
    change = sub.next()
    assert isinstance(change, ShouldDisplayChanged)
    assert change.id == "filter.tip" and change.should_display is True and change.status == "available"
    assert change.seq == 1
    assert change.tip["title"] == "You can narrow this down"
    assert sub.is_displayable("filter.tip")

    after = tipsd.perform_action("filter.tip", "learn-more", invalidate=False)
    assert after["id"] == "filter.tip"
    performed = stream.next()
    assert isinstance(performed, ActionPerformed)
    assert performed.tip_id == "filter.tip"
    assert isinstance(performed.actions, list)
    assert performed.actions[0]["id"] == "learn-more" and performed.actions[0]["index"] == 0
    assert performed.actions[0]["title"] == "Learn more"
    # The callback subscriber gets the same payload.
    tipsd.barrier()  # a round trip: the callback has run
    assert [a.tip_id for a in actions] == ["filter.tip"]
    assert actions[0].action_id == "learn-more"
    assert unsubscribe() is True

    tipsd.donate("filter.used")
    change = sub.next()
    assert change.id == "filter.tip" and change.should_display is False and change.seq == 2
    assert sub.missed == 0
    assert tipsd.status(["filter.tip"])[0]["shouldDisplay"] is False

    why = tipsd.explain("filter.tip")
    assert why["id"] == "filter.tip" and why["shouldDisplay"] is False
    failing = [r for r in why["rules"] if not r["holds"]]
    assert failing and failing[0]["rule"]["event"] == "filter.used"

    assert sub.close() is True
    stream.close()


def test_perform_action_invalidates_by_default(tipsd):
    tipsd.register(FILTER_TIP)
    for _ in range(3):
        tipsd.donate("search.opened")
    sub = tipsd.observe(["filter.tip"])
    assert sub.initial["tips"][0]["shouldDisplay"] is True
    state = tipsd.perform_action("filter.tip", "learn-more")
    assert state["status"] == "invalidated" and state["reason"] == "actionPerformed"
    change = sub.next()
    assert change.should_display is False and change.status == "invalidated" and change.reason == "actionPerformed"


def test_invalidate_tip_closed(tipsd):
    tipsd.register(filter_tip(rules=[]))
    sub = tipsd.observe("filter.tip")
    assert sub.initial["tips"][0]["shouldDisplay"] is True
    state = tipsd.invalidate("filter.tip")
    assert state["status"] == "invalidated" and state["reason"] == "tipClosed"
    assert sub.next().should_display is False
    state = tipsd.reset_eligibility("filter.tip")
    assert state["status"] != "invalidated"
    assert sub.next().should_display is True


def test_within_window_expiry_notifies_with_no_request(tipsd, tipsd_connect):
    """Client A only observes; B drives donations and time. When the one-day
    window of rule 3 lapses, A is told without sending anything."""
    watcher = tipsd_connect()
    tipsd.register(FILTER_TIP)
    sub = watcher.observe(["filter.tip"])
    sent_before = sent_requests(watcher)
    for _ in range(3):
        tipsd.donate("search.opened")
    assert sub.next().should_display is True
    assert sent_requests(watcher) == sent_before  # told with no request from A
    why = tipsd.explain("filter.tip")
    assert why["nextChangeAt"] is not None

    start = tipsd.now()
    tipsd.advance_clock(86399)
    # Not yet: a barrier on A's own connection (its one request, answered after the advance), then nothing pending.
    sub.expect_none()
    sent_before = sent_requests(watcher)
    assert tipsd.advance_clock(1) == start + 86400
    change = sub.next()
    assert change.id == "filter.tip" and change.should_display is False
    assert change.seq == 2
    assert sent_requests(watcher) == sent_before  # the expiry reached A with no request from A after it
    # A fresh donation re-opens the window.
    tipsd.donate("search.opened")
    assert sub.next().should_display is True


def sent_requests(sync_client):
    return sync_client.requests_sent
