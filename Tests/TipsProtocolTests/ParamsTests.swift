import Testing
import TipsJSON
import TipsProtocol

/// The message of the `ResponseError` thrown by `body`, or `nil`.
func failure(_ body: () throws -> Void) -> String? {
  do {
    try body()
    return nil
  } catch let error as ResponseError {
    #expect(error.code == .invalidParams)
    return error.message
  } catch {
    Issue.record("unexpected error \(error)")
    return nil
  }
}

@Suite struct ParamsTests {
  let method = DonateRequest.method

  @Test func requiredAccessors() throws {
    let p = try Params(
      ["id": "e", "n": 3, "d": 2.5, "b": true, "a": [1], "o": ["k": 1], "v": nil, "integral": 4.0],
      method: method)
    #expect(try p.string("id") == "e")
    #expect(try p.int("n") == 3)
    #expect(try p.int("integral") == 4)
    #expect(try p.double("d") == 2.5)
    #expect(try p.double("n") == 3.0)
    #expect(try p.bool("b"))
    #expect(try p.array("a") == [1])
    #expect(try p.object("o") == ["k": 1])
    #expect(try p.value("v") == .null)
    #expect(p.optionalValue("nope") == nil)
    #expect(p.contains("v"))
  }

  @Test func optionalAccessorsTreatNullAsAbsent() throws {
    let p = try Params(["s": nil, "i": 2], method: method)
    #expect(try p.optionalString("s") == nil)
    #expect(try p.optionalString("missing") == nil)
    #expect(try p.optionalInt("i") == 2)
    #expect(try p.optionalBool("missing") == nil)
    #expect(try p.optionalDouble("missing") == nil)
    #expect(try p.optionalArray("missing") == nil)
    #expect(try p.optionalObject("s") == nil)
    #expect(try p.optionalStringArray("missing") == nil)
    #expect(try p.optionalNested("missing") == nil)
    #expect(failure { _ = try p.optionalString("i") } == "events/donate: params.i must be a string (got number)")
  }

  @Test func errorMessagesNameThePath() throws {
    let p = try Params(
      ["id": 5, "flag": "yes", "f": 1.5, "big": 1e300, "list": ["a", 2], "nested": ["kind": nil]], method: method)
    #expect(failure { _ = try p.string("id") } == "events/donate: params.id must be a string (got number)")
    #expect(failure { _ = try p.string("missing") } == #"events/donate: missing required param "missing""#)
    #expect(failure { _ = try p.bool("flag") } == "events/donate: params.flag must be a boolean (got string)")
    #expect(failure { _ = try p.int("f") } == "events/donate: params.f must be an integer (got fractional number)")
    #expect(
      failure { _ = try p.int("big") } == "events/donate: params.big must be an integer (got number out of range)")
    #expect(failure { _ = try p.int("flag") } == "events/donate: params.flag must be an integer (got string)")
    #expect(failure { _ = try p.double("flag") } == "events/donate: params.flag must be a number (got string)")
    #expect(failure { _ = try p.array("id") } == "events/donate: params.id must be an array (got number)")
    #expect(failure { _ = try p.object("id") } == "events/donate: params.id must be an object (got number)")
    #expect(failure { _ = try p.stringArray("list") } == "events/donate: params.list[1] must be a string (got number)")
    let nested = try p.nested("nested")
    #expect(
      failure { _ = try nested.string("kind") } == "events/donate: params.nested.kind must be a string (got null)")
    #expect(failure { _ = try nested.string("other") } == #"events/donate: missing required param "nested.other""#)
    #expect(failure { throw nested.invalid("kind", "must be set") } == "events/donate: params.nested.kind must be set")
  }

  @Test func absentOrNullParamsAreEmpty() throws {
    #expect(try Params(nil, method: method).object.isEmpty)
    #expect(try Params(.null, method: method).object.isEmpty)
    #expect(
      failure { _ = try Params(nil, method: method).string("id") } == #"events/donate: missing required param "id""#)
  }

  @Test func positionalParams() throws {
    #expect(
      failure { _ = try Params([1, 2], method: method) } == "events/donate: params must be an object, not an array")
    let p = try Params(["e", ["k": 1]], method: method, positional: ["id", "info"])
    #expect(try p.string("id") == "e")
    #expect(try p.object("info") == ["k": 1])
    let short = try Params(["e"], method: method, positional: ["id", "info"])
    #expect(try short.optionalObject("info") == nil)
    #expect(
      failure { _ = try Params([1, 2, 3], method: method, positional: ["id", "info"]) }
        == "events/donate: expected at most 2 positional params (got 3)")
    #expect(failure { _ = try Params("x", method: method) } == "events/donate: params must be an object (got string)")
  }

  /// Unknown params are refused in one place, `Messages.decode`, for every method but `initialize`.
  @Test func unknownParamsAreRefusedInOnePlace() throws {
    #expect(
      failure { _ = try Messages.decode(DonateRequest.self, params: ["id": "e", "extra": 1]) }
        == #"events/donate: unknown param "extra" (expected id, idempotencyKey, info)"#)
    #expect(
      failure { _ = try Messages.decode(ClockNowRequest.self, params: ["x": 1]) }
        == #"clock/now: unknown param "x" (it takes no params)"#)
    let initialize = try Messages.decode(
      InitializeRequest.self, params: ["protocolVersion": "1.0", "clientInfo": ["name": "n"], "future": true])
    #expect(initialize.clientName == "n")
    let donate = try Messages.decode(DonateRequest.self, params: ["e", ["k": 1]])
    #expect(donate == DonateRequest(id: "e", info: ["k": 1]))
  }
}
