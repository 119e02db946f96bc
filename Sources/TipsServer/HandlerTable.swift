import TipsJSON
import TipsProtocol

/// The handler of every request type, by method name; built once (``Handlers/table``) and checked against
/// ``Messages/requests`` so that no method is left unanswered.
struct HandlerTable: Sendable {
  /// Decodes the params, runs the handler and appends its reply (the whole message, unframed) to the writer; on
  /// failure nothing is written and the error is returned.
  typealias Run = @Sendable (RequestID?, JSONValue?, RequestContext, inout JSONWriter) -> ResponseError?

  /// Like ``Run``, for a handler that answers later (a read of PostgreSQL): the reply's bytes are handed to the
  /// completion, on the loop.
  typealias AsyncRun =
    @Sendable (
      RequestID?, JSONValue?, RequestContext, @escaping (Result<[UInt8], ResponseError>) -> Void
    ) -> Void

  /// A method's handler and its slot among the methods (where `/metrics` counts it).
  struct Entry: Sendable {
    var run: Run
    var slot: Int
    /// Set for a handler that answers asynchronously; ``run`` is then unused.
    var runAsync: AsyncRun? = nil
    /// Whether the method changes state and takes an `idempotencyKey` (its ``MethodTraits/isIdempotent``).
    var acceptsIdempotencyKey = false
    /// The method's traits (``Messages/traits(of:)``), kept here so a request finds them with its handler (#47).
    var traits = MethodTraits()
  }

  private(set) var handlers: [String: Entry] = [:]
  /// Every method, in slot order.
  private(set) var methods: [String] = []

  /// Registers the handler of `R`.
  mutating func on<R: RequestType>(
    _ type: R.Type, _ handler: @escaping @Sendable (R, RequestContext) throws(ResponseError) -> R.Response
  ) {
    precondition(handlers[R.method] == nil, "two handlers for \(R.method)")
    methods.append(R.method)
    handlers[R.method] = Entry(slot: methods.count - 1) { id, params, context, writer in
      if R.isTestingOnly && !context.services.configuration.allowTesting {
        return .testingDisabled(method: R.method)
      }
      if let refusal = context.tenant?.sync?.refusal(for: R.method) { return refusal }
      do throws(ResponseError) {
        let request = try Messages.decode(R.self, params: params)
        let response = try handler(request, context)
        response.writeReply(id: id, to: &writer)
        return nil
      } catch {
        return error
      }
    }
    handlers[R.method]?.acceptsIdempotencyKey = R.traits.isIdempotent
    handlers[R.method]?.traits = Messages.traits(of: R.method)
  }

  /// Registers the handler of `R` that answers through `reply`, at once or later (on the loop). The session reads no
  /// further request until it has.
  mutating func onAsync<R: RequestType>(
    _ type: R.Type,
    _ handler: @escaping @Sendable (R, RequestContext, @escaping (Result<R.Response, ResponseError>) -> Void) -> Void
  ) {
    precondition(handlers[R.method] == nil, "two handlers for \(R.method)")
    methods.append(R.method)
    let run: AsyncRun = { id, params, context, done in
      if R.isTestingOnly && !context.services.configuration.allowTesting {
        done(.failure(.testingDisabled(method: R.method)))
        return
      }
      let request: R
      do throws(ResponseError) {
        request = try Messages.decode(R.self, params: params)
      } catch {
        done(.failure(error))
        return
      }
      handler(request, context) { result in
        done(result.map { response in OutgoingMessage.encodeResult(id: id) { response.write(to: &$0) } })
      }
    }
    handlers[R.method] = Entry(
      run: { _, _, _, _ in .invalidRequest("\(R.method) answers asynchronously") }, slot: methods.count - 1,
      runAsync: run)
    handlers[R.method]?.acceptsIdempotencyKey = R.traits.isIdempotent
    handlers[R.method]?.traits = Messages.traits(of: R.method)
  }

  subscript(method: String) -> Run? { handlers[method]?.run }

  func entry(_ method: String) -> Entry? { handlers[method] }
}

extension HandlerTable.Entry {
  init(slot: Int, _ run: @escaping HandlerTable.Run) {
    self.init(run: run, slot: slot)
  }
}
