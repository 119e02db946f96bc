"""The analytics stream through its wrapper (the README's forwarder): events in cursor order, each handled once,
and a second run resuming after the last cursor stored."""

from conftest import TIMEOUT, run
from tipdefs import FILTER_TIP
from tipsd_client import AnalyticsEvent, TipsClient


def test_forwarder_resumes_after_the_last_cursor_it_stored(tipsd_daemon):
    stored = {"cursor": 0}
    forwarded = []

    async def forward(count):
        # The README's forwarder, stopping after `count` events.
        async with (
            TipsClient.connect(tipsd_daemon.socket_path) as tips,
            tips.analytics(after=stored["cursor"]) as events,
        ):
            async for e in events:
                assert isinstance(e, AnalyticsEvent)
                forwarded.append((e.cursor, e.type, e.tip_id, e.action_id))
                stored["cursor"] = e.cursor
                if len(forwarded) == count:
                    return

    async def body():
        async with TipsClient.connect(tipsd_daemon.socket_path, request_timeout=TIMEOUT) as app:
            await app.register([FILTER_TIP])
            await app.displayed("filter.tip", 3)
            await app.perform_action("filter.tip", "learn-more")
            history = (await app.analytics_read(after=0))["events"]
            assert [e["type"] for e in history][-3:] == ["action", "invalidation", "eligibility"]
            await forward(2)  # the first two, then the forwarder stops
            await forward(len(history))  # the rest, from the cursor stored, none twice
            assert [c for c, *_ in forwarded] == [e["cursor"] for e in history]
            assert (history[-3]["cursor"], "action", "filter.tip", "learn-more") in forwarded
            read = await app.analytics_read(after=stored["cursor"])
            assert read["events"] == [] and read["next"] == stored["cursor"]

    run(body)


def test_the_blocking_client_streams_analytics_too(tipsd):
    tipsd.register([FILTER_TIP])
    events = tipsd.analytics(after=0)
    assert {"head", "oldest"} <= set(events.initial)
    first = events.next()
    assert isinstance(first, AnalyticsEvent) and first.tip_id == "filter.tip"
    tipsd.perform_action("filter.tip", "learn-more")
    action = events.wait_for(lambda e: e.type == "action")
    assert (action.action_id, action.action_index) == ("learn-more", 0)
    assert action.cursor > first.cursor
    events.close()
