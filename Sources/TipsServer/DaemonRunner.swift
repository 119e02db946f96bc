import TipsHosted
import TipsJSON
public import TipsLogging
import TipsProtocol
import TipsSystem
import TipsTransport

#if canImport(Glibc)
  import Glibc
#endif

/// `tipsd serve` in production: a ``Server`` on a libuv loop, listening on stdio or a Unix socket, stopping on
/// SIGTERM/SIGINT.
public enum DaemonRunner {
  /// Runs until the daemon stops; returns why.
  public static func run(configuration: ServerConfiguration, logger: Logger) throws(ServerError) -> ServerExit {
    ProcessSignals.ignoreSIGPIPE()
    ProcessSignals.unblockTerminationSignals()
    raiseOpenFileLimit(toServe: configuration.maxConnections, logger: logger)
    let loop: UVLoop
    do {
      loop = try UVLoop()
    } catch {
      throw ServerError("cannot create the event loop: \(error)")
    }
    let server = try Server(configuration: configuration, logger: logger, loop: loop)
    switch configuration.listen {
    case .stdio:
      do {
        server.accept(try StdioTransport.open(loop: loop), primary: true, transport: "stdio")
      } catch {
        throw ServerError("cannot open stdio: \(error)")
      }
      logger.info("serving on stdio")
    case .socket(let path):
      let listener: UnixSocketServer
      do {
        listener = try UnixSocketServer(loop: loop, path: path)
      } catch {
        throw ServerError("\(error)")
      }
      listener.acceptsPerTurn = configuration.connectionLimits.acceptsPerTurn
      let ownUID = getuid()
      listener.onConnection = { [unowned server] stream in
        // Fail closed: a peer whose SO_PEERCRED cannot be read is refused too.
        let peerUID = stream.peerCredentials?.uid
        guard let peerUID, configuration.allowsPeer(uid: peerUID, ownUID: ownUID) else {
          server.connectionRefused(
            limit: nil, "refused a connection from another user", [("uid", peerUID.map { String($0) } ?? "unknown")])
          stream.close(after: false, reason: "peer not allowed")
          return
        }
        server.accept(stream, peer: "uid:\(peerUID)")
      }
      listener.onAcceptError = { error in
        // EMFILE and the like: the listener keeps listening; say why clients are not being accepted.
        logger.warning("cannot accept a connection", [("error", "\(error)")])
      }
      server.onStop = { listener.close() }
      logger.info("serving", [("socket", path)])
    }
    let web = try startWebListener(configuration: configuration, logger: logger, loop: loop, server: server)
    var watchers: [SignalWatcher] = []
    if configuration.catalogPath != nil {
      do {
        let hangup = try loop.onSignal(SIGHUP) { [unowned server] in
          server.services.mode.reloadKeys()
          server.reloadCatalog(trigger: "SIGHUP")
        }
        hangup.keepsLoopAlive = false
        watchers.append(hangup)
      } catch {
        logger.warning("cannot watch SIGHUP: \(error)")
      }
    }
    let fileWatch =
      configuration.watchCatalog ? watchCatalogFiles(configuration, logger: logger, loop: loop, server: server) : nil
    for signum in [SIGTERM, SIGINT] {
      do {
        watchers.append(
          try loop.onSignal(signum) { [unowned server] in
            logger.info("signal received; draining", [("signal", signum == SIGTERM ? "SIGTERM" : "SIGINT")])
            server.beginStop()
          })
      } catch {
        logger.warning("cannot watch signal \(signum): \(error)")
      }
    }
    server.start()
    loop.run()
    server.finish()
    for watcher in watchers { watcher.close() }
    fileWatch?.close()
    // lws closes its own handles as the loop runs to the end in loop.close(); the listener stays alive until then.
    web?.close()
    server.closeDatastore()
    loop.close()
    withExtendedLifetime(web) {}
    StdioTransport.finishPumps()
    return server.exitStatus
  }

  /// Raises the soft open-file limit to the hard one when `connections` (plus a margin for the datastore, PostgreSQL
  /// and the listeners) would not fit, and says so when even the hard limit is too low.
  static func raiseOpenFileLimit(toServe connections: Int, logger: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
    let wanted = rlim_t(connections + 64)
    guard limit.rlim_cur < wanted else { return }
    let raised = min(wanted, limit.rlim_max)
    var new = limit
    new.rlim_cur = raised
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &new) == 0 { limit = new }
    if limit.rlim_cur < wanted {
      logger.warning(
        "the open-file limit allows fewer connections than --max-connections",
        [("limit", String(limit.rlim_cur)), ("max_connections", String(connections))])
    }
  }

  /// `--watch`: reloads the catalog 200 ms after the last change to its directory's entry for it or to a message
  /// file (editors write a new file and rename it over the old one, and one save is several events).
  static func watchCatalogFiles(
    _ configuration: ServerConfiguration, logger: Logger, loop: UVLoop, server: Server
  ) -> CatalogFileWatch? {
    guard let path = configuration.catalogPath else { return nil }
    let watch = CatalogFileWatch(timer: loop.makeTimer())
    let (directory, name) = System.splitPath(path)
    do {
      watch.watchers.append(
        try loop.watch(directory) { [unowned server, unowned watch] changed in
          guard changed == nil || changed == name else { return }
          watch.debounce { server.reloadCatalog(trigger: "file change") }
        })
      if let messages = configuration.messagesDirectory {
        watch.watchers.append(
          try loop.watch(messages) { [unowned server, unowned watch] changed in
            guard changed == nil || changed?.hasSuffix(".json") == true else { return }
            watch.debounce { server.reloadCatalog(trigger: "file change") }
          })
      }
    } catch {
      logger.warning("cannot watch the catalog; reload it with SIGHUP", [("path", directory), ("error", "\(error)")])
      watch.close()
      return nil
    }
    logger.info("watching the catalog for changes", [("path", path)])
    return watch
  }

  /// The HTTP/WebSocket listener of `--listen`, if any: its token, its access checks and its HTTP routes
  /// (`/healthz`, `/metrics`, the inspector at `/`).
  static func startWebListener(
    configuration: ServerConfiguration, logger: Logger, loop: UVLoop, server: Server
  ) throws(ServerError) -> WebListener? {
    let web = configuration.web
    guard web.isEnabled else { return nil }
    let token = try server.services.mode.listenerToken(web, logger: logger)
    let tls = web.tlsCertificate.flatMap { certificate in web.tlsKey.map { (certificate: certificate, key: $0) } }
    WebListener.libraryLog = { isError, line in
      if isError { logger.error("libwebsockets: \(line)") } else { logger.warning("libwebsockets: \(line)") }
    }
    let listener: WebListener
    do {
      listener = try WebListener(
        loop: loop,
        configuration: WebListener.Configuration(
          addresses: web.addresses,
          policy: AccessPolicy(token: token, allowedOrigins: web.allowedOrigins, tls: tls != nil),
          tls: tls, maxMessageSize: configuration.maxMessageSize, pingInterval: web.pingInterval,
          handshakeTimeout: configuration.connectionLimits.handshakeTimeout))
    } catch {
      throw ServerError("\(error)")
    }
    // The per-peer limits by address, shared with the Unix socket's (by uid): checked as each connection is accepted.
    listener.limiter = server.connectionLimiter
    listener.onRefusal = { [unowned server] refusal, peer in
      server.connectionRefused(
        limit: refusal.scope, "per-peer connection limit reached; refusing a TCP client (429)",
        [("peer", peer), ("limit", refusal.scope)])
    }
    listener.onLog = { isWarning, message, metadata in
      if isWarning { logger.warning(message, metadata) } else { logger.info(message, metadata) }
    }
    listener.onConnection = { [unowned server] stream in
      server.accept(stream, transport: "websocket", identity: stream.identity, peer: stream.peer, counted: true)
    }
    listener.authenticate = server.services.mode.upgradeAuthenticator
    let started = System.wallClockSeconds()
    let secure = tls != nil
    listener.onRequest = { [unowned server] request in
      HTTPRoutes.respond(request, server: server, uptime: System.wallClockSeconds() - started, tls: secure)
    }
    for address in listener.boundAddresses {
      logger.info("serving HTTP and WebSocket", [("listen", "\(tls == nil ? "ws" : "wss")://\(address)/")])
    }
    return listener
  }
}

/// `GET /healthz`: for systemd, containers and load balancers (no token needed; it says nothing about tips).
enum Health {
  static func response(server: Server, uptime: Double) -> HTTPResponse {
    let counts = server.connectionsByTransport
    var connections: JSONObject = ["total": .int(Int64(server.connectionCount))]
    for transport in ["unix", "websocket", "stdio"] { connections[transport] = .int(Int64(counts[transport] ?? 0)) }
    var body: JSONObject = [
      "status": "ok",
      "version": .string(TipsdVersion.server),
      "protocolVersion": .string(ProtocolVersion.current),
      "uptimeSeconds": .double((uptime * 1000).rounded() / 1000),
      "connections": .object(connections),
    ]
    server.services.mode.health(&body, catalogVersion: server.catalogVersion)
    return HTTPResponse(
      status: 200, body: JSONValue.object(body).serialized() + [0x0A], headers: [("Cache-Control", "no-store")])
  }
}

/// The file watchers of `--watch` and their debounce timer.
final class CatalogFileWatch {
  var watchers: [FileWatcher] = []
  let timer: any LoopTimer

  init(timer: any LoopTimer) {
    self.timer = timer
    timer.keepsLoopAlive = false
  }

  /// Runs `action` once, 200 ms after the last call.
  func debounce(_ action: @escaping () -> Void) {
    timer.start(afterMilliseconds: 200, action)
  }

  func close() {
    for watcher in watchers { watcher.close() }
    watchers = []
    timer.close()
  }
}
