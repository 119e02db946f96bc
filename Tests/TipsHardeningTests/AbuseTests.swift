import Foundation
import Testing
import TipsFraming
import TipsJSON
import TipsTestSupport

extension Hardening {
  /// Protocol abuse against the real daemon; after each, a healthy client is still answered and memory and fds are
  /// back near their baseline.
  @Suite struct Abuse {
    @Test func truncatedFramesAreDroppedWithTheirConnection() throws {
      let fixture = try Fixture(["--partial-timeout", "1"])
      let partials = [
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth",
        "Content-Length: 60\r\n\r\n{\"jsonrpc\":\"2.0\"",
        "Content-Len",
        "Content-Length: 10\r\n",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"clock/now\"},",
      ]
      var silent: [(Int, RPCClient)] = []
      for (k, partial) in partials.enumerated() {
        // Peer closes (FIN), peer resets (RST), and peer stays silent until the partial-message timeout.
        for mode in 0..<3 {
          let client = try fixture.daemon.connect(framing: partial.hasPrefix("C") ? .contentLength : .newline)
          try client.initialize(name: "truncated")
          try client.write(bytes(partial))
          switch mode {
          case 0:
            shutdown(client.writeFD, Int32(SHUT_WR))
            #expect(client.readUntilEOF().eof)
            client.close()
          case 1: client.reset()
          default: silent.append((k, client))
          }
        }
      }
      for (k, client) in silent {
        let (messages, eof) = client.readUntilEOF()
        #expect(eof, "partial \(k) was not closed after the partial timeout")
        #expect(messages.last.flatMap(errorCode) == -32600, "partial \(k): \(messages)")
        client.close()
      }
      try fixture.checkRecovered("truncated frames")
    }

    @Test func badContentLengthGetsInvalidRequestAndClose() throws {
      let fixture = try Fixture()
      let headers = [
        "Content-Length: -1\r\n\r\n{}",
        "Content-Length: +2\r\n\r\n{}",
        "Content-Length: 99999999999999999999999999\r\n\r\n{}",
        "Content-Length: 9223372036854775807\r\n\r\n{}",
        "Content-Length: 2000000\r\n\r\n{}",
        "Content-Length: abc\r\n\r\n{}",
        "Content-Length: 0x10\r\n\r\n{}",
        "Content-Length: 1e3\r\n\r\n{}",
        "Content-Length: \r\n\r\n{}",
        "Content-Length: 2, 2\r\n\r\n{}",
        "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        "Content-Length: 2\r\ncontent-length: 3\r\n\r\n{}",
        "Content-Type: application/json\r\n\r\n{}",
        "Content-Length 2\r\n\r\n{}",
        "Content-Length: 2\r\n" + String(repeating: "X-Pad: 0123456789abcdef\r\n", count: 400) + "\r\n{}",
      ]
      for header in headers {
        let client = try fixture.daemon.connect()
        try client.write(bytes(header))
        let (messages, eof) = client.readUntilEOF()
        #expect(eof, "not closed after \(header.debugDescription.prefix(80))")
        #expect(
          messages.count == 1 && errorCode(messages.first) == -32600,
          "\(header.prefix(60).debugDescription): \(messages)")
        #expect(messages.first?["id"] == .null)
        client.close()
      }
      // Content-Length: 0 is a well-formed frame holding no JSON: a parse error, and the connection stays usable.
      let zero = try fixture.daemon.connect(framing: .contentLength)
      try zero.write(bytes("Content-Length: 0\r\n\r\n"))
      #expect(errorCode(try zero.readMessage()) == -32700)
      try zero.initialize(name: "after-zero")
      zero.close()
      try fixture.checkRecovered("bad Content-Length")
    }

    @Test func invalidUTF8IsAParseErrorAndTheConnectionLives() throws {
      let fixture = try Fixture()
      let bad: [[UInt8]] = [
        [0xFF, 0xFE], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80], [0x80],
      ]
      for framing in [Framing.newline, .contentLength] {
        let client = try fixture.daemon.connect(framing: framing)
        try client.initialize(name: "utf8")
        for sequence in bad {
          // Inside a string value, inside a key, and as the method name.
          let variants: [[UInt8]] = [
            bytes("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tips/status\",\"params\":{\"x\":\"") + sequence
              + bytes("\"}}"),
            bytes("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tips/status\",\"params\":{\"") + sequence
              + bytes("\":1}}"),
            bytes("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"") + sequence + bytes("\"}"),
          ]
          for payload in variants {
            try client.write(Framer.encode(payload, as: framing))
            let reply = try client.readMessage()
            #expect(errorCode(reply) == -32700, "\(sequence): \(reply?.jsonString ?? "no reply")")
          }
        }
        #expect(try client.result("clock/now")["now"] != nil)
        client.close()
      }
      try fixture.checkRecovered("invalid UTF-8")
    }

    @Test func deeplyNestedJSONIsRejectedWithoutStackOverflow() throws {
      let fixture = try Fixture()
      let client = try fixture.daemon.connect()
      try client.initialize(name: "nesting")
      // Far beyond the parser's depth limit, but under the message size limit.
      for payload in [
        String(repeating: "[", count: 500_000), String(repeating: "{\"a\":", count: 150_000),
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tips/status\",\"params\":{\"x\":"
          + String(repeating: "[", count: 300_000) + "}}",
      ] {
        try client.sendRaw(payload)
        #expect(errorCode(try client.readMessage()) == -32700)
      }
      // Within the parser's limit: a rule nested 100 deep goes through the rule decoder, evaluation and explain.
      // (Deeper rules register too, but tips/explain nests about two levels per rule level, so a rule nested more
      // than ~120 deep gets an explanation deeper than the 256 levels JSONParser — and so `tipsd call` — accepts.)
      var rule: JSONValue = ["event": "deep.event", "count": ["gte": 1]]
      for _ in 0..<100 { rule = ["not": rule] }
      let registered = try client.call(
        "tips/register", ["tips": [["id": "deep.tip", "title": "Deep", "rules": [rule]]]])
      #expect(registered["result"] != nil || errorCode(registered) == -32602, "\(registered.jsonString.prefix(200))")
      if registered["result"] != nil {
        try client.result("events/donate", ["id": "deep.event"])
        #expect(try client.call("tips/explain", ["id": "deep.tip"])["result"] != nil)
        try client.result("tips/unregister", ["ids": ["deep.tip"]])
      }
      // Nested associated values are refused, not stored.
      var info: JSONValue = 1
      for _ in 0..<200 { info = ["k": info] }
      #expect(errorCode(try client.call("events/donate", ["id": "nested.info", "info": info])) == -32602)
      client.close()
      try fixture.checkRecovered("deep nesting")
    }

    @Test func messagesAroundOneMebibyte() throws {
      let fixture = try Fixture()
      let limit = 1 << 20
      let envelope =
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"1.0\",\"clientInfo\":{\"name\":\"\"}}}"
      // Exactly at the limit (a 1 MiB client name): answered, repeatedly, in both framings.
      let atLimit = envelope.replacingOccurrences(
        of: "\"name\":\"\"", with: "\"name\":\"" + String(repeating: "x", count: limit - envelope.utf8.count) + "\"")
      #expect(atLimit.utf8.count == limit)
      for framing in [Framing.newline, .newline, .newline, .contentLength, .contentLength] {
        let client = try fixture.daemon.connect(framing: framing)
        try client.sendRaw(atLimit)
        let reply = try client.readMessage()
        #expect(reply?["result"]?["protocolVersion"] != nil, "\(reply?.jsonString.prefix(300) ?? "no reply")")
        #expect(try client.result("clock/now")["now"] != nil)
        client.close()
      }
      // One byte over, and several MiB: -32600 and closed, newline and Content-Length (announced, never sent).
      for oversize in [limit + 1, 3 * limit] {
        let big = try fixture.daemon.connect()
        big.writeIgnoringErrors(
          Array(repeating: UInt8(ascii: "["), count: 1) + Array(repeating: UInt8(ascii: " "), count: oversize) + [0x0A])
        let (messages, eof) = big.readUntilEOF()
        #expect(eof && errorCode(messages.first) == -32600, "\(oversize): \(messages)")
        big.close()
      }
      let announced = try fixture.daemon.connect()
      try announced.write(bytes("Content-Length: \(limit + 1)\r\n\r\n"))
      let (messages, eof) = announced.readUntilEOF()
      #expect(eof && errorCode(messages.first) == -32600)
      announced.close()
      try fixture.checkRecovered("1 MiB messages")
    }

    /// Pipelines many tiny requests on one connection while reading the replies on another thread: every one is
    /// answered with a -32600 whose id is null.
    @Test func aMillionTinyMessages() throws {
      let fixture = try Fixture()
      let count = ProcessInfo.processInfo.environment["TIPSD_TINY_MESSAGES"].flatMap(Int.init) ?? 250_000
      let client = try fixture.daemon.connect()
      try client.initialize(name: "tiny")
      // `{}` is the smallest request there is; each gets a -32600 with id null. One first, alone: its reply, checked,
      // is what every reply of the flood must repeat byte for byte.
      try client.write(bytes("{}\n"))
      var reply: [UInt8] = []
      while reply.last != 0x0A {
        var byte: UInt8 = 0
        var pfd = pollfd(fd: client.readFD, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(testTimeout * 1000)) > 0, read(client.readFD, &byte, 1) == 1 else {
          throw TestFailure("no reply to {} (\(reply.count) bytes of it)")
        }
        reply.append(byte)
      }
      let first = try JSONParser.parse(reply)
      #expect(errorCode(first) == -32600 && first["id"] == .null, "\(String(decoding: reply, as: UTF8.self))")
      #expect(first["jsonrpc"] == "2.0")
      let batchOf = 10_000
      let chunk = Array(repeating: bytes("{}\n"), count: batchOf).flatMap { $0 }
      let fd = client.writeFD
      let writer = Thread {
        var sent = 0
        while sent < count {
          let n = min(batchOf, count - sent)
          var offset = 0
          let total = n * 3
          while offset < total {
            let w = chunk.withUnsafeBytes { send(fd, $0.baseAddress! + offset, total - offset, Int32(MSG_NOSIGNAL)) }
            if w <= 0 { return }
            offset += w
          }
          sent += n
        }
      }
      let start = Date()
      writer.start()
      // The replies are `reply` over and over: each read is compared with `repeated` from its phase in the cycle.
      let readSize = 1 << 20
      let repeated = Array(repeating: reply, count: readSize / reply.count + 2).flatMap { $0 }
      var chunkBuffer = [UInt8](repeating: 0, count: readSize)
      var received = 0
      var firstDifference: (offset: Int, text: String)?  // the first read that is not a repeat of `reply`
      let expectedBytes = count * reply.count
      let deadline = Date().addingTimeInterval(testTimeout * 12)  // a hang guard
      while received < expectedBytes && Date() < deadline {
        var pfd = pollfd(fd: client.readFD, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, 1000) <= 0 { continue }
        let n = chunkBuffer.withUnsafeMutableBytes { read(client.readFD, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        let phase = received % reply.count
        let same = chunkBuffer.withUnsafeBytes { got in
          repeated.withUnsafeBytes { memcmp(got.baseAddress!, $0.baseAddress! + phase, n) }
        }
        if same != 0 && firstDifference == nil {
          firstDifference = (received, String(decoding: chunkBuffer[0..<min(n, 300)], as: UTF8.self))
        }
        received += n
      }
      let seconds = Date().timeIntervalSince(start)
      let replies = received / reply.count
      print(
        "hardening.tiny_messages: \(count) requests, \(replies) replies, \(String(format: "%.2f", seconds)) s, \(Int(Double(count) / seconds)) msg/s, peak RSS \(procStatus(fixture.pid, "VmHWM") ?? 0) KiB"
      )
      #expect(received == expectedBytes, "\(received) bytes of replies, expected \(count) × \(reply.count)")
      #expect(
        firstDifference == nil,
        "not the first reply repeated, from byte \(firstDifference?.offset ?? 0): \(firstDifference?.text ?? "")")
      client.close()
      try fixture.checkRecovered("tiny messages")
    }

    @Test func unknownMethodsGetMethodNotFound() throws {
      let fixture = try Fixture()
      let client = try fixture.daemon.connect()
      let names = [
        "", "foo", "tips/Status", "rpc.discover2", "tips/status ", "/", "\u{0}", "tips/register/x",
        String(repeating: "m", count: 500_000),
      ]
      for name in names {
        #expect(errorCode(try client.call(name)) == -32002, "before initialize, \(name.prefix(20))")
      }
      try client.initialize(name: "unknown")
      for name in names {
        let reply = try client.call(name, ["id": "x"])
        #expect(errorCode(reply) == -32601, "\(name.prefix(20))")
        #expect((reply["error"]?["message"]?.stringValue?.utf8.count ?? 0) < 600_000)
      }
      // As notifications they are silently dropped.
      for name in names { try client.notify(name) }
      #expect(try client.result("clock/now")["now"] != nil)
      client.close()
      try fixture.checkRecovered("unknown methods")
    }

    @Test func requestsAfterShutdownGetShuttingDown() throws {
      let fixture = try Fixture()
      let client = try fixture.daemon.connect()
      let methods = try client.initialize(name: "after-shutdown").methods
      #expect(methods.count > 20)
      #expect(try client.call("shutdown")["result"] == .null)
      for method in methods + ["no/such/method"] where method != "exit" {
        let reply = try client.call(method, ["id": "filter.tip"])
        let code = errorCode(reply)
        // exit/initialized/$/cancelRequest exist only as notifications (-32601 as requests).
        #expect(
          code == -32006 || (code == -32601 && ["initialized", "$/cancelRequest"].contains(method)),
          "\(method): \(reply.jsonString)")
      }
      // Nothing changed: filter.tip's donations are the healthy client's.
      try client.notify("exit")
      #expect(client.readUntilEOF().eof)
      client.close()
      try fixture.checkRecovered("after shutdown")
    }
  }
}
