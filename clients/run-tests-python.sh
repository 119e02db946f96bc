#!/usr/bin/env bash
# Install the Python client (with its pytest plugin) and run its suite
# against the real daemon (.build/debug/tipsd unless TIPSD_BIN is set).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

pip_install() {
  local out
  if out=$("$PYTHON" -m pip install -q "$@" 2>&1); then
    return 0
  fi
  if grep -q "externally-managed-environment" <<<"$out"; then
    "$PYTHON" -m pip install -q --break-system-packages "$@"
  else
    printf '%s\n' "$out" >&2
    return 1
  fi
}

"$PYTHON" -c "import pytest" 2>/dev/null || pip_install pytest
# The suite validates the daemon's traffic against protocol/openrpc.json (issue #5).
"$PYTHON" -c "import jsonschema, referencing" 2>/dev/null || pip_install "jsonschema>=4.18"
pip_install ./clients/python

if [ -z "${TIPSD_BIN:-}" ] && [ -x .build/debug/tipsd ]; then
  export TIPSD_BIN="$PWD/.build/debug/tipsd"
fi
exec "$PYTHON" -m pytest clients/python/tests -q "$@"
