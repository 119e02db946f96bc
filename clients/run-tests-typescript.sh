#!/usr/bin/env bash
# Builds clients/typescript with Debian's tsc and runs its node:test suites against the real daemon.
# The lead wires this into `make test`. Needs: node (>= 18), tsc (node-typescript), a built tipsd.
# TIPSD_BIN overrides the daemon path (default .build/debug/tipsd); integration tests fail, not skip,
# when it is missing or broken (TIPSD_REQUIRE=1; export TIPSD_REQUIRE=0 to allow skipping).
# Issue #5: the client's traffic tap logs every message of the run ($TIPSD_TRAFFIC_LOG, a temp file), then
# clients/python/tests/traffic_check.py validates the daemon's replies and notifications against
# protocol/openrpc.json (needs python3 with jsonschema; TIPSD_OPENRPC=path checks another copy of the document;
# TIPSD_TRAFFIC_CHECK=0 skips the check). The log is kept when the check fails.
# Issue #11: also builds the browser ES modules (dist-browser/, tsconfig.browser.json) and, on Node 20, runs the
# tests with --experimental-websocket (in NODE_OPTIONS) so that Node's global WebSocket exists.
# Issue #23: test/hosted.integration.test.js runs a hosted tipsd against a private PostgreSQL, both started by
# test-support/hosted_node.py (python3 with PyJWT and cryptography: `make deps-pip`; PostgreSQL's server programs).
# Issue #17: TIPSD_TEST_TIMEOUT (seconds, default 30) is the hang guard of every wait in the tests; a test file
# that runs for more than ten times that is cancelled (node --test-timeout), so a hang cannot stall the run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
ts="$here/typescript"

export TIPSD_BIN="${TIPSD_BIN:-$root/.build/debug/tipsd}"
export TIPSD_REQUIRE="${TIPSD_REQUIRE:-1}"

command -v node >/dev/null || { echo "run-tests-typescript: node is not installed" >&2; exit 1; }
TSC="${TSC:-$(command -v tsc || true)}"
[ -n "$TSC" ] || { echo "run-tests-typescript: tsc is not installed (apt-get install node-typescript)" >&2; exit 1; }

echo "clients/typescript: building with $("$TSC" --version) (--strict)"
rm -rf "$ts/dist" "$ts/dist-browser" "$ts/dist-seed000"
"$TSC" -p "$ts" --strict
# Issue #11: the same sources as ES modules for browsers (no bundler); test/browser-build.test.mjs checks them.
"$TSC" -p "$ts/tsconfig.browser.json" --strict
printf '{"type": "module"}\n' > "$ts/dist-browser/package.json"
# Issue #29: seed 000's wrapper, caller and hooks (test-support/seed000) against the built client, with tsc --strict
# and an interface written from the seed's module declaration: an adapter that drifts from the native module's
# surface fails here. Their imports (expo-modules-core, react, expo-router: small stand-ins; @tipsd/client: this
# package) resolve from dist-seed000/node_modules; test/seed000.integration.test.js runs them.
"$TSC" -p "$ts/test-support/seed000" --strict
mkdir -p "$ts/dist-seed000/node_modules/@tipsd"
cp -R "$ts/test-support/seed000/stubs/." "$ts/dist-seed000/node_modules/"
ln -s ../../.. "$ts/dist-seed000/node_modules/@tipsd/client"
# Issue #23: the React Native example (examples/react-native: a signed-in user's client, the visibility store over
# useSyncExternalStore), type-checked with tsc --strict against the built client and small stand-ins for react,
# react-native and @react-native-firebase/auth (examples/react-native/stubs); nothing is emitted. Issue #37: its
# offline-first variant (offline.ts, OfflineApp.tsx: AsyncStorage as the client's storage) is checked with it.
"$TSC" -p "$ts/examples/react-native" --strict
export TSC

# Issue #11: the WebSocket tests use Node's global WebSocket (Node >= 22; Node 20.10+ behind a flag).
if ! node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null &&
  node --experimental-websocket -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null; then
  export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-websocket"
fi

# The Chromium test of the browser build runs whenever a Chromium is installed (`make test` installs Debian's);
# TIPSD_CHROMIUM picks another binary, TIPSD_CHROMIUM= (empty) skips it.
if [ -z "${TIPSD_CHROMIUM+set}" ]; then
  for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null; then export TIPSD_CHROMIUM="$(command -v "$candidate")"; break; fi
  done
fi

# The per-file hang guard, in ms: 10 x TIPSD_TEST_TIMEOUT (test-support/timing.js reads the same variable).
# node --test-timeout exists from Node 20.11; older Nodes run without the guard.
guard=()
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
  guard=("--test-timeout=$(awk -v s="${TIPSD_TEST_TIMEOUT:-30}" 'BEGIN { s += 0; if (s <= 0) s = 30; printf "%d", s * 10000 }')")
fi

cd "$root"
check=1
case "${TIPSD_TRAFFIC_CHECK:-1}" in 0|no|false|off) check=0 ;; esac
if [ "$check" = 0 ]; then
  echo "clients/typescript: node --test (daemon: $TIPSD_BIN)"
  exec node --test "${guard[@]}" clients/typescript/test/
fi
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c "import jsonschema, referencing" 2>/dev/null || {
  echo "run-tests-typescript: the traffic check needs $PYTHON with jsonschema >= 4.18 (pip install jsonschema; or TIPSD_TRAFFIC_CHECK=0)" >&2
  exit 1
}
log="$(mktemp "${TMPDIR:-/tmp}/tipsd-traffic-ts-XXXXXX.jsonl")"
export TIPSD_TRAFFIC_LOG="$log"
echo "clients/typescript: node --test (daemon: $TIPSD_BIN; traffic log: $log)"
status=0
node --test "${guard[@]}" clients/typescript/test/ || status=$?

require=()
[ "$TIPSD_REQUIRE" = 1 ] && require=(--require-traffic)
echo "clients/typescript: tipsd traffic vs protocol/openrpc.json:"
if "$PYTHON" clients/python/tests/traffic_check.py "${require[@]}" "$log"; then
  rm -f "$log"
else
  echo "clients/typescript: traffic check FAILED (log kept at $log)"
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
