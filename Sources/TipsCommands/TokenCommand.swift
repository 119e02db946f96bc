import TipsServer

/// `tipsd token [--socket PATH | --token-file PATH]`: prints the WebSocket listener's token (for a development app's
/// configuration, or `curl -H "Authorization: Bearer $(tipsd token)"`).
struct TokenCommand: Command {
  static let name = "token"
  static let abstract = "print the token WebSocket and HTTP clients present"
  static let usage = "tipsd token [--socket PATH | --token-file PATH]"
  static let options: [Option<TokenCommand>] = [
    .value("--socket", as: "PATH", help: "the token beside this socket (default: beside the default socket)") {
      $0.path = TokenFile.defaultPath(socketPath: $1.text)
    },
    .value("--token-file", as: "PATH", help: "the token file `tipsd serve --token-file` was given") {
      $0.path = $1.text
    },
  ]

  /// The token file.
  var path: String

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    path = TokenFile.defaultPath(socketPath: DaemonOptions.defaultSocketPath(environment: environment))
    try Arguments.parse(arguments, into: &self, options: Self.options)
  }

  func run() -> Int32 {
    do {
      print(try TokenFile.read(path))
      return 0
    } catch {
      Console.error("tipsd token: \(error)\n")
      return 1
    }
  }
}
