"""Seed 000's metrics across accounts (issue #24): an admin's `metrics/get` without `account` on a hosted node
pools every account's history. 300 accounts' histories are built by hand here and imported (accounts/import); the
expected figures are computed in this file, independently of tipsd, from the definitions in protocol/README.md
("Metrics") and docs/measuring.md (issues #38, #46): each account's outcomes on their own, then sums, the median of
the accounts' samples, and intervals with the account as the unit. The oracle is written from the references, in
their own form, not from TipsMetrics' algebra: the primary lift is a two-sample difference of means of a 0/1 per
account (Welch's standard error), Bonferroni's z from statistics.NormalDist, Waudby-Smith et al.'s confidence
sequence in the paper's form (σ̂ₜ √(2(tρ² + 1)/(t²ρ²) log(√(tρ² + 1)/α))), Pearson's χ² with its closed-form
survival for 1 and 2 degrees of freedom, the ratio of means' delta method for the relative lift, and Deng et al.'s
delta method for the capped per-impression ratio (numpy's covariances)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import subprocess
import time
from statistics import NormalDist

import numpy as np
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


MINIMUM = 100  # accounts a side before an interval (metrics/get's method.minimumAccounts)
PLANNED = 1000  # the confidence sequence's tuning (method.alwaysValid.plannedAccounts)


def ratio_variance(accounts) -> float:
    """Deng, Knoblich & Lu (2018), the delta method for a ratio of means over N accounts (cᵢ, nᵢ):
    Var(c̄/n̄) ≈ (σ²_c − 2R σ_cn + R² σ²_n) / (N μ²_n), the (co)variances numpy's sample ones."""
    c = np.array([a[0] for a in accounts], float)
    n = np.array([a[1] for a in accounts], float)
    r = c.sum() / n.sum()
    cov = np.cov(c, n)
    return (cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (len(accounts) * n.mean() ** 2)


def rate_interval(accounts):
    """A rate's fixed-horizon interval across accounts, None under the minimum."""
    if len(accounts) < MINIMUM:
        return None
    rate = sum(c for c, _, _ in accounts) / sum(n for _, n, _ in accounts)
    half = Z * math.sqrt(ratio_variance(accounts))
    return max(0.0, rate - half), min(1.0, rate + half)


def always_valid_multiplier(total: int, alpha: float = 0.05) -> float:
    """Waudby-Smith et al. (2024), the asymptotic confidence sequence μ̂ₜ ± σ̂ₜ √(2(tρ² + 1)/(t²ρ²) log(√(tρ² + 1)/α))
    with ρ tuned for α = 0.05 at PLANNED accounts, divided by the standard error σ̂ₜ/√t."""
    rho2 = (-2 * math.log(0.05) + math.log(-2 * math.log(0.05) + 1)) / PLANNED
    t = total
    return math.sqrt(t) * math.sqrt(2 * (t * rho2 + 1) / (t * t * rho2) * math.log(math.sqrt(t * rho2 + 1) / alpha))


FAMILY = 2  # search.tip's comparisons: b against a, and the lift (Bonferroni)


def corrected():
    alpha = 0.05 / FAMILY
    return alpha, NormalDist().inv_cdf(1 - alpha / 2)


def chi_square(observed: dict, weights: dict) -> dict:
    """Pearson's χ² of triggered accounts against the weights; survival in closed form (1 or 2 degrees of freedom)."""
    total = sum(observed.values())
    expected = {name: total * weights[name] / sum(weights[n] for n in observed) for name in observed}
    x = sum((observed[n] - expected[n]) ** 2 / expected[n] for n in observed)
    df = len(observed) - 1
    p = math.erfc(math.sqrt(x / 2)) if df == 1 else math.exp(-x / 2)
    return {
        "observed": observed,
        "expected": expected,
        "chiSquare": x,
        "degreesOfFreedom": df,
        "pValue": p,
        "flagged": p < 0.001,
    }


def difference(a, b, names, cuped=False) -> dict:
    """The primary `a − b`: each account (converted 0/1, covariate) of two independent arms, as metrics/get writes it."""
    alpha, z = corrected()
    found = {
        "difference": None,
        "low": None,
        "high": None,
        "interval": "alwaysValid",
        "fixedHorizon": None,
        "confidence": 0.95,
        "sample": {names[0]: len(a), names[1]: len(b), "minimum": MINIMUM},
        "notEnoughData": True,
        "standardError": None,
        "cuped": None,
        "relative": None,
        "correction": {"name": "bonferroni", "comparisons": FAMILY, "alpha": alpha},
    }
    if not a or not b:
        return found
    ya, yb = np.array([y for y, _ in a], float), np.array([y for y, _ in b], float)
    d = ya.mean() - yb.mean()
    found["difference"] = d
    if min(len(a), len(b)) < MINIMUM:
        return found
    va, vb = ya.var(ddof=1) / len(a), yb.var(ddof=1) / len(b)  # Welch: each arm's own variance
    se = math.sqrt(va + vb)
    k = always_valid_multiplier(len(a) + len(b), alpha)
    found |= {
        "low": d - k * se,
        "high": d + k * se,
        "fixedHorizon": {"low": d - z * se, "high": d + z * se},
        "notEnoughData": False,
        "standardError": se,
    }
    ra, rb = ya.mean(), yb.mean()
    if rb > 0:
        # The delta method for a ratio of independent means: Var(ra/rb) ≈ Var(ra)/rb² + ra² Var(rb)/rb⁴.
        rse = math.sqrt(va / rb**2 + ra**2 * vb / rb**4)
        r = ra / rb - 1
        found["relative"] = {
            "estimate": r,
            "low": r - k * rse,
            "high": r + k * rse,
            "fixedHorizon": {"low": r - z * rse, "high": r + z * rse},
            "standardError": rse,
        }
    if cuped:
        xa, xb = np.array([x for _, x in a], float), np.array([x for _, x in b], float)
        ca, cb = np.cov(ya, xa)[0, 1], np.cov(yb, xb)[0, 1]
        covariance = ca / len(a) + cb / len(b)
        var_x = xa.var(ddof=1) / len(a) + xb.var(ddof=1) / len(b)
        theta = covariance / var_x if var_x > 0 else 0.0
        adjusted = d - theta * (xa.mean() - xb.mean())
        adjusted_variance = va + vb - 2 * theta * covariance + theta * theta * var_x
        se_c = math.sqrt(adjusted_variance)
        found["cuped"] = {
            "difference": adjusted,
            "low": adjusted - k * se_c,
            "high": adjusted + k * se_c,
            "fixedHorizon": {"low": adjusted - z * se_c, "high": adjusted + z * se_c},
            "standardError": se_c,
            "theta": theta,
            "varianceReduction": 1 - adjusted_variance / (va + vb),
        }
    return found


def per_impression(a, b, names) -> dict:
    """The secondary per-impression `a − b` over accounts (converted, decided, _): each account's counts winsorized at
    the 99th percentile (nearest rank) of both arms' accounts, then Deng et al.'s delta method for a ratio of means:
    Var(c̄/n̄) ≈ (σ²_c − 2R σ_cn + R² σ²_n) / (N μ²_n)."""
    alpha, z = corrected()
    both = a + b
    if not a or not b:
        return {"metric": "goalConversionPerImpression", "secondary": True}  # (one account's report: not compared)

    def nearest_rank(values):
        values = sorted(values)
        return values[max(1, math.ceil(0.99 * len(values))) - 1]

    cap_n, cap_c = nearest_rank([n for _, n, _ in both]), nearest_rank([c for c, _, _ in both])

    def capped(arm):
        out = []
        for c, n, _ in arm:
            n2 = min(n, cap_n)
            out.append((min(c, cap_c, n2), n2))
        return np.array(out, float).reshape(-1, 2)

    found = {
        "metric": "goalConversionPerImpression",
        "secondary": True,
        "cap": {"quantile": 0.99, "impressions": cap_n, "conversions": cap_c},
        "sample": {names[0]: len(a), names[1]: len(b), "minimum": MINIMUM},
        "correction": {"name": "bonferroni", "comparisons": FAMILY, "alpha": alpha},
    }
    ca, cb = capped(a), capped(b)
    ratio = lambda arm: arm[:, 0].sum() / arm[:, 1].sum()  # noqa: E731
    d = ratio(ca) - ratio(cb)
    found["difference"] = d
    if min(len(a), len(b)) < MINIMUM:
        return found | {"low": None, "high": None, "fixedHorizon": None, "standardError": None, "notEnoughData": True}

    se = math.sqrt(ratio_variance(ca.tolist()) + ratio_variance(cb.tolist()))
    k = always_valid_multiplier(len(a) + len(b), alpha)
    found |= {"low": d - k * se, "high": d + k * se, "fixedHorizon": {"low": d - z * se, "high": d + z * se}}
    found |= {"standardError": se, "notEnoughData": False}
    return found


def primary(trigger, goals, now):
    """Issue #46's per-account outcome: None when not triggered, "pending" inside the window with no goal yet, else
    (converted 0/1, covariate: goal donations in the 7 days before the trigger)."""
    if trigger is None:
        return None
    covariate = sum(1 for g in goals if g["cursor"] < trigger["cursor"] and g["at"] >= trigger["at"] - BASELINE)
    reached = first_after(trigger["cursor"], goals)
    if reached is not None and reached["at"] - trigger["at"] <= WITHIN:
        return (1, float(covariate))
    if now - trigger["at"] <= WITHIN:
        return "pending"
    return (0, float(covariate))


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
        self.accounts: list[tuple[int, int, float]] = []  # (converted, decided, covariate) per account
        self.exposures: list[float] = []
        self.exposures_open = 0
        self.first_impression = None
        self.before = [math.inf, -math.inf, 0, 0.0]  # from, to, count, days
        self.after = [math.inf, -math.inf, 0, 0.0]
        self.has_rate = False
        self.triggered = 0
        self.triggered_pending = 0
        self.primary: list[tuple[int, float]] = []  # (converted, covariate) per decided triggered account

    def trigger(self, outcome) -> None:
        if outcome is None:
            return
        self.triggered += 1
        if outcome == "pending":
            self.triggered_pending += 1
        else:
            self.primary.append(outcome)

    def add(self, impressions, goals, now, history_start, counterfactual=False):
        results = outcomes(impressions, goals, now)
        decided = len(results) - sum(r["pending"] for r in results)
        if decided:
            # CUPED's covariate: goal donations in the 7 days before the account's first exposure.
            first = impressions[0]
            before = [g for g in goals if g["cursor"] < first["cursor"] and g["at"] >= first["at"] - BASELINE]
            self.accounts.append((sum(r["converted"] for r in results), decided, float(len(before))))
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

    def triggered_expected(self) -> dict:
        converted = sum(y for y, _ in self.primary)
        decided = len(self.primary)
        found = {
            "triggered": self.triggered,
            "converted": converted,
            "decided": decided,
            "pending": self.triggered_pending,
            "rate": converted / decided if decided else None,
            "accounts": decided,
            "notEnoughData": decided < MINIMUM,
        }
        if decided >= MINIMUM:
            y = np.array([y for y, _ in self.primary], float)
            half = Z * math.sqrt(y.var(ddof=1) / decided)
            found |= {"low": max(0.0, y.mean() - half), "high": min(1.0, y.mean() + half)}
        return found

    def expected(self, holdout: bool) -> dict:
        interval = rate_interval(self.accounts)
        expected = {
            "impressions": self.impressions,
            "goal": {
                "converted": self.converted,
                "decided": self.decided,
                "pending": self.pending,
                "rate": self.converted / self.decided if self.decided else None,
                "low": interval[0] if interval else None,
                "high": interval[1] if interval else None,
                "interval": "fixedHorizon",
                "accounts": len(self.accounts),
                "notEnoughData": interval is None,
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
            "triggered": self.triggered_expected(),
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
        if variant != "h":
            # The trigger: the tip became displayable (issue #46); a quarter of the apps never draw it.
            entries.append({"type": "eligibility", "at": start})
            if rng.random() < 0.25:
                if rng.random() < 0.5:
                    entries.append({"type": "donation", "at": start + rng.randrange(60, 20 * 3600)})
                entries.sort(key=lambda e: e["at"])
                for cursor, entry in enumerate(entries, 1):
                    entry["cursor"] = cursor
                accounts[f"user-{index:02d}"] = (variant, entries)
                continue
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
        entries.sort(key=lambda e: (e["at"], e["type"] != "eligibility"))
        for cursor, entry in enumerate(entries, 1):
            entry["cursor"] = cursor
        accounts[f"user-{index:02d}"] = (variant, entries)
    return accounts


def expected_report(accounts, now: float, cuped: bool = False) -> dict:
    overall = Pool()
    variants = {name: Pool() for name in "abh"}
    for variant, entries in accounts.values():
        goals = [e for e in entries if e["type"] == "donation"]
        shown = [e for e in entries if e["type"] == "impression"]
        held = [e for e in entries if e["type"] == "exposure"]
        history_start = min(e["at"] for e in entries)
        overall.add(shown, goals, now, history_start)
        triggers = [e for e in entries if e["type"] == "eligibility"] + held[:1]
        outcome = primary(triggers[0] if triggers else None, goals, now)
        if variant != "h":
            overall.trigger(outcome)
        variants[variant].trigger(outcome)
        for name, pool in variants.items():
            if name == "h":
                pool.add(held if variant == "h" else [], goals, now, history_start, counterfactual=True)
            else:
                pool.add(shown if variant == name else [], goals, now, history_start)
    sets = {name: pool.expected(holdout=name == "h") for name, pool in variants.items()}

    def arm(*names):
        keys = ("triggered", "converted", "decided", "pending")
        found = {k: sum(sets[n]["triggered"][k] for n in names) for k in keys}
        return found | {"rate": found["converted"] / found["decided"] if found["decided"] else None}

    def brief(found):
        return {k: found[k] for k in ("converted", "decided", "rate")}

    def rate(pool):
        return {
            "converted": pool.converted,
            "decided": pool.decided,
            "rate": pool.converted / pool.decided if pool.decided else None,
        }

    # Each account sees one variant: the exposed arm is the accounts of a and b, the holdout's those of h.
    exposed = variants["a"].primary + variants["b"].primary
    exposed_pool = Pool()
    exposed_pool.converted = variants["a"].converted + variants["b"].converted
    exposed_pool.decided = variants["a"].decided + variants["b"].decided
    triggered = {name: variants[name].triggered for name in "abh"}
    weights = dict.fromkeys("abh", 1.0)
    b_vs_a = per_impression(variants["b"].accounts, variants["a"].accounts, ("variant", "against"))
    lift_per = per_impression(
        variants["a"].accounts + variants["b"].accounts, variants["h"].accounts, ("exposed", "holdout")
    )
    return {
        "accounts": len(accounts),
        "historyStart": min(min(e["at"] for e in entries) for _, entries in accounts.values()),
        "overall": overall.expected(holdout=False),
        "variants": sets,
        "comparisons": [
            {"variant": "b", "against": "a", "variantRate": brief(arm("b")), "againstRate": brief(arm("a"))}
            | difference(variants["b"].primary, variants["a"].primary, ("variant", "against"), cuped)
            | {
                "perImpression": b_vs_a | {"variantRate": rate(variants["b"]), "againstRate": rate(variants["a"])},
                "srm": chi_square({"b": triggered["b"], "a": triggered["a"]}, weights),
            }
        ],
        "lift": {"metric": "converted", "exposed": arm("a", "b"), "holdout": arm("h")}
        | difference(exposed, variants["h"].primary, ("exposed", "holdout"), cuped)
        | {
            "perImpression": lift_per
            | {
                "exposedRate": rate(exposed_pool),
                "holdoutRate": rate(variants["h"]),
            },
            "srm": chi_square(triggered, weights),
        },
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
            | ({"status": "available", "shouldDisplay": True} if e["type"] == "eligibility" else {})
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
            accounts = build_accounts(now, 300)
            await import_accounts(admin, accounts, now)

            report = await admin.call("metrics/get", {})
            expected = expected_report(accounts, report["now"])
            assert report["now"] >= now
            assert report["accounts"] == expected["accounts"] == 300
            assert_close(report["historyStart"], expected["historyStart"], "historyStart")
            [tip] = report["tips"]
            assert tip["tipId"] == "search.tip"
            assert_close(tip["overall"], expected["overall"], "overall")
            assert [v["variant"] for v in tip["variants"]] == ["a", "b", "h"]
            for pooled in tip["variants"]:
                assert_close(pooled, expected["variants"][pooled["variant"]], f"variants.{pooled['variant']}")
            assert_close(tip["comparisons"], expected["comparisons"], "comparisons")
            assert_close(tip["lift"], expected["lift"], "lift")
            # 100 accounts a variant: every interval is there, the account being the unit.
            assert not tip["lift"]["notEnoughData"] and not tip["comparisons"][0]["notEnoughData"]
            assert report["method"]["unit"] == "account" and report["method"]["cuped"] is None

            # CUPED (issue #38) over the same pool: the lift adjusted for the goal donations before exposure.
            adjusted = await admin.call("metrics/get", {"cuped": True})
            with_cuped = expected_report(accounts, adjusted["now"], cuped=True)
            assert_close(adjusted["tips"][0]["lift"], with_cuped["lift"], "lift with CUPED")
            assert_close(adjusted["tips"][0]["comparisons"], with_cuped["comparisons"], "comparisons with CUPED")
            assert adjusted["tips"][0]["lift"]["cuped"]["varianceReduction"] > 0
            # The samples are the accounts': as many as accounts that saw the tip and then used search.
            assert tip["overall"]["timeToGoal"]["samples"] + tip["overall"]["timeToGoal"]["open"] == sum(
                1 for v, entries in accounts.values() if v != "h" and any(e["type"] == "impression" for e in entries)
            )
            # Every arm triggered alike: the accounts whose app never drew the tip are in the tip arm too.
            assert tip["lift"]["exposed"]["triggered"] == 200 and tip["lift"]["holdout"]["triggered"] == 100
            assert not tip["lift"]["srm"]["flagged"] and report["method"]["trigger"] == "firstDisplayable"

            # `tipsd metrics` with the admin token shows the same, pooled; with --account, one account's.
            table = subprocess.run(
                [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            assert table.returncode == 0, table.stderr
            assert table.stdout.startswith("across 300 accounts"), table.stdout
            assert "always valid 95%" in table.stdout and "fixed horizon" in table.stdout, table.stdout
            assert "search.tip: b vs a: " in table.stdout and "search.tip: lift against the holdout: " in table.stdout
            as_json = subprocess.run(
                [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file), "--json"],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            pooled = json.loads(as_json.stdout)
            assert pooled["accounts"] == 300 and pooled["tips"][0]["overall"]["goal"] == tip["overall"]["goal"]
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


def test_live_holdout_exposures_are_stored_and_the_fleet_lift_uses_every_account(tmp_path):
    """Users signed in to hosted nodes (no import): each held-out account's counterfactual exposure is stored in
    PostgreSQL with its instant — a second node that loads the account says the exposure opened when it did on the
    first, not at its load — and the admin's fleet-wide lift counts every account of both arms."""
    world = Hosted()
    try:
        catalog = tmp_path / "catalog.json"
        catalog.write_text(json.dumps(CATALOG))
        first = world.node("live-a", catalog=catalog)
        second = world.node("live-b", catalog=catalog)

        async def body():
            held, shown = [], []
            for index in range(24):
                account = f"live-{index:02d}"
                user = await Session.open(first.socket_path, world.token(account))
                await user.call("events/donate", {"id": "search.opened"})
                state = (await user.call("tips/status", {"ids": ["search.tip"]}))["tips"][0]
                if state.get("variant") == "h":
                    held.append(account)
                else:
                    assert state["shouldDisplay"], state
                    await user.call("tips/displayed", {"id": "search.tip", "duration": 2})
                    shown.append(account)
                await user.call("events/donate", {"id": "search.used"})  # the goal, right after: converted
                await user.close()
            assert held and shown, (held, shown)
            admin_a = await Session.open(first.socket_path, ADMIN_TOKEN)
            admin_b = await Session.open(second.socket_path, ADMIN_TOKEN)
            await asyncio.sleep(1.1)  # the second node would open its own exposure a second later
            for account in held:
                explained = [
                    await admin.call("tips/explain", {"account": account, "id": "search.tip"})
                    for admin in (admin_a, admin_b)
                ]
                since = [line for e in explained for line in e["lines"] if "counterfactual exposure since" in line]
                assert len(since) == 2 and since[0] == since[1], (account, since)
            report = await admin_b.call("metrics/get", {})
            lift = report["tips"][0]["lift"]
            assert lift["holdout"]["decided"] == len(held) and lift["holdout"]["converted"] == len(held), lift
            assert lift["exposed"]["decided"] == len(shown) and lift["exposed"]["converted"] == len(shown), lift
            assert lift["sample"]["holdout"] == len(held) and lift["sample"]["exposed"] == len(shown), lift
            await admin_a.close()
            await admin_b.close()

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
        # 9 accounts: the counts, and "not enough data yet" with the sample instead of an interval (issue #38).
        assert "b vs a" in card and "not enough data yet" in card and "accounts" in card, card
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


def test_a_sample_ratio_mismatch_replaces_the_lift_with_a_warning(tmp_path, browser):
    """Issue #46: equal weights, but the holdout's triggered accounts a tenth of each variant's (a broken trigger):
    metrics/get flags the sample ratio, and `tipsd metrics` and the inspector show a warning instead of the lift; the
    comparison of the two balanced variants keeps its verdict."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(CATALOG))
    world = Hosted()
    try:
        node = world.node("skewed", catalog=catalog)
        built = build_accounts(time.time(), 150)
        held = [name for name, (variant, _) in built.items() if variant == "h"]
        accounts = {name: value for name, value in built.items() if name not in held[5:]}

        async def setup():
            admin = await Session.open(node.socket_path, ADMIN_TOKEN)
            await import_accounts(admin, accounts, time.time())
            report = await admin.call("metrics/get", {})
            await admin.close()
            return report

        report = run(setup())
        tip = report["tips"][0]
        srm = tip["lift"]["srm"]
        assert srm["observed"] == {"a": 50, "b": 50, "h": 5} and srm["flagged"], srm
        # χ² = (15² + 15² + 30²) / 35 on 2 degrees of freedom: p = e^(−χ²/2).
        assert abs(srm["chiSquare"] - 1350 / 35) < 1e-5 and abs(srm["pValue"] - math.exp(-1350 / 70)) < 1e-12
        assert not tip["comparisons"][0]["srm"]["flagged"]
        table = subprocess.run(
            [tipsd_bin(), "metrics", "--socket", node.socket_path, "--token-file", str(node.token_file)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert table.returncode == 0, table.stderr
        assert "search.tip: lift against the holdout: sample ratio mismatch — triggered accounts a 50, b 50, h 5" in (
            table.stdout
        ), table.stdout
        assert "search.tip: b vs a: sample ratio" not in table.stdout, table.stdout
        browser.get(f"http://127.0.0.1:{node.port}/#token={ADMIN_TOKEN}")
        wait(browser, lambda d: "across 105 accounts" in (cell(d, "#metrics-note") or ""), "the fleet's metrics")
        card = cell(browser, '[data-metrics="search.tip"]')
        assert "lift vs holdout ⚠ sample ratio mismatch" in card and "no verdict" in card, card
    finally:
        world.close()


if __name__ == "__main__":
    pytest.main([__file__])
