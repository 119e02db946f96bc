import TipsCommands

// tipsd — thin executable: the command line lives in TipsCommands, the daemon in TipsServer.
#if canImport(Glibc)
  import Glibc
#endif

var environment: [String: String] = [:]
var entry = environ
while let pointer = entry.pointee {
  let pair = String(cString: pointer)
  if let equals = pair.firstIndex(of: "=") {
    environment[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
  }
  entry += 1
}
exit(TipsdCommand.main(CommandLine.arguments, environment: environment))
