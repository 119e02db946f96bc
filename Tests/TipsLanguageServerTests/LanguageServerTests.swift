import Foundation
import Testing
import TipsJSON

@testable import TipsLanguageServer

/// A client of the handler: requests with fresh ids, notifications, and the diagnostics each flush published.
final class Client {
  let server: LanguageServer
  var nextID: Int64 = 1
  /// The latest diagnostics published per URI.
  var diagnostics: [String: [JSONValue]] = [:]
  var publishCount = 0

  init(capabilities: JSONValue = [:], live: (any LiveValueSource)? = nil, initialize: Bool = true) {
    server = LanguageServer(live: live)
    if initialize {
      _ = request("initialize", ["processId": nil, "capabilities": capabilities])
      notify("initialized", [:])
    }
  }

  /// The whole reply.
  @discardableResult
  func call(_ method: String, _ params: JSONValue? = nil) -> JSONValue {
    let id = nextID
    nextID += 1
    var message: JSONObject = ["jsonrpc": "2.0", "id": .int(id), "method": .string(method)]
    if let params { message["params"] = params }
    let out = server.handle(.object(message))
    record(server.flush())
    #expect(out.count == 1)
    #expect(out.first?["id"] == .int(id))
    return out.first ?? .null
  }

  func request(_ method: String, _ params: JSONValue? = nil) -> JSONValue {
    call(method, params)["result"] ?? .null
  }

  @discardableResult
  func notify(_ method: String, _ params: JSONValue? = nil) -> [JSONValue] {
    var message: JSONObject = ["jsonrpc": "2.0", "method": .string(method)]
    if let params { message["params"] = params }
    let out = server.handle(.object(message))
    record(out)
    let flushed = server.flush()
    record(flushed)
    return out + flushed
  }

  func record(_ messages: [JSONValue]) {
    for message in messages where message["method"] == "textDocument/publishDiagnostics" {
      diagnostics[message["params"]!["uri"]!.stringValue!] = message["params"]!["diagnostics"]!.arrayValue!
      publishCount += 1
    }
  }

  func open(_ uri: String, _ text: String) {
    notify(
      "textDocument/didOpen",
      ["textDocument": ["uri": .string(uri), "languageId": "json", "version": 1, "text": .string(text)]])
  }

  func change(_ uri: String, version: Int64, _ changes: [JSONValue]) {
    notify(
      "textDocument/didChange",
      ["textDocument": ["uri": .string(uri), "version": .int(version)], "contentChanges": .array(changes)])
  }

  func at(_ uri: String, _ position: LSPPosition) -> JSONValue {
    ["textDocument": ["uri": .string(uri)], "position": Client.json(position)]
  }

  static func json(_ position: LSPPosition) -> JSONValue {
    ["line": .int(Int64(position.line)), "character": .int(Int64(position.character))]
  }

  static func json(_ range: LSPRange) -> JSONValue {
    ["start": json(range.start), "end": json(range.end)]
  }
}

/// Where `needle`'s `occurrence`-th match starts (and ends) in `text`, as LSP UTF-16 positions.
func find(_ needle: String, in text: String, occurrence: Int = 0) -> LSPRange {
  var searchStart = text.startIndex
  var found: Range<String.Index>?
  for _ in 0...occurrence {
    found = text.range(of: needle, range: searchStart..<text.endIndex)
    searchStart = found!.upperBound
  }
  func position(_ index: String.Index) -> LSPPosition {
    let before = text[..<index]
    let lineStart =
      before.lastIndex(where: { $0 == "\n" || $0 == "\r\n" }).map { text.index(after: $0) } ?? text.startIndex
    let line = before.filter { $0 == "\n" || $0 == "\r\n" }.count
    return LSPPosition(line: line, character: text[lineStart..<index].utf16.count)
  }
  return LSPRange(start: position(found!.lowerBound), end: position(found!.upperBound))
}

/// A catalog with Japanese and emoji copy before the typo'd event on the same line.
let catalogText = """
  {"events": [{"id": "search.opened", "description": "The search screen appeared."},\r
              {"id": "filter.used", "description": "The filter was used."}],\r
   "parameters": [{"id": "isLoggedIn", "default": false}],\r
   "tips": [{"id": "filter.tip", "title": "絞り込めます 🔍✨", "rules": [{"event": "serach.opened", "count": {"gte": 3}, "within": {"days": 1}}, {"event": "filter.used", "count": {"eq": 0}}]},\r
            {"id": "login.tip", "title": "ログイン 👋", "rules": [{"parameter": "isLoggedIn", "eq": false}]}],\r
   "groups": [{"id": "main", "priority": "ordered", "tips": ["filter.tip", "login.tip"]}]}\r

  """

let uri = "untitled:catalog-1"

@Suite struct LifecycleTests {
  @Test func requestsBeforeInitializeAreRefused() {
    let client = Client(initialize: false)
    #expect(client.call("textDocument/hover", [:])["error"]?["code"] == -32002)
    // Notifications are dropped, and answered by nothing.
    #expect(client.notify("textDocument/didOpen", ["textDocument": ["uri": "untitled:x", "text": "{}"]]).isEmpty)
    let result = client.request("initialize", ["capabilities": [:]])
    #expect(result["capabilities"]?["positionEncoding"] == "utf-16")
    #expect(result["capabilities"]?["textDocumentSync"]?["change"] == 2)
    #expect(result["capabilities"]?["completionProvider"]?["triggerCharacters"] == ["\"", ":"])
    #expect(result["capabilities"]?["hoverProvider"] == true)
    #expect(result["capabilities"]?["definitionProvider"] == true)
    #expect(result["capabilities"]?["codeActionProvider"]?["codeActionKinds"] == ["quickfix"])
    #expect(client.call("initialize", ["capabilities": [:]])["error"]?["code"] == -32600)
  }

  @Test func unknownMethodsCancellationAndShutdown() {
    let client = Client()
    #expect(client.call("textDocument/rename", [:])["error"]?["code"] == -32601)
    #expect(client.call("$/unknown", [:])["error"]?["code"] == -32601)
    #expect(client.notify("$/cancelRequest", ["id": 1]).isEmpty)
    #expect(client.notify("workspace/didChangeConfiguration", ["settings": [:]]).isEmpty)
    #expect(client.server.handle(bytes: Array("{oops".utf8)).first?["error"]?["code"] == -32700)
    #expect(client.call("shutdown")["result"] == .null)
    #expect(client.call("textDocument/hover", [:])["error"]?["code"] == -32600)
    #expect(client.server.exitCode == nil)
    client.notify("exit")
    #expect(client.server.exitCode == 0)
  }

  @Test func exitWithoutShutdownIsStatusOne() {
    let client = Client()
    client.notify("exit")
    #expect(client.server.exitCode == 1)
  }

  @Test func positionEncodingIsNegotiated() {
    func negotiated(_ offered: JSONValue?) -> JSONValue? {
      let client = Client(initialize: false)
      var capabilities: JSONObject = [:]
      if let offered { capabilities["general"] = ["positionEncodings": offered] }
      return client.request("initialize", ["capabilities": .object(capabilities)])["capabilities"]?["positionEncoding"]
    }
    #expect(negotiated(nil) == "utf-16")
    #expect(negotiated(["utf-8", "utf-16"]) == "utf-8")
    #expect(negotiated(["utf-32"]) == "utf-32")
    #expect(negotiated(["ebcdic"]) == "utf-16")
  }
}

@Suite struct DiagnosticTests {
  @Test func aTypoedEventIsMarkedInUTF16() throws {
    let client = Client()
    client.open(uri, catalogText)
    let diagnostics = try #require(client.diagnostics[uri])
    let typo = try #require(diagnostics.first { $0["code"] == "undeclared-event" })
    let expected = find("\"serach.opened\"", in: catalogText)
    #expect(expected.start.character > "   \"tips\": [{\"id\": \"filter.tip\", \"title\": \"".utf16.count)
    #expect(typo["range"] == Client.json(expected))
    #expect(typo["severity"] == 1)
    #expect(typo["source"] == "tipsd")
    #expect(typo["message"]?.stringValue?.contains("did you mean \"search.opened\"?") == true)
    // Warnings come with severity 2, e.g. no removal note.
    #expect(diagnostics.contains { $0["code"] == "no-removal" && $0["severity"] == 2 })
  }

  @Test func anIncrementalChangeThatFixesTheTypoClearsIt() throws {
    let client = Client()
    client.open(uri, catalogText)
    var range = find("serach", in: catalogText)
    client.change(uri, version: 2, [["range": Client.json(range), "text": "search"]])
    #expect(client.diagnostics[uri]?.contains { $0["code"] == "undeclared-event" } == false)
    // Break it again with an edit after the emoji, in UTF-16 units, then a full-text change.
    let fixed = catalogText.replacingOccurrences(of: "serach", with: "search")
    range = find("\"search.opened\", \"count\"", in: fixed)
    range.start.character += 1
    range.end = LSPPosition(line: range.start.line, character: range.start.character + 1)
    client.change(uri, version: 3, [["range": Client.json(range), "text": "X"]])
    let typo = try #require(client.diagnostics[uri]?.first { $0["code"] == "undeclared-event" })
    #expect(
      typo["range"]?["start"] == Client.json(LSPPosition(line: range.start.line, character: range.start.character - 1)))
    client.change(uri, version: 4, [["text": .string(fixed)]])
    #expect(client.diagnostics[uri]?.contains { $0["code"] == "undeclared-event" } == false)
  }

  @Test func malformedJSONGetsADiagnosticAtTheError() throws {
    let client = Client()
    let text = "{\"tips\": [\n  {\"id\": \"日本.tip\", \"title\": 😀}\n]}"
    client.open(uri, text)
    let diagnostics = try #require(client.diagnostics[uri])
    #expect(diagnostics.count == 1)
    #expect(diagnostics[0]["code"] == "json")
    // At the emoji: line 1, UTF-16 character 30, two units wide.
    let start = find("😀", in: text).start
    #expect(
      diagnostics[0]["range"]
        == Client.json(LSPRange(start: start, end: LSPPosition(line: 1, character: start.character + 2))))
    // And everything else still answers.
    _ = client.request("textDocument/hover", client.at(uri, start))
    _ = client.request("textDocument/completion", client.at(uri, LSPPosition(line: 1, character: 3)))
  }

  @Test func otherJSONDocumentsAreLeftAlone() throws {
    let client = Client()
    let package = "{\"name\": \"app\", \"version\": \"1.0.0\", \"dependencies\": {}}"
    client.open("untitled:package", package)
    #expect(client.diagnostics["untitled:package"] == [])
    #expect(
      client.request("textDocument/completion", client.at("untitled:package", find("{}", in: package).start.moved(1)))[
        "items"] == [])
    // A catalog in the making counts: a schema naming the catalog's, or a key being typed.
    client.open("untitled:new", "{\"$schema\": \"../protocol/schemas/catalog.json\", \"tip\": 1}")
    #expect(client.diagnostics["untitled:new"]?.contains { $0["code"] == "decode" } == true)
    client.open("untitled:typing", "{\"\"}")
    #expect(
      client.request("textDocument/completion", client.at("untitled:typing", LSPPosition(line: 0, character: 2)))[
        "items"]?.arrayValue?.count == 9)
  }

  @Test func messageFilesAreLintedWithTheirCatalogFromBuffers() throws {
    let directory = NSTemporaryDirectory() + "tipsd-lsp-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory + "/messages", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let catalog = """
      {"locales": ["en", "ja"], "tips": [{"id": "filter.tip", "title": "Narrow it down", "removal": "r",
        "sync": "local", "rules": [{"event": "e.x", "within": {"days": 1}, "count": {"gte": 1}}]}]}
      """
    try catalog.write(toFile: directory + "/app.json", atomically: true, encoding: .utf8)
    try "{\"tipkit\": {}}".write(toFile: directory + "/messages/ja.json", atomically: true, encoding: .utf8)
    let client = Client()
    let messagesURI = FileURI.uri(directory + "/messages/ja.json")
    let catalogURI = FileURI.uri(directory + "/app.json")
    // The message file alone: its catalog is app.json beside messages/ (read from disk), which misses ja copy.
    let ja = "{\"tipkit\": {\"filter.tip.title\": \"絞り込み🔍\", \"filter.tip.nonsense\": \"x\"}}"
    client.open(messagesURI, ja)
    let extra = try #require(client.diagnostics[messagesURI]?.first { $0["code"] == "extra-message-key" })
    #expect(extra["range"] == Client.json(find("\"x\"", in: ja)))
    // The catalog opened as an unsaved buffer that differs from the disk: its buffer is linted, and the message
    // buffer (which has the title) too.
    let edited = catalog.replacingOccurrences(of: "\"e.x\"", with: "\"e.y\"")
    client.open(catalogURI, edited)
    let catalogDiagnostics = try #require(client.diagnostics[catalogURI])
    #expect(!catalogDiagnostics.contains { $0["code"] == "missing-copy" })
    #expect(catalogDiagnostics.contains { $0["code"] == "events-undeclared" })
    // Closing the message buffer: the catalog now reads ja.json from disk, which lacks the title.
    client.notify("textDocument/didClose", ["textDocument": ["uri": .string(messagesURI)]])
    #expect(client.diagnostics[messagesURI] == [])
    #expect(client.diagnostics[catalogURI]?.contains { $0["code"] == "missing-copy" } == true)
  }
}

@Suite struct FeatureTests {
  @Test func completionOffersDeclaredEventsInsideAnEventString() throws {
    let client = Client()
    client.open(uri, catalogText)
    let range = find("serach.opened", in: catalogText)
    let result = client.request("textDocument/completion", client.at(uri, range.start))
    let items = try #require(result["items"]?.arrayValue)
    #expect(items.map { $0["label"]!.stringValue! } == ["search.opened", "filter.used"])
    #expect(items[0]["textEdit"]?["range"] == Client.json(range))
    #expect(items[0]["detail"] == "The search screen appeared.")
  }

  @Test func completionOfKeysOperatorsParametersAndGroupMembers() throws {
    let client = Client()
    let text = """
      {"parameters": [{"id": "isLoggedIn", "default": false}],
       "tips": [{"id": "a.tip", "title": "A", "rules": [{"event": "e.x", "count": {"": 1}}, {"parameter": ""}, {}], "": 1},
                {"id": "b.tip", "title": "B"}],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["a.tip", ]}]}
      """
    client.open(uri, text)
    func labels(at position: LSPPosition) -> [String] {
      client.request("textDocument/completion", client.at(uri, position))["items"]?.arrayValue?.compactMap {
        $0["label"]?.stringValue
      } ?? []
    }
    // Inside `count`: the operators.
    #expect(labels(at: find("\"\": 1}}", in: text).start.moved(1)) == ["eq", "ne", "lt", "lte", "gt", "gte"])
    // A parameter rule's `parameter`: parameter ids.
    #expect(labels(at: find("\"parameter\": \"\"", in: text).end.moved(-1)) == ["isLoggedIn"])
    // An empty rule: every rule key.
    #expect(
      labels(at: find("{}]", in: text).start.moved(1))
        == ["event", "count", "within", "where", "largestGroupBy", "parameter", "tip", "allOf", "anyOf", "not"])
    // An event rule's key position after `count`: the remaining event-rule keys.
    #expect(labels(at: find("{\"\": 1}", in: text).end) == ["within", "where", "largestGroupBy"])
    // A tip's keys, without those it has.
    let tipKeys = labels(at: find("\"\": 1},", in: text).start.moved(1))
    #expect(tipKeys.contains("removal") && tipKeys.contains("sync") && !tipKeys.contains("rules"))
    // A group's tips: the tips not yet in it.
    #expect(labels(at: find("\"a.tip\", ]", in: text).end.moved(-1)) == ["b.tip"])
  }

  @Test func completionAndHoverOfIssue25sKeys() throws {
    let client = Client()
    let text = """
      {"events": [{"id": "a.opened", "description": "A", "maxAge": {"": 1}}],
       "tips": [{"id": "welcome.tip", "title": "Welcome"},
                {"id": "filter.tip", "title": "Filter", "schedule": {"": 1},
                 "rules": [{"tip": "", "status": "invalidated", "for": {"days": 1}}, {"tip": "welcome.tip", "": 1}],
                 "variants": {"on": {"title": "On", "": 1}, "off": {"holdout": true}}}],
       "groups": [{"id": "g", "priority": "ordered", "tips": ["filter.tip"], "": 1}]}
      """
    client.open(uri, text)
    func labels(at position: LSPPosition) -> [String] {
      client.request("textDocument/completion", client.at(uri, position))["items"]?.arrayValue?.compactMap {
        $0["label"]?.stringValue
      } ?? []
    }
    // An event's maxAge and a tip rule's `for`: units; a schedule: from and until.
    #expect(labels(at: find("\"maxAge\": {\"\"", in: text).end.moved(-1)) == ["minutes", "hours", "days", "weeks"])
    #expect(labels(at: find("\"schedule\": {\"\"", in: text).end.moved(-1)) == ["from", "until"])
    // A tip rule's `tip`: the catalog's tips; once it names one, its conditions.
    #expect(labels(at: find("{\"tip\": \"\"", in: text).end.moved(-1)) == ["welcome.tip", "filter.tip"])
    #expect(labels(at: find("\"welcome.tip\", \"\"", in: text).end.moved(-1)) == ["status", "for", "displayed"])
    // A variant's keys include weight and holdout; a group's, schedule; an event declaration's, maxAge.
    let variant = labels(at: find("\"On\", \"\"", in: text).end.moved(-1))
    #expect(variant.contains("weight") && variant.contains("holdout"))
    #expect(labels(at: find("[\"filter.tip\"], \"\"", in: text).end.moved(-1)) == ["schedule"])

    let onRule = client.request(
      "textDocument/hover", client.at(uri, find("{\"tip\": \"\", \"status\"", in: text).start.moved(3)))
    #expect(
      onRule["contents"]?["value"]?.stringValue?.hasPrefix("Holds when `` was invalidated at least 1 day ago") == true)
    let onTarget = client.request(
      "textDocument/hover", client.at(uri, find("\"welcome.tip\", \"\": 1}", in: text).start.moved(2)))
    let targetText = try #require(onTarget["contents"]?["value"]?.stringValue)
    #expect(targetText.contains("`welcome.tip`: Welcome"), "\(targetText)")
    let onHoldout = client.request("textDocument/hover", client.at(uri, find("\"holdout\"", in: text).start.moved(2)))
    #expect(
      onHoldout["contents"]?["value"]?.stringValue?.hasPrefix(
        "`holdout`: true: installs assigned to it never see the tip") == true)
    let onSchedule = client.request("textDocument/hover", client.at(uri, find("\"schedule\"", in: text).start.moved(2)))
    #expect(onSchedule["contents"]?["value"]?.stringValue?.hasPrefix("`schedule`: {from?, until?}") == true)
  }

  @Test func completionWithoutDeclaredEventsOffersTheEventsRulesUse() throws {
    let client = Client()
    let text = """
      {"tips": [{"id": "a.tip", "title": "A", "rules": [{"event": "one.x", "count": {"gte": 1}}]},
                {"id": "b.tip", "title": "B", "rules": [{"event": "two.x", "count": {"gte": 1}}, {"event": ""
      """
    client.open(uri, text)
    let items = client.request("textDocument/completion", client.at(uri, find("\"\"", in: text).start.moved(1)))
    #expect(items["items"]?.arrayValue?.map { $0["label"]! } == ["one.x", "two.x"])
    // After `"event":` (the `:` trigger), quoted ids.
    let typing = text + ", \"x\": 1}, {\"event\":"
    client.change(uri, version: 2, [["text": .string(typing)]])
    let end = find("{\"event\":", in: typing, occurrence: 3).end
    let quoted = client.request("textDocument/completion", client.at(uri, end))["items"]?.arrayValue ?? []
    #expect(quoted.first?["textEdit"]?["newText"] == "\"one.x\"")
  }

  @Test func hoverExplainsARuleAndAnEvent() throws {
    let client = Client()
    client.open(uri, catalogText)
    let hover = client.request("textDocument/hover", client.at(uri, find("\"gte\": 3", in: catalogText).start))
    #expect(
      hover["contents"]?["value"] == "Holds when `serach.opened` was donated at least 3 times within the last 1 day.")
    let onEvent = client.request("textDocument/hover", client.at(uri, find("serach.opened", in: catalogText).start))
    let text = try #require(onEvent["contents"]?["value"]?.stringValue)
    #expect(text.hasPrefix("Holds when `serach.opened` was donated at least 3 times within the last 1 day.\n\n"))
    #expect(text.contains("`serach.opened` is not declared in `events` (did you mean `search.opened`?)"))
    let rule = find(
      "{\"event\": \"serach.opened\", \"count\": {\"gte\": 3}, \"within\": {\"days\": 1}}", in: catalogText)
    #expect(hover["range"] == Client.json(rule))
    let parameter = client.request(
      "textDocument/hover", client.at(uri, find("\"isLoggedIn\", \"eq\"", in: catalogText).start))
    #expect(parameter["contents"]?["value"] == "Holds when parameter `isLoggedIn` is `false`.")
    let event = client.request("textDocument/hover", client.at(uri, find("filter.used", in: catalogText).start))
    #expect(event["contents"]?["value"] == "`filter.used`: The filter was used.")
  }

  @Test func hoverAddsTheLiveValueWhenADaemonAnswers() throws {
    struct Stub: LiveValueSource {
      func explain(tipID: String) -> LiveValue {
        guard tipID == "filter.tip" else { return .unknownTip }
        return .explained(
          [
            "id": "filter.tip", "status": "available", "shouldDisplay": false,
            "rules": [
              ["holds": false, "detail": "serach.opened count=1 within 1 day, needs >= 3"],
              ["holds": true, "detail": "filter.used count=0 (lifetime), needs == 0"],
            ],
          ], source: "/tmp/stub.sock")
      }
    }
    let client = Client(live: Stub())
    client.open(uri, catalogText)
    let second = client.request("textDocument/hover", client.at(uri, find("\"eq\": 0", in: catalogText).start))
    let text = try #require(second["contents"]?["value"]?.stringValue)
    #expect(text.contains("this rule **holds** — filter.used count=0 (lifetime), needs == 0"))
    #expect(text.contains("`filter.tip`: shouldDisplay **false**, available"))
    let other = client.request(
      "textDocument/hover", client.at(uri, find("\"isLoggedIn\", \"eq\"", in: catalogText).start))
    #expect(other["contents"]?["value"]?.stringValue?.contains("has no tip `login.tip`") == true)
  }

  @Test func definitionOfEventsParametersAndGroupMembers() {
    let client = Client()
    client.open(uri, catalogText)
    func definition(_ needle: String, occurrence: Int = 0) -> JSONValue {
      client.request(
        "textDocument/definition", client.at(uri, find(needle, in: catalogText, occurrence: occurrence).start))
    }
    #expect(definition("filter.used", occurrence: 1)["range"] == Client.json(find("\"filter.used\"", in: catalogText)))
    #expect(definition("isLoggedIn", occurrence: 1)["range"] == Client.json(find("\"isLoggedIn\"", in: catalogText)))
    #expect(definition("\"login.tip\"]")["range"] == Client.json(find("\"login.tip\"", in: catalogText)))
    #expect(definition("serach.opened") == .null)
  }

  @Test func theDidYouMeanQuickFix() throws {
    let client = Client()
    client.open(uri, catalogText)
    let diagnostic = try #require(client.diagnostics[uri]?.first { $0["code"] == "undeclared-event" })
    let actions = client.request(
      "textDocument/codeAction",
      ["textDocument": ["uri": .string(uri)], "range": diagnostic["range"]!, "context": ["diagnostics": [diagnostic]]])
    let action = try #require(actions.arrayValue?.first)
    #expect(action["kind"] == "quickfix")
    #expect(action["title"] == "Change to \"search.opened\"")
    #expect(action["diagnostics"] == [diagnostic])
    let edit = try #require(action["edit"]?["changes"]?[uri]?[0])
    #expect(edit["range"] == diagnostic["range"])
    #expect(edit["newText"] == "\"search.opened\"")
    // Nothing elsewhere, and nothing when only refactorings are asked for.
    let elsewhere = client.request(
      "textDocument/codeAction",
      [
        "textDocument": ["uri": .string(uri)], "range": Client.json(find("login.tip", in: catalogText)),
        "context": ["diagnostics": []],
      ])
    #expect(elsewhere == [])
    let refactor = client.request(
      "textDocument/codeAction",
      [
        "textDocument": ["uri": .string(uri)], "range": diagnostic["range"]!,
        "context": ["diagnostics": [], "only": ["refactor"]],
      ])
    #expect(refactor == [])
  }
}

@Suite struct MessageFileTests {
  @Test func keysCompleteHoverAndLeadToTheSourceCopy() throws {
    let directory = NSTemporaryDirectory() + "tipsd-lsp-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: directory + "/messages", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let catalog = """
      {"locales": ["en", "ja"],
       "tips": [{"id": "filter.tip", "title": "Narrow it down", "message": "Use the filter.",
                 "actions": [{"id": "learn-more", "title": "Learn more"}],
                 "variants": {"friendly": {"title": "Too many results?"}}}]}
      """
    try catalog.write(toFile: directory + "/catalog.json", atomically: true, encoding: .utf8)
    let client = Client()
    let messages = FileURI.uri(directory + "/messages/ja.json")
    let text = "{\"tipkit\": {\"filter.tip.title\": \"絞り込み🔍\", \"\": \"\"}}"
    client.open(messages, text)
    let items = client.request("textDocument/completion", client.at(messages, find("\"\": ", in: text).start.moved(1)))
    let labels = items["items"]?.arrayValue?.map { $0["label"]!.stringValue! }
    #expect(labels == ["filter.tip.message", "filter.tip.actions.learn-more", "filter.tip.variants.friendly.title"])
    #expect(items["items"]?[1]?["detail"] == "Learn more")
    let hover = client.request("textDocument/hover", client.at(messages, find("filter.tip.title", in: text).start))
    #expect(hover["contents"]?["value"] == "`filter.tip.title`: the catalog's source copy is “Narrow it down”")
    let definition = client.request("textDocument/definition", client.at(messages, find("絞り込み", in: text).start))
    #expect(definition["uri"] == .string(FileURI.uri(directory + "/catalog.json")))
    #expect(definition["range"] == Client.json(find("\"Narrow it down\"", in: catalog)))
  }
}

extension LSPPosition {
  func moved(_ characters: Int) -> LSPPosition { LSPPosition(line: line, character: character + characters) }
}
