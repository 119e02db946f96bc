import Testing

@testable import TipsWebhooks

@Suite struct WebhookSignerTests {
  /// The Standard Webhooks specification's own example (its libraries' test vector).
  @Test func signsTheSpecificationsVector() throws {
    let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    let signature = WebhookSigner.signature(
      secret: secret, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
      body: Array(#"{"test": 2432232314}"#.utf8))
    #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  }

  /// RFC 4231 test case 2 (HMAC-SHA256, key "Jefe").
  @Test func hmacMatchesRFC4231() {
    let mac = WebhookSigner.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
    let hex = mac.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
    #expect(hex.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
  }

  @Test func anyChangeChangesTheSignature() throws {
    let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    let base = WebhookSigner.signature(secret: secret, id: "msg_1", timestamp: 10, body: Array("{}".utf8))
    #expect(WebhookSigner.signature(secret: secret, id: "msg_2", timestamp: 10, body: Array("{}".utf8)) != base)
    #expect(WebhookSigner.signature(secret: secret, id: "msg_1", timestamp: 11, body: Array("{}".utf8)) != base)
    #expect(WebhookSigner.signature(secret: secret, id: "msg_1", timestamp: 10, body: Array("{ }".utf8)) != base)
  }

  @Test func secretsRoundTripAndBadOnesAreRefused() throws {
    let generated = WebhookSecret.generate()
    #expect(generated.key.count == 32)
    #expect(generated != WebhookSecret.generate())
    let text = generated.description
    #expect(text.hasPrefix("whsec_"))
    #expect(WebhookSecret(text) == generated)
    #expect(WebhookSecret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)  // no prefix
    #expect(WebhookSecret("whsec_not base64!") == nil)
    #expect(WebhookSecret("whsec_AAAA") == nil)  // 3 bytes: too short
  }

  @Test func base64RoundTrips() {
    for length in 0..<40 {
      let bytes = (0..<length).map { UInt8(($0 * 37 + 11) & 0xff) }
      #expect(Base64.decode(Base64.encode(bytes)) == bytes)
    }
    #expect(Base64.encode(Array("foob".utf8)) == "Zm9vYg==")
    #expect(Base64.decode("Zm9vYg=") == nil)
    #expect(Base64.decode("Zm9v=mFy") == nil)
  }
}

@Suite struct WebhookBackoffTests {
  @Test func startsWithinFirstAndDoublesToTheCap() {
    let backoff = WebhookBackoff(first: 5, cap: 3_600, giveUpAfter: 86_400)
    #expect(backoff.delay(afterFailures: 1, unit: 1) == 5)
    #expect(backoff.delay(afterFailures: 1, unit: 0) == 2.5)
    #expect(backoff.delay(afterFailures: 2, unit: 1) == 10)
    #expect(backoff.delay(afterFailures: 4, unit: 1) == 40)
    #expect(backoff.delay(afterFailures: 20, unit: 1) == 3_600)
    #expect(backoff.delay(afterFailures: 10_000, unit: 1) == 3_600)
    for failures in 1...30 {
      let delay = backoff.delay(afterFailures: failures)
      let ceiling = min(3_600, 5 * Double(UInt64(1) << UInt64(failures - 1)))
      #expect(delay >= ceiling / 2 && delay <= ceiling)
    }
  }

  @Test func givesUpAfterADay() {
    let backoff = WebhookBackoff()
    #expect(!backoff.givesUp(age: 86_399))
    #expect(backoff.givesUp(age: 86_400))
  }
}

@Suite struct WebhookURLTests {
  @Test func acceptsHTTPSAndLoopbackHTTP() throws {
    let https = try WebhookURL.parse("https://hooks.example.com/in?x=1").get()
    #expect(https.host == "hooks.example.com" && https.port == 443 && https.target == "/in?x=1")
    let local = try WebhookURL.parse("http://127.0.0.1:8080").get()
    #expect(local.port == 8080 && local.target == "/" && local.hostHeader == "127.0.0.1:8080")
    #expect((try? WebhookURL.parse("http://[::1]:9/h").get())?.host == "::1")
    #expect((try? WebhookURL.parse("http://localhost/h").get()) != nil)
  }

  @Test func refusesTheRest() {
    for bad in [
      "http://example.com/", "http://10.0.0.1/", "http://127.0.0.1.example.com/", "ftp://127.0.0.1/",
      "https://user@example.com/", "https://example.com/#x", "https://example.com:0/", "https://example.com:99999/",
      "https:///x", "https://exa mple.com/", "javascript:alert(1)", "",
    ] {
      #expect((try? WebhookURL.parse(bad).get()) == nil, "\(bad)")
    }
  }
}

@Suite struct HTTPResponseHeadTests {
  @Test func readsTheStatusAcrossChunks() {
    var head = HTTPResponseHead()
    for byte in "HTTP/1.1 204 No Content\r\nX: y\r\n".utf8 { #expect(head.consume([byte]) == .partial) }
    #expect(head.consume(Array("\r\nbody".utf8)) == .complete(status: 204))
    #expect(head.consume(Array("more".utf8)) == .complete(status: 204))
  }

  @Test func redirectsAreStatusesLikeAnyOther() {
    var head = HTTPResponseHead()
    #expect(head.consume(Array("HTTP/1.0 302 Found\r\nLocation: /x\r\n\r\n".utf8)) == .complete(status: 302))
    #expect(!WebhookHTTPClient.Outcome.status(302).delivered)
    #expect(WebhookHTTPClient.Outcome.status(200).delivered)
  }

  @Test func refusesWhatIsNotHTTP() {
    for bad in ["SSH-2.0-x\r\n\r\n", "HTTP/2 200\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 999 X\r\n\r\n"] {
      var head = HTTPResponseHead()
      guard case .malformed = head.consume(Array(bad.utf8)) else {
        Issue.record("accepted \(bad)")
        continue
      }
    }
    var long = HTTPResponseHead()
    long.consume(Array("HTTP/1.1 200 OK\r\n".utf8))
    #expect(long.consume([UInt8](repeating: 65, count: 20_000)) != .partial)
  }
}
