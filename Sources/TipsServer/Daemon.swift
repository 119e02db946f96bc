#if canImport(Glibc)
  import Glibc
#endif
import TipsTransport

/// `tipsd serve` in production: a ``Server`` on a libuv loop, listening on stdio or a Unix socket, stopping on
/// SIGTERM/SIGINT.
public enum Daemon {
  /// Runs until the daemon stops; returns why.
  public static func run(configuration: ServerConfiguration, logger: Logger) throws(ServerError) -> ServerExit {
    ProcessSignals.ignoreSIGPIPE()
    ProcessSignals.unblockTerminationSignals()
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
        server.accept(try StdioTransport.open(loop: loop), primary: true)
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
      listener.onConnection = { [unowned server] stream in
        // Fail closed: a peer whose SO_PEERCRED cannot be read is refused too.
        let peerUID = stream.peerCredentials?.uid
        guard configuration.allowsPeer(uid: peerUID, ownUID: getuid()) else {
          logger.warning("refused a connection from another user", [("uid", peerUID.map { String($0) } ?? "unknown")])
          stream.close(after: false, reason: "peer not allowed")
          return
        }
        server.accept(stream)
      }
      listener.onAcceptError = { error in
        // EMFILE and the like: the listener keeps listening; say why clients are not being accepted.
        logger.warning("cannot accept a connection", [("error", "\(error)")])
      }
      server.onStop = { listener.close() }
      logger.info("serving", [("socket", path)])
    }
    var watchers: [SignalWatcher] = []
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
    server.closeDatastore()
    loop.close()
    StdioTransport.finishPumps()
    return server.exitStatus
  }
}
