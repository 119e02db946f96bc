// tipsd-bench: `make bench` runs every suite; `tipsd-bench engine store` runs a selection.
// Each figure and ratio is printed on its own line as `name: value`.

let suites: [(name: String, run: () throws -> Void)] = [
  ("engine", runEngineBenchmarks),
  ("store", runStoreBenchmarks),
  ("json", runJSONBenchmarks),
  ("serve", runServeBenchmarks),
  ("sync", runSyncBenchmarks),
]

let selected = Set(CommandLine.arguments.dropFirst())
for suite in suites where selected.isEmpty || selected.contains(suite.name) {
  print("# \(suite.name)")
  try suite.run()
}
