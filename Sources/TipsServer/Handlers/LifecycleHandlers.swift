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
      var signIn: SignIn?
      if let hosted = services.hosted {
        // Hosted: the session signs in here, unless its connection's token already did; variants follow the account.
        if let token = request.authToken {
          switch hosted.signInAttempt(token, on: session, refresh: false) {
          case .success(let principal): if let refusal = hosted.signedIn(session, as: principal) { throw refusal }
          case .failure(let error): throw error
          }
        }
        guard let principal = session.principal else {
          throw .unauthorized(
            reason: "missing",
            "initialize: sign in with params.auth.token (the app's JWT, or the admin token) or present the token on the "
              + "connection")
        }
        signIn = hosted.signIn(of: principal)
      } else if let installID = request.installID, services.configuration.installID == nil {
        context.record(try context.engine { engine throws(EngineError) in try engine.setInstallID(installID) })
      }
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
