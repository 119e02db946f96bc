package import TipsTransport

/// Makes a ``PGConnection`` to a server: host names in the connection string are resolved on the loop's thread pool
/// first and handed to libpq as `hostaddr` (libpq's own lookup inside `PQconnectPoll` is a blocking `getaddrinfo`);
/// `host` still names the server for TLS and the password file.
package enum PGConnector {
  /// Calls `completion` on the loop with a connection not yet started (set its callbacks, then `start()`), or with
  /// the resolution's failure. `isCurrent` is asked before each step: a caller that moved on (stopped, retried) gets
  /// no completion.
  package static func make(
    loop: any EventLoop, server: SyncServer, applicationName: String, connectTimeout: Double,
    isCurrent: @escaping () -> Bool, completion: @escaping (Result<PGConnection, PGError>) -> Void
  ) {
    func open(hostaddr: String?) {
      var keywords = ["dbname", "application_name"]
      var values = [server.connectionString, applicationName]
      if let hostaddr {
        keywords.append("hostaddr")
        values.append(hostaddr)
      }
      completion(
        .success(PGConnection(loop: loop, keywords: keywords, values: values, connectTimeout: connectTimeout)))
    }
    guard server.needsResolution else {
      open(hostaddr: nil)
      return
    }
    var addresses = [String](repeating: "", count: server.hosts.count)
    var pending = server.hosts.indices.filter { SyncServer.isName(server.hosts[$0]) }
    func next() {
      guard isCurrent() else { return }
      guard let index = pending.first else {
        open(hostaddr: addresses.joined(separator: ","))
        return
      }
      pending.removeFirst()
      loop.resolve(host: server.hosts[index]) { result in
        guard isCurrent() else { return }
        switch result {
        case .success(let address):
          addresses[index] = address
          next()
        case .failure(let error):
          completion(.failure(PGError(message: "\(error)")))
        }
      }
    }
    next()
  }
}
