import Foundation
import Testing
import TipsCatalog
import TipsEngine
import TipsFraming
import TipsJSON
import TipsProtocol
import TipsTestSupport
import TipsTranscript

/// The fuzz harnesses' oracles, replayed in-process over every committed seed (Fuzz/corpus/<target>/) and every
/// crash the fuzzers found (Fuzz/regressions/<target>/).
enum FuzzOracle {
  static func inputs(_ target: String) -> [(String, [UInt8])] {
    var found: [(String, [UInt8])] = []
    for kind in ["corpus", "regressions"] {
      let directory = repositoryRoot.appendingPathComponent("Fuzz/\(kind)/\(target)")
      for name in (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.sorted() ?? [] {
        if let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) {
          found.append(("\(kind)/\(target)/\(name)", Array(data)))
        }
      }
    }
    return found
  }

  /// The framer harness's oracle over one input, recording each broken invariant as an issue.
  static func framer(_ data: [UInt8], prefix: [UInt8], _ name: String) {
    FramerOracle.run(data, prefix: prefix) { holds, message in #expect(holds, "\(name): \(message())") }
  }

  static func framerEvents(_ input: [UInt8], chunks: [Int], limit: Int) -> [FramerEvent] {
    FramerOracle.events(input, chunks: chunks, limit: limit) { holds, message in #expect(holds, "\(message())") }
  }
}

extension Hardening {
  @Suite struct FuzzRegressions {
    @Test func framerNewlineSeedsAndCrashes() {
      let inputs = FuzzOracle.inputs("framer_newline")
      #expect(inputs.count >= 5)
      for (name, data) in inputs { FuzzOracle.framer(data, prefix: [], name) }
    }

    @Test func framerContentLengthSeedsAndCrashes() {
      let inputs = FuzzOracle.inputs("framer_content_length")
      #expect(inputs.count >= 5)
      for (name, data) in inputs { FuzzOracle.framer(data, prefix: Array("Content-Length: ".utf8), name) }
    }

    /// Found by fuzz-framer_newline: a whitespace-only line longer than the limit was skipped when it arrived in one
    /// read but failed with messageTooLarge when it arrived in pieces. Now it fails both ways.
    @Test func overLongBlankLineFailsTheSameWayWholeOrInPieces() {
      let input = Array("{}\n".utf8) + Array(repeating: UInt8(ascii: " "), count: 40) + [0x0A] + Array("{}\n".utf8)
      let whole = FuzzOracle.framerEvents(input, chunks: [], limit: 33)
      let pieces = FuzzOracle.framerEvents(input, chunks: [7], limit: 33)
      #expect(whole == pieces)
      #expect(whole == [.message(Array("{}".utf8)), .error(.messageTooLarge(limit: 33, size: nil))])
      // Blank lines within the limit are still skipped.
      let short = Array("   \r\n{}\n".utf8)
      #expect(FuzzOracle.framerEvents(short, chunks: [], limit: 33) == [.message(Array("{}".utf8))])
    }

    @Test func jsonSeedsRoundTrip() throws {
      let inputs = FuzzOracle.inputs("json")
      #expect(inputs.count >= 15)
      for (name, data) in inputs {
        guard let value = try? JSONParser.parse(data, maxDepth: 64) else {
          Issue.record("\(name): every seed is a JSON document")
          continue
        }
        let once = value.serialized()
        let twice = try JSONParser.parse(once).serialized()
        #expect(once == twice, "\(name)")
      }
    }

    @Test func jsonrpcSeedsDecodeAndErrorRepliesAreJSON() {
      let inputs = FuzzOracle.inputs("jsonrpc")
      #expect(inputs.count >= 14)
      var plain = 0, invalid = 0
      for (name, data) in inputs {
        if let fast = data.withUnsafeBytes({ PlainRequest.scan($0) }) {
          plain += 1
          let full = IncomingPayload.decodeParsingFully(data)
          #expect(full == .single(fast), "\(name): the plain path disagrees with the parser")
          if case .single(.request(_, _, let a?)) = full, case .request(_, _, let b?) = fast {
            #expect(a.jsonString == b.jsonString, "\(name): the plain path reordered params")
          }
        }
        let messages: [IncomingMessage]
        switch IncomingPayload.decode(data) {
        case .single(let message): messages = [message]
        case .batch(let batch): messages = batch
        case .emptyBatch: messages = []
        }
        for case .invalid(let id, let error) in messages {
          #expect((try? JSONParser.parse(OutgoingMessage.encodeError(id: id, error: error))) != nil, "\(name)")
          invalid += 1
        }
      }
      // Both oracles ran: seeds the plain path reads, and seeds that are invalid requests.
      #expect(plain >= 5 && invalid >= 4, "\(plain) plain, \(invalid) invalid of \(inputs.count) seeds")
    }

    @Test func ruleSeedsRoundTrip() {
      let inputs = FuzzOracle.inputs("rule")
      #expect(inputs.count >= 9)
      var rules = 0, tips = 0
      for (name, data) in inputs {
        guard let json = try? JSONParser.parse(data, maxDepth: 64) else { continue }
        if let rule = try? Rule(json: json, path: "rule") {
          #expect((try? Rule(json: rule.json, path: "rule")) == rule, "\(name)")
          rules += 1
        }
        if let tip = try? TipDefinition(json: json, path: "tips[0]") {
          #expect((try? TipDefinition(json: tip.json, path: "tips[0]")) == tip, "\(name)")
          tips += 1
        }
      }
      #expect(rules >= 7 && tips >= 1, "\(rules) rules and \(tips) tips decoded of \(inputs.count) seeds")
    }

    /// XLIFF seeds, through the xliff harness's oracle: what reads, written again, reads back the same; the seed
    /// that declares entities is refused.
    @Test func xliffSeedsRoundTrip() throws {
      let inputs = FuzzOracle.inputs("xliff")
      #expect(inputs.count >= 4)
      var read = 0
      for (name, data) in inputs {
        guard let (locales, _) = try? XLIFF.read(data, file: name) else { continue }
        read += 1
        for locale in locales {
          let units = locale.entries.map { (key: $0.key, source: $0.value, target: Optional($0.value)) }
          guard let written = try? XLIFF.file(sourceLocale: "en", locale: locale.locale, units: units) else { continue }
          let again = try XLIFF.read(written, file: "again.xliff").0.first?.entries ?? []
          #expect(again.map(\.key) == locale.entries.map(\.key), "\(name)")
          #expect(again.map(\.value) == locale.entries.map(\.value), "\(name)")
        }
      }
      #expect(read >= 3)
      let entities = try #require(inputs.first { $0.0.hasSuffix("/entities") })
      #expect(throws: CatalogError.self) { try XLIFF.read(entities.1, file: "entities") }
    }

    /// `lsp` seeds and regressions through its oracle (LanguageServerFuzzOracle.swift, shared with the harness).
    @Test func languageServerSeedsAndRegressions() {
      let inputs = FuzzOracle.inputs("lsp")
      #expect(inputs.count >= 5)
      for (name, data) in inputs {
        LanguageServerFuzzOracle.check(data) { holds, message in #expect(holds, "\(name): \(message())") }
      }
    }

    /// `transcript` seeds and regressions through its oracle (TranscriptFuzzOracle.swift, shared with the harness).
    @Test func transcriptSeedsAndRegressions() {
      let inputs = FuzzOracle.inputs("transcript")
      #expect(inputs.count >= 10)
      for (name, data) in inputs {
        TranscriptFuzzOracle.check(data) { holds, message in #expect(holds, "\(name): \(message())") }
      }
    }

    /// Found by fuzz-transcript: a transcript with CRLF line ends was read as one line (`"\r\n"` is one Character,
    /// which a split on `"\n"` never breaks), so its first step sent the rest of the file as one message.
    @Test func aTranscriptWithCRLFLineEndsIsReadLineByLine() throws {
      let transcript = try Transcript(
        text: "--> {\"id\":1}\r\n<-- {\"id\":1}\r\n\r\n<-- exit 0\r\n", path: "crlf.transcript")
      #expect(transcript.steps.map(\.line) == [1, 2, 4])
      guard case .send(let body) = transcript.steps.first?.kind else {
        Issue.record("the first step is not a send")
        return
      }
      #expect(body == "{\"id\":1}")
    }

    /// `upgrade` seeds and regressions through its oracle (UpgradeFuzzOracle.swift, shared with the harness).
    @Test func upgradeSeedsAndRegressions() {
      let inputs = FuzzOracle.inputs("upgrade")
      #expect(inputs.count >= 8)
      for (name, data) in inputs {
        UpgradeFuzzOracle.check(data) { holds, message in #expect(holds, "\(name): \(message())") }
      }
    }

    /// `hosted` seeds and regressions through its oracle (HostedDispatcherFuzzOracle.swift, shared with the harness).
    @Test func hostedDispatcherSeedsAndRegressions() {
      let inputs = FuzzOracle.inputs("hosted")
      #expect(inputs.count >= 8)
      for (name, data) in inputs {
        HostedDispatcherFuzzOracle.check(data) { holds, message in #expect(holds, "\(name): \(message())") }
      }
    }

    /// Catalog seeds, through the catalog harness's path: `Catalog(json:)`, registered with a fresh engine, each
    /// template instantiated; a seed that decodes registers.
    @Test func catalogSeedsDecode() {
      let inputs = FuzzOracle.inputs("catalog")
      #expect(inputs.count >= 4)
      var decoded = 0
      for (name, data) in inputs {
        guard let json = try? JSONParser.parse(data, maxDepth: 64) else { continue }
        guard let catalog = try? Catalog(json: json) else { continue }
        decoded += 1
        let engine = Engine(clock: VirtualClock(now: 1_700_000_000))
        #expect((try? catalog.register(in: engine)) != nil, "\(name)")
        for template in catalog.templates {
          var values = JSONObject()
          for placeholder in template.placeholders { values[placeholder] = .string(placeholder) }
          _ = try? template.instantiate(values: values, idPattern: .any)
        }
      }
      #expect(decoded >= 4, "\(decoded) of \(inputs.count) catalog seeds decoded")
    }
  }
}
