#!/usr/bin/env bash
# Builds the libFuzzer targets outside the Swift package (so `swift build` never links -sanitize=fuzzer): each
# module a harness needs is compiled from its sources into a static library with coverage instrumentation, then each
# harness links against them.
#
#   Fuzz/build.sh [TARGET...]     every target declared in Fuzz/harness/*.swift when none is named
#   Fuzz/build.sh --list          the declared targets, one per line
#   FUZZ_BUILD_DIR (default .build/fuzz)  where libraries and fuzzers go
#   FUZZ_SANITIZERS (default fuzzer,address)
#   FUZZ_OPTIMIZE (default -O)    e.g. -Onone for a quicker build (the smoke run in `make test` uses its own directory)
#
# Nothing here names a module. A harness declares its targets and any extra sources in its first lines:
#   // fuzz-target: NAME [SWIFTC FLAGS...]      (one line per target built from this file)
#   // fuzz-source: PATH...                     (sources compiled in too, e.g. an oracle shared with a test suite)
# and the modules come from the `import`s of the harness and its sources, closed over the package's own dependency
# graph (`swift package dump-package`, read by Fuzz/graph.py) and built dependencies first. System-library targets
# (module maps under Sources/C*) are passed with -I and linked through pkg-config.
#
# A module is rebuilt when its sources, its flags, its source list or a dependency changed; a fuzzer when its sources
# or a library it links changed. A target whose harness or modules fail to compile is named
# (`fuzz: target NAME does not build`) and the script fails after trying the others.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
OUT="${FUZZ_BUILD_DIR:-$ROOT/.build/fuzz}"
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
SAN="${FUZZ_SANITIZERS:-fuzzer,address}"
OPTIMIZE="${FUZZ_OPTIMIZE:--O}"
SWIFTC="${SWIFTC:-swiftc}"
SWIFT="${SWIFT:-swift}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$OUT"

declared="$("$PYTHON" Fuzz/graph.py targets Fuzz/harness)" || exit 2
[ -n "$declared" ] || { echo "fuzz: no target declared in Fuzz/harness/*.swift" >&2; exit 2; }
mapfile -t DECLARED <<<"$declared"
declare -A TARGET_LINE=()
ALL=()
for line in "${DECLARED[@]}"; do
  name="${line%%|*}"
  TARGET_LINE[$name]="$line"
  ALL+=("$name")
done
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${ALL[@]}"
  exit 0
fi
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")
for target in "${TARGETS[@]}"; do
  [ -n "${TARGET_LINE[$target]:-}" ] || { echo "fuzz: unknown target $target (known: ${ALL[*]})" >&2; exit 2; }
done

# The package's graph, as SwiftPM reads Package.swift.
PACKAGE_JSON="$OUT/package.json"
if [ ! -s "$PACKAGE_JSON" ] || [ Package.swift -nt "$PACKAGE_JSON" ]; then
  if ! "$SWIFT" package dump-package >"$PACKAGE_JSON.tmp"; then
    echo "fuzz: swift package dump-package failed" >&2
    exit 1
  fi
  mv "$PACKAGE_JSON.tmp" "$PACKAGE_JSON"
fi

# -package-name: modules share `package` declarations (TipsSync's PGConnection, say), as SwiftPM builds them.
COMMON=(-parse-as-library "$OPTIMIZE" -g -sanitize="$SAN" -package-name tipsd -I "$OUT" -L "$OUT")
declare -A STATUS=()   # Swift module -> ok | failed (each is tried once per run)
declare -A KIND=() DEPS=() CFLAGS=() LIBS=()

# "fuzz: WHAT took N s" since $2 (an $EPOCHREALTIME).
elapsed() {
  LC_ALL=C awk -v a="$2" -v b="$EPOCHREALTIME" -v what="$1" 'BEGIN { printf "fuzz: %s took %.1f s\n", what, b - a }'
}

# Whether $1 is missing, or older than any of the other files given.
stale() {
  local product="$1"; shift
  [ -e "$product" ] || return 0
  [ $# -eq 0 ] && return 1
  [ -n "$(find "$@" -newer "$product" -print -quit 2>/dev/null)" ]
}

# The compiler flags for the system-library targets named: their module maps, and pkg-config's cflags.
system_flags() {
  local name
  for name in "$@"; do
    # shellcheck disable=SC2086
    printf '%s\n' ${CFLAGS[$name]}
  done
}

# A Swift module: $1 name, $2 path, $3 its flags, $4 the system-library targets below it.
build_module() {
  local name="$1" path="$2" flags="$3" systems="$4"
  local lib="$OUT/lib$name.a" stamp="$OUT/$name.stamp" sources inputs dependency system
  mapfile -t sources < <(find "$path" -name '*.swift' | sort)
  # shellcheck disable=SC2086
  mapfile -t system < <(system_flags $systems)
  inputs="$(printf '%s\n' "$SWIFTC ${COMMON[*]} $flags ${system[*]}" "${sources[@]}")"
  local newer=("${sources[@]}")
  for dependency in ${DEPS[$name]}; do
    [ "${KIND[$dependency]}" = swift ] && newer+=("$OUT/lib$dependency.a")
  done
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ] && ! stale "$lib" "${newer[@]}"; then
    STATUS[$name]=ok
    return 0
  fi
  echo "fuzz: module $name"
  rm -f "$stamp"
  local started=$EPOCHREALTIME
  # (Warnings are the package build's business: only errors are shown here.)
  # shellcheck disable=SC2086  # $flags is a list of words
  if "$SWIFTC" "${COMMON[@]}" -suppress-warnings $flags "${system[@]}" -module-name "$name" -emit-module \
    -emit-module-path "$OUT/$name.swiftmodule" -static -emit-library -o "$lib" "${sources[@]}"; then
    printf '%s' "$inputs" >"$stamp"
    STATUS[$name]=ok
    elapsed "module $name" "$started"
  else
    echo "fuzz: module $name does not build" >&2
    STATUS[$name]=failed
  fi
}

# A target: its harness, extra sources and flags from its declaration; its modules from the graph.
build_target() {
  local target="$1" harness flags extra
  IFS='|' read -r _ harness flags extra <<<"${TARGET_LINE[$target]}"
  local files=("$harness") planned plan=() line kind name path pkg mflags deps systems
  # shellcheck disable=SC2206  # space-separated list of paths
  files+=($extra)
  if ! planned="$("$PYTHON" Fuzz/graph.py modules "$PACKAGE_JSON" "${files[@]}")"; then
    rm -f "$OUT/fuzz-$target" "$OUT/fuzz-$target.stamp"
    echo "fuzz: target $target does not build (its modules could not be worked out)" >&2
    return 1
  fi
  [ -z "$planned" ] || mapfile -t plan <<<"$planned"
  local libs=() links=() all_systems=() failed_module=""
  for line in "${plan[@]}"; do
    IFS='|' read -r kind name path pkg mflags deps systems <<<"$line"
    KIND[$name]="$kind"
    DEPS[$name]="$deps"
    [ "$kind" = system ] || continue
    all_systems+=("$name")
    if [ -z "${CFLAGS[$name]+set}" ]; then
      CFLAGS[$name]="-I $ROOT/$path"
      LIBS[$name]=""
      if [ "$pkg" != - ]; then
        if ! pkg-config --exists "$pkg"; then
          echo "fuzz: pkg-config does not know $pkg, which $name needs (make deps installs it)" >&2
        fi
        local cflag
        for cflag in $(pkg-config --cflags "$pkg"); do CFLAGS[$name]+=" -Xcc $cflag"; done
        LIBS[$name]="$(pkg-config --libs "$pkg")"
      fi
    fi
    # shellcheck disable=SC2206
    links+=(${LIBS[$name]})
  done
  for line in "${plan[@]}"; do
    IFS='|' read -r kind name path pkg mflags deps systems <<<"$line"
    [ "$kind" = swift ] || continue
    [ -n "${STATUS[$name]:-}" ] || build_module "$name" "$path" "$mflags" "$systems"
    if [ "${STATUS[$name]}" != ok ]; then
      failed_module="$name"
      break
    fi
    libs=("-l$name" "${libs[@]}")   # dependents before their dependencies, for the static link
  done
  if [ -n "$failed_module" ]; then
    rm -f "$OUT/fuzz-$target" "$OUT/fuzz-$target.stamp"
    echo "fuzz: target $target does not build (module $failed_module does not)" >&2
    return 1
  fi
  # What the modules' objects link against (their .autolink: Swift runtime libraries such as Synchronization, and the
  # C libraries of module maps), which a static archive does not carry to the link by itself.
  local flag system
  for line in "${libs[@]}"; do
    [ -f "$OUT/${line#-l}.autolink" ] || continue
    for flag in $(tr '\0' '\n' <"$OUT/${line#-l}.autolink"); do
      case " ${links[*]} " in *" $flag "*) ;; *) links+=("$flag") ;; esac
    done
  done
  mapfile -t system < <(system_flags "${all_systems[@]}")
  local binary="$OUT/fuzz-$target" stamp="$OUT/fuzz-$target.stamp" inputs newer=()
  inputs="$(printf '%s\n' "$SWIFTC ${COMMON[*]} $flags ${system[*]} ${libs[*]} ${links[*]}" Fuzz/harness/Common.swift \
    "${files[@]}")"
  for line in "${libs[@]}"; do newer+=("$OUT/lib${line#-l}.a"); done
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$inputs" ] \
    && ! stale "$binary" Fuzz/harness/Common.swift "${files[@]}" "${newer[@]}"; then
    return 0
  fi
  echo "fuzz: harness $target"
  rm -f "$stamp"
  local started=$EPOCHREALTIME
  # (gold's "Cannot export local symbol __asan_*" warnings are harmless and filtered.)
  # shellcheck disable=SC2086
  if "$SWIFTC" "${COMMON[@]}" "${system[@]}" $flags -module-name "Fuzz_$target" -o "$binary" \
    Fuzz/harness/Common.swift "${files[@]}" "${libs[@]}" "${links[@]}" \
    2> >(grep -v "Cannot export local symbol" >&2); then
    printf '%s' "$inputs" >"$stamp"
    elapsed "harness $target" "$started"
    return 0
  fi
  rm -f "$binary"
  echo "fuzz: target $target does not build" >&2
  return 1
}

broken=()
build_started=$EPOCHREALTIME
for target in "${TARGETS[@]}"; do
  build_target "$target" || broken+=("$target")
done
elapsed "the build" "$build_started"
if [ ${#broken[@]} -gt 0 ]; then
  echo "fuzz: ${#broken[@]} of ${#TARGETS[@]} targets do not build: ${broken[*]}" >&2
  exit 1
fi
