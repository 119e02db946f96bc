#!/usr/bin/env python3
"""Issues #38 and #46: does `metrics/get`'s lift mean what it says? A simulation through the metrics module itself,
built so that it can fail.

Simulated experiments are run through TipsMetrics' fleet pooling (`tipsd-metrics-pool`, Tests/MetricsPool: the same
`FleetMetrics` the hosted admin's `metrics/get` uses, each account's history computed on its own by `Metrics`, as
stored up to the look's instant), and the figures it reports are judged here:

- each experiment randomizes ACCOUNTS to the tip (variant `a`) or the holdout (`h`), 50/50; accounts enrol over DAYS
  days (the first time the tip becomes displayable for them: the trigger), then come back for 1–8 sessions a day or
  so apart; the tip becomes displayable at each session (the holdout's counterfactual exposure), and the app draws it
  1–5 times a session — or never, for a quarter of the apps (`tips/displayed` only when drawn);
- impressions and goals accrue after enrolment, and the pool is looked at after every day with the clock at that
  instant: accounts enrolled that day are still pending (their goal window open);
- each account has a goal propensity p ~ 0.8·Beta(0.5, 2) per session (mean 0.16), a goal donated 0.5–20 h into the
  session when it happens, and CUPED's covariate, its goal donations in the 7 days before the trigger, Poisson(30·p);
- the null: both arms behave alike after the trigger; +3 points: the accounts whose app draws the tip get p + 0.04,
  so the primary metric's true lift (accounts that did the goal within 24 h of their first trigger, by assignment) is
  exactly +0.03 — the quarter that never sees the tip dilutes 0.04 to 0.03.

Printed, each against its bound (bounds from binomial noise at the run's size, printed too): the null lift's bias,
the fixed-horizon interval's coverage looked at once (the last day), the always-valid interval's false positives
looked at daily, its power at +3 points (a lower bound from the normal approximation at the last look), the
sample-ratio check's false alarms under correct assignment and its detection of a 55/45 split at 5,000 accounts, and
CUPED's variance reduction against the covariate's R² (numpy, 10⁶ draws). The secondary per-impression lift's bias
under the null is printed beside the primary's: the reason it is secondary.

Usage: stats_simulation.py [--experiments 400] [--accounts 7000] [--days 14] [--srm-experiments 20000]
                           [--seed N] [--check full|small|none]
Without --seed every run draws its own (printed, to reproduce a failure). `make stats` runs the full size;
protocol/tests/test_statistics.py a small one (the bounds follow the size).
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
from statistics import NormalDist

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DAY = 86_400
HOUR = 3_600
T0 = 1_000_000_000
ALPHA = 0.05
PLANNED = 1_000
LIFT = 0.03


def pool_binary() -> str:
    configured = os.environ.get("TIPSD_METRICS_POOL")
    if configured:
        return configured
    # The debug build is the one `make test` keeps current (`make stats` names its release build).
    candidate = ROOT / ".build" / "debug" / "tipsd-metrics-pool"
    if candidate.exists():
        return str(candidate)
    sys.exit("no tipsd-metrics-pool: run swift build (or set TIPSD_METRICS_POOL)")


# ─── one experiment's accounts ─────────────────────────────────────────────────────────────────────────────────────


def propensities(rng: np.random.Generator, n: int) -> np.ndarray:
    return 0.8 * rng.beta(0.5, 2, n)


def experiment_lines(rng: np.random.Generator, accounts: int, days: int, lift: float) -> list[str]:
    """The account lines of one experiment (each account's whole history; the pool cuts it at each look)."""
    tip_arm = rng.random(accounts) < 0.5
    p = propensities(rng, accounts)
    never = rng.random(accounts) < 0.25
    trigger = T0 + rng.integers(0, days, accounts) * DAY + rng.integers(0, 20 * HOUR, accounts)
    sessions = rng.integers(1, 9, accounts)
    pre = rng.poisson(30 * p)
    lines = []
    for i in range(accounts):
        starts = trigger[i] + np.concatenate([[0], np.cumsum(rng.integers(24 * HOUR, 30 * HOUR, sessions[i] - 1))])
        rate = p[i] + (lift if tip_arm[i] and not never[i] else 0.0) * (4 / 3)
        goals = [trigger[i] - rng.integers(60, 7 * DAY, pre[i])]
        happened = rng.random(sessions[i]) < rate
        goals.append(starts[happened] + rng.integers(HOUR // 2, 20 * HOUR, happened.sum()))
        impressions = []
        if tip_arm[i] and not never[i]:
            draws = rng.integers(1, 6, sessions[i])
            impressions = [int(s + k * 120) for s, d in zip(starts, draws, strict=True) for k in range(d)]
        variant = "a" if tip_arm[i] else "h"
        account = {
            "variant": variant,
            "displayable": starts.tolist(),
            "impressions": impressions,
            "goals": np.concatenate(goals).tolist(),
        }
        lines.append(json.dumps({"account": account}, separators=(",", ":")))
    return lines


# ─── running a scenario through the pool ──────────────────────────────────────────────────────────────────────────


def run_scenario(lift: float, experiments: int, accounts: int, days: int, seed: int) -> list[list[dict]]:
    """Each experiment's `lift` member as reported at the end of each day."""
    rng = np.random.default_rng([seed, int(round(lift * 10_000))])
    process = subprocess.Popen(
        [pool_binary()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1 << 20
    )
    pool = json.dumps({"pool": {"variants": ["a", "h"], "holdouts": ["h"], "cuped": True, "minimumAccounts": 100}})
    looks = [json.dumps({"report": {"now": T0 + (d + 1) * DAY}}) for d in range(days)]

    def feed() -> None:
        for _ in range(experiments):
            process.stdin.write("\n".join([pool, *experiment_lines(rng, accounts, days, lift), *looks]) + "\n")
        process.stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    found: list[list[dict]] = []
    for _ in range(experiments):
        found.append([json.loads(process.stdout.readline())["tips"][0]["lift"] for _ in range(days)])
    writer.join()
    assert process.wait() == 0
    return found


def sample_ratio_rates(experiments: int, accounts: int, seed: int) -> dict:
    """The sample-ratio check (the daemon's) on triggered-account counts: assignment 50/50 (false alarms), and 55/45
    (detection), `accounts` accounts each."""
    rng = np.random.default_rng([seed, 46])
    process = subprocess.Popen([pool_binary()], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = []
    for share in (0.5, 0.55):
        a = rng.binomial(accounts, share, experiments)
        lines += [json.dumps({"srm": {"observed": {"a": int(x), "h": int(accounts - x)}}}) for x in a]
    out, _ = process.communicate("\n".join(lines) + "\n")
    flagged = [json.loads(line)["flagged"] for line in out.splitlines()]
    return {"false alarms": np.mean(flagged[:experiments]), "detection": np.mean(flagged[experiments:])}


# ─── judging ─────────────────────────────────────────────────────────────────────────────────────────────────────


def always_valid_multiplier(total: int, alpha: float = ALPHA) -> float:
    """Waudby-Smith et al. (2024): σ̂ₜ √(2(tρ² + 1)/(t²ρ²) log(√(tρ² + 1)/α)) over σ̂ₜ/√t, ρ tuned at PLANNED."""
    rho2 = (-2 * math.log(ALPHA) + math.log(-2 * math.log(ALPHA) + 1)) / PLANNED
    t = total
    return math.sqrt(t) * math.sqrt(2 * (t * rho2 + 1) / (t * t * rho2) * math.log(math.sqrt(t * rho2 + 1) / alpha))


def excludes(bounds, value: float) -> bool:
    return bounds is not None and not bounds[0] <= value <= bounds[1]


def judge(looks: list[list[dict]], lift: float) -> dict:
    n = len(looks)
    last = [e[-1] for e in looks]
    fixed = [(x["fixedHorizon"]["low"], x["fixedHorizon"]["high"]) if x["fixedHorizon"] else None for x in last]

    def always(x):
        return (x["low"], x["high"]) if x["low"] is not None else None

    reductions = [x["cuped"]["varianceReduction"] for x in last if x["cuped"]]
    return {
        "experiments": n,
        "mean difference": float(np.mean([x["difference"] for x in last])),
        "sd difference": float(np.std([x["difference"] for x in last], ddof=1)),
        "mean per impression": float(np.mean([x["perImpression"]["difference"] for x in last])),
        "sd per impression": float(np.std([x["perImpression"]["difference"] for x in last], ddof=1)),
        "fixed-horizon coverage": sum(b is not None and b[0] <= lift <= b[1] for b in fixed) / n,
        "always valid missed on some day": sum(any(excludes(always(x), lift) for x in e) for e in looks) / n,
        "always valid excluded 0 on some day": sum(any(excludes(always(x), 0.0) for x in e) for e in looks) / n,
        "fixed horizon excluded 0 at the end": sum(excludes(b, 0.0) for b in fixed) / n,
        "fixed horizon missed on some day": sum(
            any(
                excludes((x["fixedHorizon"]["low"], x["fixedHorizon"]["high"]) if x["fixedHorizon"] else None, lift)
                for x in e
            )
            for e in looks
        )
        / n,
        "srm flagged": sum(x["srm"]["flagged"] for x in last) / n,
        "decided per arm": (
            np.mean([x["sample"]["exposed"] for x in last]),
            np.mean([x["sample"]["holdout"] for x in last]),
        ),
        "pending at the last look": np.mean([x["exposed"]["pending"] + x["holdout"]["pending"] for x in last]),
        "variance reduction": float(np.mean(reductions)) if reductions else 0.0,
    }


def cuped_theory(seed: int) -> float:
    """R² of the account's 0/1 outcome on its covariate within an arm (10⁶ draws): what CUPED can remove."""
    rng = np.random.default_rng([seed, 7])
    p = propensities(rng, 1_000_000)
    y = rng.random(p.size) < p
    x = rng.poisson(30 * p)
    return float(np.corrcoef(y, x)[0, 1] ** 2)


def bounds(
    results: dict, srm: dict, srm_experiments: int, theory: float, size: str
) -> list[tuple[str, float, str, bool]]:
    """(figure, value, bound, holds): each derived from the run's own size. At full size the issue's own bounds where
    binomial noise cannot cross them (the confidence sequence errs ~1% for its 5%, the χ² check 0.1% for its 0.2%); at
    a small size (make test) those plus 3–4 binomial standard errors, so a correct method passes whatever the seed."""
    null, effect = results[0.0], results[LIFT]
    n = null["experiments"]
    rows = []
    se_mean = null["sd difference"] / math.sqrt(n)
    k_bias = 3 if size == "full" else 4
    rows.append(
        (
            "null lift: mean difference (bias)",
            null["mean difference"],
            f"|·| ≤ {k_bias} SE = {k_bias * se_mean:.4f}",
            abs(null["mean difference"]) <= k_bias * se_mean,
        )
    )
    band = (3 if size == "full" else 4) * math.sqrt(0.95 * 0.05 / n)
    for lift, r in results.items():
        c = r["fixed-horizon coverage"]
        rows.append(
            (
                f"fixed-horizon coverage, looked at once (lift {lift:+.2f})",
                c,
                f"{0.95 - band:.3f} ≤ · ≤ {0.95 + band:.3f}",
                0.95 - band <= c <= 0.95 + band,
            )
        )
    fp = null["always valid excluded 0 on some day"]
    fp_bound = 0.05 if size == "full" else 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)
    rows.append(("always valid: false positives, looked at daily", fp, f"≤ {fp_bound:.3f}", fp <= fp_bound))
    # Power: at the last look alone, by the normal approximation with the arms' true variances p̄(1 − p̄) and their
    # decided accounts; looking daily can only add to it.
    mean_p = 0.8 * 0.5 / 2.5
    exposed, held = effect["decided per arm"]
    se = math.sqrt((mean_p + LIFT) * (1 - mean_p - LIFT) / exposed + mean_p * (1 - mean_p) / held)
    k = always_valid_multiplier(int(exposed + held))
    predicted = NormalDist().cdf(LIFT / se - k)
    floor = predicted - 3 * math.sqrt(max(predicted * (1 - predicted), 0.01) / n)
    power = effect["always valid excluded 0 on some day"]
    rows.append(
        (
            f"always valid: power at +3 points (predicted {predicted:.3f} at the last look)",
            power,
            f"≥ {floor:.3f}",
            power >= floor,
        )
    )
    m = srm_experiments
    alarm_bound = 0.002 if size == "full" else 0.001 + 4 * math.sqrt(0.001 / m)
    detect_bound = 0.99 if size == "full" else 0.99 - 4 * math.sqrt(0.99 * 0.01 / m)
    rows.append(
        (
            f"sample ratio: false alarms, 50/50 ({m} × 5,000 accounts)",
            srm["false alarms"],
            f"≤ {alarm_bound:.4f}",
            srm["false alarms"] <= alarm_bound,
        )
    )
    rows.append(
        (
            "sample ratio: detection of 55/45 at 5,000 accounts",
            srm["detection"],
            f"≥ {detect_bound:.4f}",
            srm["detection"] >= detect_bound,
        )
    )
    # CUPED removes about the covariate's R² of the outcome's variance: the mean reduction over the experiments within
    # 0.04 below it, and above it by no more than a sample R²'s upward bias.
    reduction = null["variance reduction"]
    above = 0.03 if size == "full" else 0.06  # a sample R² over a few hundred accounts runs high
    rows.append(
        (
            f"CUPED variance reduction (covariate R² {theory:.3f})",
            reduction,
            f"{theory - 0.04:.3f} ≤ · ≤ {theory + above:.3f}",
            theory - 0.04 <= reduction <= theory + above,
        )
    )
    return rows


def report(results: dict, rows, seconds: float, seed: int) -> str:
    out = [f"seed {seed}"]
    for lift, r in results.items():
        exposed, held = r["decided per arm"]
        out.append(
            f"true lift {lift:+.2f}: {r['experiments']} experiments; decided accounts per arm at the last look "
            f"{exposed:.0f} / {held:.0f}, {r['pending at the last look']:.0f} pending; lift {r['mean difference']:+.4f} "
            f"(sd {r['sd difference']:.4f}); per impression (secondary) {r['mean per impression']:+.4f} "
            f"(sd {r['sd per impression']:.4f}); fixed horizon looked at daily missed {r['fixed horizon missed on some day']:.1%}; "
            f"fixed horizon excluded 0 at the end {r['fixed horizon excluded 0 at the end']:.1%}; "
            f"sample ratio flagged {r['srm flagged']:.1%}"
        )
    out.append(f"  {'figure':64} {'value':>8}   bound")
    for name, value, bound, holds in rows:
        out.append(f"  {name:64} {value:>8.4f}   {bound}{'' if holds else '   FAILED'}")
    out.append(f"({seconds:.1f} s)")
    return "\n".join(out)


def simulate(
    experiments: int,
    accounts: int = 7_000,
    days: int = 14,
    srm_experiments: int = 20_000,
    seed: int | None = None,
    size: str = "full",
):
    seed = int(np.random.SeedSequence().entropy % (1 << 32)) if seed is None else seed
    started = time.monotonic()
    results: dict[float, dict] = {}
    threads = []

    def one(lift: float) -> None:
        results[lift] = judge(run_scenario(lift, experiments, accounts, days, seed), lift)

    for lift in (0.0, LIFT):
        threads.append(threading.Thread(target=one, args=(lift,)))
        threads[-1].start()
    srm = sample_ratio_rates(srm_experiments, 5_000, seed)
    for thread in threads:
        thread.join()
    results = {lift: results[lift] for lift in (0.0, LIFT)}
    rows = bounds(results, srm, srm_experiments, cuped_theory(seed), size)
    return results, rows, time.monotonic() - started, seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiments", type=int, default=400)
    parser.add_argument("--accounts", type=int, default=7_000)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--srm-experiments", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--check", choices=("full", "small", "none"), default="full")
    args = parser.parse_args()
    results, rows, seconds, seed = simulate(
        args.experiments, args.accounts, args.days, args.srm_experiments, args.seed, args.check
    )
    print(report(results, rows, seconds, seed))
    failures = [name for name, _, _, holds in rows if not holds] if args.check != "none" else []
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
