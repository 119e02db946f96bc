#!/usr/bin/env bash
# Builds clients/typescript with Debian's tsc and runs its node:test suites against the real daemon.
# The lead wires this into `make test`. Needs: node (>= 18), tsc (node-typescript), a built tipsd.
# TIPSD_BIN overrides the daemon path (default .build/debug/tipsd); integration tests fail, not skip,
# when it is missing or broken (TIPSD_REQUIRE=1; export TIPSD_REQUIRE=0 to allow skipping).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
ts="$here/typescript"

export TIPSD_BIN="${TIPSD_BIN:-$root/.build/debug/tipsd}"
export TIPSD_REQUIRE="${TIPSD_REQUIRE:-1}"

command -v node >/dev/null || { echo "run-tests-typescript: node is not installed" >&2; exit 1; }
TSC="${TSC:-$(command -v tsc || true)}"
[ -n "$TSC" ] || { echo "run-tests-typescript: tsc is not installed (apt-get install node-typescript)" >&2; exit 1; }

echo "clients/typescript: building with $("$TSC" --version)"
rm -rf "$ts/dist"
"$TSC" -p "$ts"

echo "clients/typescript: node --test (daemon: $TIPSD_BIN)"
cd "$root"
exec node --test clients/typescript/test/
