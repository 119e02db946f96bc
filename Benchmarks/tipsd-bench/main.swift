// tipsd-bench: `make bench` runs every suite; `tipsd-bench engine store` runs a selection.
// Each figure and ratio is printed on its own line as `name: value`. `tipsd-bench load SOCKET [REQUESTS] [WINDOW] [EVENT]`
// drives a running daemon with the bench's pipelined donations of EVENT (for profiling); `tipsd-bench load-ws PORT
// TOKEN [REQUESTS]` does the same over WebSocket; `tipsd-bench flood-peer unix:PATH|tcp:PORT SECONDS` connects and closes
// as fast as it can (the flood suite's load). `tipsd-bench floor` runs only the serve suite's comparison with the
// durable floor (issue #26).

import Foundation

let suites: [(name: String, run: () throws -> Void)] = [
  ("engine", runEngineBenchmarks),
  ("store", runStoreBenchmarks),
  ("json", runJSONBenchmarks),
  ("serve", runServeBenchmarks),
  ("flood", runFloodBenchmarks),
  ("history", runHistoryBenchmarks),
  ("sync", runSyncBenchmarks),
  ("auth", runAuthBenchmarks),
]

if CommandLine.arguments.dropFirst().first == "load" {
  try runLoad(Array(CommandLine.arguments.dropFirst(2)))
  exit(0)
}
if CommandLine.arguments.dropFirst().first == "flood-peer" {
  try runFloodPeer(Array(CommandLine.arguments.dropFirst(2)))
  exit(0)
}
if CommandLine.arguments.dropFirst().first == "floor" {
  print("# floor")
  try runFloorBenchmarks()
  exit(0)
}
if CommandLine.arguments.dropFirst().first == "load-ws" {
  try runWebSocketLoad(Array(CommandLine.arguments.dropFirst(2)))
  exit(0)
}

let selected = Set(CommandLine.arguments.dropFirst())
for suite in suites where selected.isEmpty || selected.contains(suite.name) {
  print("# \(suite.name)")
  try suite.run()
}
