#!/usr/bin/env bash
# Builds the libFuzzer targets outside the Swift package (so `swift build` never links -sanitize=fuzzer):
# each module a harness needs is compiled from Sources/ into a static library with coverage instrumentation,
# then each harness links against them.
#
#   Fuzz/build.sh [TARGET...]     targets: framer_newline framer_content_length jsonrpc json rule catalog jwt jwks xliff
#   FUZZ_BUILD_DIR (default .build/fuzz)  where libraries and fuzzers go
#   FUZZ_SANITIZERS (default fuzzer,address)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${FUZZ_BUILD_DIR:-$ROOT/.build/fuzz}"
SAN="${FUZZ_SANITIZERS:-fuzzer,address}"
SWIFTC="${SWIFTC:-swiftc}"
mkdir -p "$OUT"
ALL=(framer_newline framer_content_length jsonrpc json rule catalog jwt jwks xliff)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

COMMON=(-swift-version 6 -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault
  -parse-as-library -O -g -sanitize="$SAN" -I "$OUT" -L "$OUT")

# Modules are rebuilt only when one of their sources is newer than the library.
module() {
  local name="$1"; shift
  local sources
  mapfile -t sources < <(find "$ROOT/Sources/$name" -name '*.swift' | sort)
  local lib="$OUT/lib$name.a"
  if [ -f "$lib" ] && [ -z "$(find "${sources[@]}" -newer "$lib" 2>/dev/null)" ]; then return; fi
  echo "fuzz: module $name"
  "$SWIFTC" "${COMMON[@]}" -module-name "$name" -emit-module -emit-module-path "$OUT/$name.swiftmodule" \
    -static -emit-library -o "$lib" "$@" "${sources[@]}"
}

harness() {
  local target="$1"; shift
  echo "fuzz: harness $target"
  # (gold's "Cannot export local symbol __asan_*" warnings are harmless and filtered.)
  "$SWIFTC" "${COMMON[@]}" -module-name "Fuzz_$target" -o "$OUT/fuzz-$target" "$ROOT/Fuzz/harness/Common.swift" "$@" \
    2> >(grep -v "Cannot export local symbol" >&2)
}

module TipsJSON
for target in "${TARGETS[@]}"; do
  case "$target" in
    framer_newline)
      module TipsFraming
      harness "$target" "$ROOT/Fuzz/harness/FramerHarness.swift" "$ROOT/Tests/TipsTestSupport/FramerOracle.swift" \
        -lTipsFraming ;;
    framer_content_length)
      module TipsFraming
      harness "$target" -D FRAMING_CONTENT_LENGTH "$ROOT/Fuzz/harness/FramerHarness.swift" \
        "$ROOT/Tests/TipsTestSupport/FramerOracle.swift" -lTipsFraming ;;
    json)
      harness "$target" "$ROOT/Fuzz/harness/JSONHarness.swift" -lTipsJSON ;;
    jsonrpc)
      module TipsEngine
      module TipsProtocol
      harness "$target" "$ROOT/Fuzz/harness/JSONRPCHarness.swift" -lTipsProtocol -lTipsEngine -lTipsJSON ;;
    rule)
      module TipsEngine
      harness "$target" "$ROOT/Fuzz/harness/RuleHarness.swift" -lTipsEngine -lTipsJSON ;;
    catalog)
      module TipsEngine
      module TipsSystem
      module TipsCatalog
      harness "$target" "$ROOT/Fuzz/harness/CatalogHarness.swift" -lTipsCatalog -lTipsSystem -lTipsEngine -lTipsJSON ;;
    jwt | jwks)
      # TipsAuth calls OpenSSL's libcrypto through the COpenSSL module map; the oracle is shared with TipsAuthTests.
      module TipsEngine
      module TipsSystem
      module TipsAuth -I "$ROOT/Sources/COpenSSL"
      harness_file=JWTHarness.swift
      [ "$target" = jwks ] && harness_file=JWKSHarness.swift
      harness "$target" -I "$ROOT/Sources/COpenSSL" "$ROOT/Fuzz/harness/$harness_file" \
        "$ROOT/Tests/TipsAuthTests/AuthFuzzOracle.swift" -lTipsAuth -lTipsSystem -lTipsEngine -lTipsJSON -lcrypto ;;
    xliff)
      module TipsEngine
      module TipsSystem
      module TipsCatalog
      harness "$target" "$ROOT/Fuzz/harness/XLIFFHarness.swift" -lTipsCatalog -lTipsSystem -lTipsEngine -lTipsJSON ;;
    *) echo "fuzz: unknown target $target (known: ${ALL[*]})" >&2; exit 2 ;;
  esac
done
