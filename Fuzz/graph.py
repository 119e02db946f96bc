#!/usr/bin/env python3
"""The fuzz targets and the modules each needs, read from the harnesses and from the package's own graph.

  graph.py targets HARNESS_DIR
      one line per target: name, harness file, extra swiftc flags, extra sources (separated by `|`; lists space-separated)
      from the `// fuzz-target:` and `// fuzz-source:` lines at the top of each harness.
  graph.py modules PACKAGE_JSON FILE...
      the package targets FILE... import, with everything they depend on, dependencies first, one per line:
      kind (swift or system), name, path, pkg-config name (or -), swiftc flags, direct dependencies, the
      system-library targets below it (separated by `|`; lists space-separated).

PACKAGE_JSON is `swift package dump-package`'s output, so a module that gains an import needs no change here.
"""
import json
import os
import re
import sys

IMPORT = re.compile(
    r"^\s*(?:@[\w()]+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?(\w+)",
    re.M,
)


def fail(message):
    print(f"fuzz: {message}", file=sys.stderr)
    sys.exit(2)


def targets(harness_dir):
    seen = {}
    for name in sorted(os.listdir(harness_dir)):
        if not name.endswith(".swift"):
            continue
        path = os.path.join(harness_dir, name)
        declared, sources = [], []
        with open(path, encoding="utf-8") as f:
            for line in f:
                match = re.match(r"^//\s*fuzz-(target|source):\s*(.*?)\s*$", line)
                if not match:
                    continue
                if match.group(1) == "target":
                    words = match.group(2).split()
                    if not words:
                        fail(f"{path}: `// fuzz-target:` needs a name")
                    declared.append(words)
                else:
                    sources.extend(match.group(2).split())
        for words in declared:
            if words[0] in seen:
                fail(f"target {words[0]} is declared by {seen[words[0]]} and {path}")
            seen[words[0]] = path
            print("|".join([words[0], path, " ".join(words[1:]), " ".join(sources)]))


def dependency_names(target):
    names = []
    for dependency in target.get("dependencies", []):
        for kind in ("byName", "target"):
            if kind in dependency:
                names.append(dependency[kind][0])
        # Products of other packages: none (the package has no dependencies); ignored if one appears.
    return names


def swift_flags(package, target):
    versions = package.get("swiftLanguageVersions") or ["6"]
    flags = ["-swift-version", str(versions[-1])]
    for setting in target.get("settings", []):
        if setting.get("tool") != "swift":
            continue
        condition = setting.get("condition") or {}
        if condition.get("config"):
            continue
        platforms = [p.get("name") for p in condition.get("platformNames", [])] + list(condition.get("platforms", []))
        if platforms and "linux" not in platforms:
            continue
        kind = setting["kind"]
        if "enableUpcomingFeature" in kind:
            flags += ["-enable-upcoming-feature", kind["enableUpcomingFeature"]["_0"]]
        elif "enableExperimentalFeature" in kind:
            flags += ["-enable-experimental-feature", kind["enableExperimentalFeature"]["_0"]]
        elif "define" in kind:
            flags += ["-D", kind["define"]["_0"]]
        elif "unsafeFlags" in kind:
            flags += kind["unsafeFlags"]["_0"]
        elif "swiftLanguageMode" in kind or "swiftLanguageVersion" in kind:
            value = kind.get("swiftLanguageMode", kind.get("swiftLanguageVersion"))["_0"]
            flags[1] = str(value.get("_0", value) if isinstance(value, dict) else value)
    return flags


def modules(package_json, files):
    with open(package_json, encoding="utf-8") as f:
        package = json.load(f)
    by_name = {t["name"]: t for t in package["targets"] if t["type"] in ("regular", "system")}
    wanted = []
    for file in files:
        with open(file, encoding="utf-8") as f:
            for name in IMPORT.findall(f.read()):
                if name in by_name and name not in wanted:
                    wanted.append(name)
    order, state = [], {}

    def visit(name, chain):
        if state.get(name) == "done":
            return
        if state.get(name) == "visiting":
            fail("a dependency cycle: " + " -> ".join(chain + [name]))
        if name not in by_name:
            fail(f"{chain[-1]} depends on {name}, which is not a library or system target of the package")
        state[name] = "visiting"
        for dependency in dependency_names(by_name[name]):
            visit(dependency, chain + [name])
        state[name] = "done"
        order.append(name)

    for name in wanted:
        visit(name, [])
    below = {}  # name -> the system-library targets it depends on, directly or not
    for name in order:
        target = by_name[name]
        systems = set()
        for dependency in dependency_names(target):
            systems |= below[dependency] | ({dependency} if by_name[dependency]["type"] == "system" else set())
        below[name] = systems
        path = target.get("path") or os.path.join("Sources", name)
        dependencies = " ".join(dependency_names(target))
        system = " ".join(n for n in order if n in systems)
        if target["type"] == "system":
            print("|".join(["system", name, path, target.get("pkgConfig") or "-", "", dependencies, system]))
        else:
            print("|".join(["swift", name, path, "-", " ".join(swift_flags(package, target)), dependencies, system]))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "targets":
        targets(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "modules":
        modules(sys.argv[2], sys.argv[3:])
    else:
        fail(__doc__)
