import TipsClient
import TipsJSON
import TipsProtocol

/// `tipsd call [--socket PATH] [--timeout SECONDS] METHOD [PARAMS-JSON]`: initialize, send one request, print its
/// result as pretty JSON. Exit status 0 on a result, 1 on a JSON-RPC error or a connection failure, 2 on bad usage.
struct CallCommand: Command {
  static let name = "call"
  static let abstract = "send one request to a running daemon, print the result as JSON"
  static let usage = "tipsd call [--socket PATH] [--timeout SECONDS] METHOD [PARAMS-JSON]"
  static let discussion = """
    METHOD is any method of protocol/openrpc.json; PARAMS-JSON its params, by name ('{"id": "filter.tip"}').
    Exit status: 0 with a result, 1 when the daemon answers with an error or cannot be reached.
    """
  static let options = DaemonOptions.options(\CallCommand.daemon)

  var daemon: DaemonOptions
  var method = ""
  var params: JSONValue?

  init(parsing arguments: [String], environment: [String: String]) throws(UsageError) {
    daemon = DaemonOptions(environment: environment)
    var positionals: [String] = []
    try Arguments.parse(arguments, into: &self, options: Self.options) { _, argument throws(UsageError) in
      positionals.append(argument)
    }
    guard let method = positionals.first else { throw .invalid("which method? (tipsd call METHOD)") }
    guard positionals.count <= 2 else { throw .invalid("unexpected argument \"\(positionals[2])\"") }
    self.method = method
    if positionals.count == 2 {
      do {
        params = try JSONParser.parse(positionals[1])
      } catch {
        throw .invalid("PARAMS-JSON is not valid JSON: \(error)")
      }
    }
  }

  func run() -> Int32 {
    do {
      let client = try daemon.connect(as: "tipsd call")
      defer { client.close() }
      print(try client.result(method, params).prettyString())
      return 0
    } catch {
      Console.error("tipsd call: \(error)\n")
      if let data = error.response?.data { Console.error("\(data.prettyString())\n") }
      return 1
    }
  }
}
