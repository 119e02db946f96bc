import TipsEngine
import TipsProtocol

extension Handlers {
  static func registerLifecycle(_ table: inout HandlerTable) {
    table.on(InitializeRequest.self) { request, context throws(ResponseError) in
      let session = context.session
      guard session.lifecycle == .uninitialized else { throw .alreadyInitialized() }
      guard request.major == ProtocolVersion.major else {
        throw .invalidParams(
          "initialize: protocolVersion \"\(request.protocolVersion)\" is not supported; this daemon speaks "
            + ProtocolVersion.current)
      }
      session.locale = request.locale
      let services = context.services
      let signIn = try services.mode.initialize(request, context)
      session.lifecycle = .running
      services.logger.debug("client initialized", [("connection", String(session.id)), ("client", request.clientName)])
      return InitializeRequest.Response(
        protocolVersion: ProtocolVersion.current, serverVersion: TipsdVersion.server,
        framings: ["newline", "contentLength"], virtualClock: services.virtualClock != nil,
        maxMessageSize: services.configuration.maxMessageSize, notifications: Messages.serverNotificationMethods,
        methods: Messages.clientMethods, auth: signIn)
    }

    table.on(ShutdownRequest.self) { _, context throws(ResponseError) in
      context.session.lifecycle = .shutDown
      return NullResult()
    }

    table.on(DiscoverRequest.self) { _, _ throws(ResponseError) in
      DiscoverRequest.Response(document: OpenRPCDocument.value)
    }
  }
}
