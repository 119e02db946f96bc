#!/usr/bin/env python3
"""Issue #38: do `metrics/get`'s intervals mean what they say? A simulation through the metrics module itself.

Simulated experiments are run through TipsMetrics' fleet pooling (`tipsd-metrics-pool`, Tests/MetricsPool: the same
`FleetMetrics` the hosted admin's `metrics/get` uses, each account's history computed on its own by `Metrics`),
and the figures it reports are judged here:

- each experiment randomizes ACCOUNTS (default 600) 50/50 to the tip (variant `a`) or the holdout (`h`); each account
  has 1–50 impressions (counterfactual ones for the holdout), 26 h apart so each has its own 24 h goal window, a
  conversion propensity p ~ 0.6·Beta(2, 5) of its own (so one account's impressions are correlated: the clustering
  the old impression-level intervals ignored) plus the true lift for the tip's accounts, and a pre-exposure covariate
  (goal donations in the 7 days before its first exposure, Poisson with mean 10·p) for CUPED;
- accounts enrol over DAYS (14) days, each arriving with its whole history, and the pool is looked at after every
  day: "did the interval exclude 0?" at any look is a false positive under a true lift of 0;
- the true lift of the ratio metric (Σ converted / Σ decided per arm) is exactly `lift`: 0, or 0.03.

Printed side by side: the coverage of the 95% intervals looked at once (the last day), and the false-positive rate
with a look every day, for the account-level fixed-horizon interval, the always-valid one (asymptotic confidence
sequence), the CUPED-adjusted ones, and today's impression-level interval (Newcombe's, recomputed here from the
reported counts as the daemon computed it before issue #38).

Usage: stats_simulation.py [--experiments 1000] [--accounts 600] [--days 14] [--minimum 100] [--seed 38]
                           [--check full|small|none]
`make stats` runs 1,000 experiments per scenario with the full checks; protocol/tests/test_statistics.py a small size
with looser bounds (binomial noise).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
Z = 1.959963984540054
DAY = 86_400
T0 = 1_000_000_000
NOW = T0 + 400 * DAY  # every goal window has closed: nothing pending


def pool_binary() -> str:
    configured = os.environ.get("TIPSD_METRICS_POOL")
    if configured:
        return configured
    # The debug build is the one `make test` keeps current (`make stats` names its release build).
    candidate = ROOT / ".build" / "debug" / "tipsd-metrics-pool"
    if candidate.exists():
        return str(candidate)
    sys.exit("no tipsd-metrics-pool: run swift build (or set TIPSD_METRICS_POOL)")


# ─── today's impression-level interval (Newcombe's hybrid score, from Wilson's), for comparison ─────────────────


def wilson(converted: int, decided: int) -> tuple[float, float]:
    p, n, z2 = converted / decided, decided, Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(a: tuple[int, int], b: tuple[int, int]) -> tuple[float, float]:
    (l1, u1), (l2, u2) = wilson(*a), wilson(*b)
    p1, p2 = a[0] / a[1], b[0] / b[1]
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


# ─── one experiment's accounts ─────────────────────────────────────────────────────────────────────────────────────


def experiment_lines(rng: np.random.Generator, accounts: int, days: int, lift: float) -> list[list[str]]:
    """The account lines of one experiment, grouped by the day the account enrols."""
    tip_arm = rng.random(accounts) < 0.5
    impressions = rng.integers(1, 51, accounts)
    propensity = 0.6 * rng.beta(2, 5, accounts)
    rate = propensity + lift * tip_arm
    day = rng.integers(0, days, accounts)
    first = T0 + day * DAY + rng.integers(0, 20 * 3600, accounts)
    pre = rng.poisson(10 * propensity)
    by_day: list[list[str]] = [[] for _ in range(days)]
    for i in range(accounts):
        shown = first[i] + np.arange(impressions[i]) * (26 * 3600)
        converted = rng.random(impressions[i]) < rate[i]
        goals = np.concatenate(
            [first[i] - rng.integers(60, 7 * DAY, pre[i]), shown[converted] + 3600]  # before exposure; 1 h after
        )
        variant = "a" if tip_arm[i] else "h"
        listed = ",".join(map(str, shown.tolist())), ",".join(map(str, goals.tolist()))
        by_day[day[i]].append(
            f'{{"account":{{"variant":"{variant}","impressions":[{listed[0]}],"goals":[{listed[1]}]}}}}'
        )
    return by_day


# ─── running a scenario through the pool ──────────────────────────────────────────────────────────────────────────


def run_scenario(
    lift: float, experiments: int, accounts: int, days: int, seed: int, minimum: int = 100
) -> list[list[dict]]:
    """Each experiment's `lift` member as reported after each day."""
    rng = np.random.default_rng([seed, int(round(lift * 10_000))])
    process = subprocess.Popen(
        [pool_binary()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1 << 20
    )
    pool = json.dumps(
        {"pool": {"variants": ["a", "h"], "holdouts": ["h"], "now": NOW, "cuped": True, "minimumAccounts": minimum}}
    )

    def feed() -> None:
        for _ in range(experiments):
            lines = [pool]
            for accounts_of_day in experiment_lines(rng, accounts, days, lift):
                lines += accounts_of_day
                lines.append('{"report":true}')
            process.stdin.write("\n".join(lines) + "\n")
        process.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    looks: list[list[dict]] = []
    for _ in range(experiments):
        looks.append([json.loads(process.stdout.readline())["tips"][0]["lift"] for _ in range(days)])
    writer.join()
    assert process.wait() == 0
    return looks


# ─── judging ─────────────────────────────────────────────────────────────────────────────────────────────────────


def intervals(lift: dict) -> dict[str, tuple[float, float] | None]:
    """The intervals one look reported (None: not enough data yet), and the impression-level one recomputed."""
    exposed, holdout = lift["exposed"], lift["holdout"]
    impression = None
    if exposed["decided"] and holdout["decided"]:
        impression = newcombe((exposed["converted"], exposed["decided"]), (holdout["converted"], holdout["decided"]))
    cuped = lift["cuped"]
    return {
        "fixed horizon (account)": (lift["fixedHorizon"]["low"], lift["fixedHorizon"]["high"])
        if lift["fixedHorizon"]
        else None,
        "always valid (account)": (lift["low"], lift["high"]) if lift["low"] is not None else None,
        "CUPED fixed horizon": (cuped["fixedHorizon"]["low"], cuped["fixedHorizon"]["high"]) if cuped else None,
        "CUPED always valid": (cuped["low"], cuped["high"]) if cuped else None,
        "impression level (before #38)": impression,
    }


def judge(looks: list[list[dict]], lift: float) -> dict:
    kinds = list(intervals(looks[0][-1]))
    covered = dict.fromkeys(kinds, 0)
    missed_any_day = dict.fromkeys(kinds, 0)
    excluded_zero_last = dict.fromkeys(kinds, 0)
    reductions = []
    for experiment in looks:
        last = intervals(experiment[-1])
        for kind in kinds:
            bounds = last[kind]
            covered[kind] += bounds is not None and bounds[0] <= lift <= bounds[1]
            excluded_zero_last[kind] += bounds is not None and not bounds[0] <= 0 <= bounds[1]
        for kind in kinds:
            missed_any_day[kind] += any(
                (b := intervals(look)[kind]) is not None and not b[0] <= lift <= b[1] for look in experiment
            )
        if experiment[-1]["cuped"]:
            reductions.append(experiment[-1]["cuped"]["varianceReduction"])
    n = len(looks)
    first_look = [next((d + 1 for d, look in enumerate(e) if not look["notEnoughData"]), None) for e in looks]
    return {
        "experiments": n,
        "coverage": {k: covered[k] / n for k in kinds},
        "missed on some day": {k: missed_any_day[k] / n for k in kinds},
        "excludes 0 at the end": {k: excluded_zero_last[k] / n for k in kinds},
        "variance reduction": sum(reductions) / len(reductions) if reductions else None,
        "accounts per arm at the end": (
            sum(e[-1]["sample"]["exposed"] for e in looks) / n,
            sum(e[-1]["sample"]["holdout"] for e in looks) / n,
        ),
        "first day with an interval": sorted(d for d in first_look if d is not None)[n // 2] if n else None,
    }


def report(results: dict[float, dict], seconds: float) -> str:
    out = []
    kinds = list(next(iter(results.values()))["coverage"])
    for lift, r in results.items():
        out.append(
            f"true lift {lift:+.2f}: {r['experiments']} experiments, accounts per arm at the end "
            f"{r['accounts per arm at the end'][0]:.0f} / {r['accounts per arm at the end'][1]:.0f}, "
            f"first interval on day {r['first day with an interval']} (median), "
            f"CUPED variance reduction {r['variance reduction']:.1%}"
        )
        label = "false positives, looked at daily" if lift == 0 else "missed the true lift on some day"
        power = "" if lift == 0 else "   excludes 0 at the end"
        out.append(f"  {'interval':32} {'coverage, looked at once':>26} {label:>34}{power}")
        for kind in kinds:
            line = f"  {kind:32} {r['coverage'][kind]:>26.1%} {r['missed on some day'][kind]:>34.1%}"
            if lift != 0:
                line += f"   {r['excludes 0 at the end'][kind]:>22.1%}"
            out.append(line)
    out.append(f"({seconds:.1f} s)")
    return "\n".join(out)


def check(results: dict[float, dict], size: str) -> list[str]:
    """What must hold: full size, the issue's bounds; small size, bounds that binomial noise at ~100 experiments
    cannot cross by chance (about 3 standard errors) yet a wrong method would."""
    failures = []
    coverage_band = (0.94, 0.96) if size == "full" else (0.88, 0.995)
    av_limit = 0.05 if size == "full" else 0.08
    for lift, r in results.items():
        fixed = r["coverage"]["fixed horizon (account)"]
        if not coverage_band[0] <= fixed <= coverage_band[1]:
            failures.append(f"lift {lift}: fixed-horizon coverage {fixed:.1%} outside {coverage_band}")
        always = r["missed on some day"]["always valid (account)"]
        if always > av_limit:
            failures.append(f"lift {lift}: always-valid missed on some day in {always:.1%} > {av_limit:.0%}")
    null = results[0.0]["missed on some day"]
    if null["impression level (before #38)"] <= 0.05:
        failures.append("the impression-level interval looked at daily was expected to exceed 5% false positives")
    if null["fixed horizon (account)"] <= null["always valid (account)"]:
        failures.append("looked at daily, the fixed-horizon interval should err more often than the always-valid one")
    return failures


def simulate(
    experiments: int, accounts: int = 600, days: int = 14, seed: int = 38, minimum: int = 100
) -> tuple[dict, float]:
    started = time.monotonic()
    results: dict[float, dict] = {}
    threads = []

    def one(lift: float) -> None:
        results[lift] = judge(run_scenario(lift, experiments, accounts, days, seed, minimum), lift)

    for lift in (0.0, 0.03):
        threads.append(threading.Thread(target=one, args=(lift,)))
        threads[-1].start()
    for thread in threads:
        thread.join()
    return {lift: results[lift] for lift in (0.0, 0.03)}, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--accounts", type=int, default=600)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--minimum", type=int, default=100, help="accounts a side before an interval")
    parser.add_argument("--check", choices=("full", "small", "none"), default="full")
    args = parser.parse_args()
    results, seconds = simulate(args.experiments, args.accounts, args.days, args.seed, args.minimum)
    print(report(results, seconds))
    failures = check(results, args.check) if args.check != "none" else []
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
