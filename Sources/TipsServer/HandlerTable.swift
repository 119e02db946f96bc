import TipsJSON
import TipsProtocol

/// The handler of every request type, by method name; built once (``Handlers/table``) and checked against
/// ``Messages/requests`` so that no method is left unanswered.
struct HandlerTable: Sendable {
  /// Decodes the params, runs the handler and encodes its result (the reply's bytes).
  typealias Run = @Sendable (RequestID?, JSONValue?, RequestContext) -> Result<[UInt8], ResponseError>

  /// A method's handler and its slot among the methods (where `/metrics` counts it).
  struct Entry: Sendable {
    var run: Run
    var slot: Int
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
    handlers[R.method] = Entry(slot: methods.count - 1) { id, params, context in
      if R.isTestingOnly && !context.services.configuration.allowTesting {
        return .failure(.testingDisabled(method: R.method))
      }
      if let refusal = context.services.sync?.refusal(for: R.method) { return .failure(refusal) }
      do throws(ResponseError) {
        let request = try Messages.decode(R.self, params: params)
        let response = try handler(request, context)
        return .success(OutgoingMessage.encodeResult(id: id) { response.write(to: &$0) })
      } catch {
        return .failure(error)
      }
    }
  }

  subscript(method: String) -> Run? { handlers[method]?.run }

  func entry(_ method: String) -> Entry? { handlers[method] }
}

extension HandlerTable.Entry {
  init(slot: Int, _ run: @escaping HandlerTable.Run) {
    self.init(run: run, slot: slot)
  }
}
