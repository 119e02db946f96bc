"""Seed 000's metrics across accounts (issue #24): an admin's `metrics/get` without `account` on a hosted node
pools every account's history. 50 accounts' histories are built by hand here and imported (accounts/import); the
expected figures are computed in this file, independently of tipsd, from the definitions in protocol/README.md
("Metrics"): each account's outcomes on their own, then sums, the median of the accounts' samples, Wilson's and
Newcombe's intervals."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import time

import pytest

from harness import TIMEOUT, tipsd_bin
from hosted import ADMIN_TOKEN, Hosted, Session
from test_inspector import cell, wait

DAY = 86_400.0
WITHIN = DAY  # the tip's goal window: {"hours": 24}
BASELINE = 7 * DAY
Z = 1.959963984540054

CATALOG = {
    "tips": [
        {
            "id": "search.tip",
            "title": "Search",
            "rules": [{"event": "search.opened", "count": {"gte": 1}}],
            "goal": {"event": "search.used", "within": {"hours": 24}},
            "variants": {
                "a": {"title": "Search (a)"},
                "b": {"title": "Search (b)"},
                "h": {"holdout": True},
            },
        }
    ]
}


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, TIMEOUT * 4))


# ------------------------------------------------------------------------------------------------- the oracle


def wilson(converted: int, decided: int):
    if decided == 0:
        return None
    p = converted / decided
    n = decided
    z2 = Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(a: tuple[int, int], b: tuple[int, int]):
    wa, wb = wilson(*a), wilson(*b)
    if wa is None or wb is None:
        return None
    p1, p2 = a[0] / a[1], b[0] / b[1]
    d = p1 - p2
    low = d - math.sqrt((p1 - wa[0]) ** 2 + (wb[1] - p2) ** 2)
    high = d + math.sqrt((wa[1] - p1) ** 2 + (p2 - wb[0]) ** 2)
    return d, low, high


def median(values: list[float]):
    if not values:
        return None
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def first_after(cursor: int, entries: list[dict]):
    return next((e for e in entries if e["cursor"] > cursor), None)


def outcomes(impressions: list[dict], goals: list[dict], now: float) -> list[dict]:
    """(1) and the exposures of (2), per impression, as protocol/README.md defines them."""
    out = []
    for index, impression in enumerate(impressions):
        following = impressions[index + 1] if index + 1 < len(impressions) else None
        reached = first_after(impression["cursor"], goals)
        converted = (
            reached is not None
            and (following is None or reached["cursor"] < following["cursor"])
            and reached["at"] - impression["at"] <= WITHIN
        )
        pending = reached is None and following is None and now - impression["at"] <= WITHIN
        if index == 0:
            starts = True
        else:
            between = first_after(impressions[index - 1]["cursor"], goals)
            starts = between is not None and between["cursor"] < impression["cursor"]
        out.append(
            {
                "converted": converted,
                "pending": pending,
                "exposure": (reached["at"] - impression["at"]) if starts and reached else None,
                "open_exposure": starts and reached is None,
            }
        )
    return out


def window_counts(impressions: list[dict], goals: list[dict], history_start: float, now: float):
    """(4) for one account: (before count, before days, from), (after count, after days, to)."""
    if not impressions:
        return None
    first = impressions[0]
    start = max(first["at"] - BASELINE, history_start)
    end = max(first["at"], min(first["at"] + BASELINE, now))
    before = sum(1 for g in goals if g["cursor"] < first["cursor"] and start <= g["at"] < first["at"])
    after = sum(
        1 for g in goals if g["cursor"] > first["cursor"] and (g["at"] < end or (g["at"] == end and end == now))
    )
    return first["at"], (start, first["at"], before), (first["at"], end, after)


class Pool:
    """One metric set's figures summed over accounts."""

    def __init__(self):
        self.impressions = 0
        self.converted = self.decided = self.pending = 0
        self.first_use: list[float] = []
        self.first_use_open = 0
        self.exposures: list[float] = []
        self.exposures_open = 0
        self.first_impression = None
        self.before = [math.inf, -math.inf, 0, 0.0]  # from, to, count, days
        self.after = [math.inf, -math.inf, 0, 0.0]
        self.has_rate = False

    def add(self, impressions, goals, now, history_start, counterfactual=False):
        results = outcomes(impressions, goals, now)
        self.impressions += len(impressions)
        self.converted += sum(r["converted"] for r in results)
        self.pending += sum(r["pending"] for r in results)
        self.decided += len(results) - sum(r["pending"] for r in results)
        self.exposures += [r["exposure"] for r in results if r["exposure"] is not None]
        self.exposures_open += sum(r["open_exposure"] for r in results)
        if impressions:
            reached = first_after(impressions[0]["cursor"], goals)
            if reached:
                self.first_use.append(reached["at"] - impressions[0]["at"])
            else:
                self.first_use_open += 1
        if counterfactual:
            return
        self.has_rate = True
        windows = window_counts(impressions, goals, history_start, now)
        if windows:
            first, before, after = windows
            self.first_impression = min(self.first_impression or first, first)
            for pooled, (start, end, count) in ((self.before, before), (self.after, after)):
                pooled[0] = min(pooled[0], start)
                pooled[1] = max(pooled[1], end)
                pooled[2] += count
                pooled[3] += max(0.0, end - start) / DAY

    def expected(self, holdout: bool) -> dict:
        interval = wilson(self.converted, self.decided)
        expected = {
            "impressions": self.impressions,
            "goal": {
                "converted": self.converted,
                "decided": self.decided,
                "pending": self.pending,
                "rate": self.converted / self.decided if self.decided else None,
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
            },
            "timeToGoal": {
                "samples": len(self.first_use),
                "median": median(self.first_use),
                "open": self.first_use_open,
            },
            "timeToGoalPerExposure": {
                "samples": len(self.exposures),
                "median": median(self.exposures),
                "open": self.exposures_open,
            },
            "holdout": holdout,
            "close": {"available": False},
        }
        if holdout:
            expected["goalRate"] = None
        elif self.first_impression is None:
            expected["goalRate"] = {"firstImpressionAt": None, "before": None, "after": None, "change": None}
        else:

            def window(pooled):
                per_day = pooled[2] / pooled[3] if pooled[3] >= 1 else None
                return {"from": pooled[0], "to": pooled[1], "days": pooled[3], "count": pooled[2], "perDay": per_day}

            before, after = window(self.before), window(self.after)
            change = after["perDay"] / before["perDay"] if before["perDay"] and after["perDay"] is not None else None
            expected["goalRate"] = {
                "firstImpressionAt": self.first_impression,
                "before": before,
                "after": after,
                "change": change,
            }
        return expected


def build_accounts(now: float, count: int, seed: int = 24):
    """Hand-built histories: each account sees one variant (a, b, or the holdout h, by its index); its impressions
    (counterfactual for h) two days apart, goal donations before, soon after (converting) or late after them, and
    for some a last impression an hour ago with nothing after it yet (pending)."""
    rng = random.Random(seed)
    accounts = {}
    for index in range(count):
        variant = "abh"[index % 3]
        kind = "exposure" if variant == "h" else "impression"
        start = now - 20 * DAY + rng.randrange(0, 3 * 3600)
        entries = []
        if rng.random() < 0.3:
            entries.append({"type": "donation", "at": start - rng.randrange(1, 5) * DAY})
        for i in range(rng.randrange(1, 4)):
            at = start + i * 2 * DAY
            entries.append({"type": kind, "at": at})
            roll = rng.random()
            if roll < 0.45:
                entries.append({"type": "donation", "at": at + rng.randrange(60, 20 * 3600)})  # within the window
            elif roll < 0.6:
                entries.append({"type": "donation", "at": at + 30 * 3600})  # too late to convert
        if rng.random() < 0.2:
            entries.append({"type": kind, "at": now - 3600})  # pending
        entries.sort(key=lambda e: e["at"])
        for cursor, entry in enumerate(entries, 1):
            entry["cursor"] = cursor
        accounts[f"user-{index:02d}"] = (variant, entries)
    return accounts


def expected_report(accounts, now: float) -> dict:
    overall = Pool()
    variants = {name: Pool() for name in "abh"}
    for variant, entries in accounts.values():
        goals = [e for e in entries if e["type"] == "donation"]
        shown = [e for e in entries if e["type"] == "impression"]
        held = [e for e in entries if e["type"] == "exposure"]
        history_start = min(e["at"] for e in entries)
        overall.add(shown, goals, now, history_start)
        for name, pool in variants.items():
            if name == "h":
                pool.add(held if variant == "h" else [], goals, now, history_start, counterfactual=True)
            else:
                pool.add(shown if variant == name else [], goals, now, history_start)
    sets = {name: pool.expected(holdout=name == "h") for name, pool in variants.items()}

    def proportion(*names):
        return tuple(sum(sets[n]["goal"][k] for n in names) for k in ("converted", "decided"))

    def difference(a, b):
        found = newcombe(a, b)
        return dict(zip(("difference", "low", "high"), found or (None, None, None), strict=True))

    exposed, holdout = proportion("a", "b"), proportion("h")
    return {
        "accounts": len(accounts),
        "historyStart": min(min(e["at"] for e in entries) for _, entries in accounts.values()),
        "overall": overall.expected(holdout=False),
        "variants": sets,
        "comparisons": [
            {"variant": "b", "against": "a"} | difference(proportion("b"), proportion("a")) | {"confidence": 0.95}
        ],
        "lift": {
            "exposed": {
                "converted": exposed[0],
                "decided": exposed[1],
                "rate": exposed[0] / exposed[1] if exposed[1] else None,
            },
            "holdout": {
                "converted": holdout[0],
                "decided": holdout[1],
                "rate": holdout[0] / holdout[1] if holdout[1] else None,
            },
        }
        | difference(exposed, holdout)
        | {"confidence": 0.95},
    }


def assert_close(actual, expected, path="result"):
    """Equal, numbers to the daemon's rounding (6 decimals)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) >= set(expected), (
            f"{path}: {actual} lacks {set(expected) - set(actual or {})}"
        )
        for key, value in expected.items():
            assert_close(actual[key], value, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: {actual} != {expected}"
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, f"{path}[{index}]")
    elif isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(actual, (int, float)) and abs(actual - expected) <= 2e-6 * max(1.0, abs(expected)), (
            f"{path}: {actual} != {expected}"
        )
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


# ------------------------------------------------------------------------------------------------- the tests


async def import_accounts(admin: Session, accounts, now: float) -> None:
    """accounts/import of each hand-built history (the state of an account that holds nothing)."""
    template = (await admin.call("accounts/export", {"account": "nobody"}))["state"]
    for account, (variant, entries) in accounts.items():
        history = [
            {"cursor": e["cursor"], "type": e["type"], "tipId": "search.tip", "variant": variant, "at": e["at"]}
            | ({"duration": 3} if e["type"] == "impression" else {})
            for e in entries
            if e["type"] != "donation"
        ]
        donations = [
            {"cursor": e["cursor"], "event": "search.used", "at": e["at"]} for e in entries if e["type"] == "donation"
        ]
        export = {"account": account, "exportedAt": now, "state": template, "history": history, "donations": donations}
        await admin.call("accounts/import", {"account": account, "export": export})


def test_the_fleet_metrics_pool_every_account_as_computed_by_hand(tmp_path):
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    world = Hosted()
    try:
        node = world.node("metrics", catalog=catalog)

        async def body():
            admin = await Session.open(node.socket_path, ADMIN_TOKEN)
            now = time.time()
            accounts = build_accounts(now, 50)
            await import_accounts(admin, accounts, now)

            report = await admin.call("metrics/get", {})
            expected = expected_report(accounts, report["now"])
            assert report["now"] >= now
            assert report["accounts"] == expected["accounts"] == 50
            assert_close(report["historyStart"], expected["historyStart"], "historyStart")
            [tip] = report["tips"]
            assert tip["tipId"] == "search.tip"
            assert_close(tip["overall"], expected["overall"], "overall")
            assert [v["variant"] for v in tip["variants"]] == ["a", "b", "h"]
            for pooled in tip["variants"]:
                assert_close(pooled, expected["variants"][pooled["variant"]], f"variants.{pooled['variant']}")
            assert_close(tip["comparisons"], expected["comparisons"], "comparisons")
            assert_close(tip["lift"], expected["lift"], "lift")
            # The samples are the accounts': as many as accounts that saw the tip and then used search.
            assert tip["overall"]["timeToGoal"]["samples"] + tip["overall"]["timeToGoal"]["open"] == sum(
                1 for v, entries in accounts.values() if v != "h"
            )

            # `tipsd metrics` with the admin token shows the same, pooled; with --account, one account's.
            table = subprocess.run(
                [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            assert table.returncode == 0, table.stderr
            assert table.stdout.startswith("across 50 accounts"), table.stdout
            assert "search.tip: b vs a: " in table.stdout and "search.tip: lift against the holdout: " in table.stdout
            as_json = subprocess.run(
                [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file), "--json"],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            pooled = json.loads(as_json.stdout)
            assert pooled["accounts"] == 50 and pooled["tips"][0]["overall"]["goal"] == tip["overall"]["goal"]
            first = next(iter(accounts))
            one = subprocess.run(
                [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file), "--json"]
                + ["--account", first],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            assert "accounts" not in json.loads(one.stdout), one.stdout

            # One account's, named by the admin, is that account's alone.
            account, (variant, entries) = next(iter(accounts.items()))
            own = await admin.call("metrics/get", {"account": account})
            assert "accounts" not in own
            single = expected_report({account: (variant, entries)}, own["now"])
            assert_close(own["tips"][0]["overall"]["goal"], single["overall"]["goal"], "one account's goal")
            await admin.close()

        run(body())
    finally:
        world.close()


def test_a_users_metrics_are_their_own_account_only(tmp_path):
    """A user's session never sees the pool: without `account` it gets its own account's figures."""
    world = Hosted()
    try:
        node = world.node("mine")

        async def body():
            user = await Session.open(node.socket_path, world.token("olivia"))
            report = await user.call("metrics/get", {})
            assert "accounts" not in report
            await user.close()

        run(body())
    finally:
        world.close()


def test_the_inspector_shows_an_admin_the_fleet(tmp_path, browser):
    """The node's web inspector, opened with the admin token: the pooled metrics (how many accounts, each rate's
    interval, variant against variant) and every account's lifecycle events, named by account."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    world = Hosted()
    try:
        node = world.node("inspected", catalog=catalog)
        accounts = build_accounts(time.time(), 9)

        async def setup():
            admin = await Session.open(node.socket_path, ADMIN_TOKEN)
            await import_accounts(admin, accounts, time.time())
            report = await admin.call("metrics/get", {})
            await admin.close()
            return report

        report = run(setup())
        browser.get(f"http://127.0.0.1:{node.port}/#token={ADMIN_TOKEN}")
        wait(browser, lambda d: "across 9 accounts" in (cell(d, "#metrics-note") or ""), "the fleet's metrics")
        assert cell(browser, "#connection") == "connected — fleet (admin)"
        card = cell(browser, '[data-metrics="search.tip"]')
        goal = report["tips"][0]["overall"]["goal"]
        assert f"({goal['converted']}/{goal['decided']}" in card, card
        assert "b vs a" in card and "[" in card, card
        assert "median of" in card, card
        # One account's own tables are not shown to the fleet's admin.
        assert not browser.execute_script("return document.querySelector('#tips').offsetParent")

        # A user's change on the node reaches the admin's lifecycle list, with the user's account.
        async def user_displays():
            user = await Session.open(node.socket_path, world.token("zoe"))
            await user.call("tips/displayed", {"id": "search.tip", "duration": 2})
            await user.close()

        run(user_displays())
        wait(browser, lambda d: "zoe" in (cell(d, "#feed") or ""), "the user's event in the fleet's lifecycle list")
    finally:
        world.close()


if __name__ == "__main__":
    pytest.main([__file__])
