#!/usr/bin/env bash
# Install the Python client (with its pytest plugin) and run its suite
# against the real daemon (.build/debug/tipsd unless TIPSD_BIN is set); then
# ruff check and ruff format --check over the Python client and the Python tests.
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
# tests/test_hosted.py (issue #23) mints the app's tokens with PyJWT and starts PostgreSQL (protocol/tests/hosted.py).
"$PYTHON" -c "import jwt, cryptography" 2>/dev/null || pip_install "pyjwt[crypto]"
pip_install ./clients/python

if [ -z "${TIPSD_BIN:-}" ] && [ -x .build/debug/tipsd ]; then
  export TIPSD_BIN="$PWD/.build/debug/tipsd"
fi
status=0
"$PYTHON" -m pytest clients/python/tests -q "$@" || status=$?

# Issue #22: lint and format of the Python client and the Python test suites (settings: ruff.toml). One pinned
# version, since each ruff release may format a little differently; `ruff check --fix && ruff format` fixes a failure.
RUFF_VERSION=0.17.6
"$PYTHON" -m ruff --version 2>/dev/null | grep -qx "ruff $RUFF_VERSION" || pip_install "ruff==$RUFF_VERSION"
lint=(clients/python protocol/tests)
echo "ruff $RUFF_VERSION: check and format --check of ${lint[*]}"
"$PYTHON" -m ruff check --no-cache "${lint[@]}" || status=1
"$PYTHON" -m ruff format --no-cache --check "${lint[@]}" || status=1
exit "$status"
