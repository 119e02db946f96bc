import TipsSync

// A commit whose outcome is unknown may still land after the node reads the account again (#44): the writer's
// connection was given up (an answer timeout, a partition) while its backend still held the commit's bytes — a
// partition that heals forwards them. A reload that read the account before that commit landed would build on a state
// missing it; the next change of the same register (a display count, by this node as one device: last writer wins)
// would then overwrite it, an acknowledged change lost. So a load after the writer's connection was lost first ends
// that connection's backend and waits for it to be gone (`pg_terminate_backend` with a timeout): by the time the
// load's statement reads, the old commit has landed or never will.

extension HostedStore {
  /// A PostgreSQL backend: its pid and `backend_start` (a pid alone may be reused, on this server or a promoted one).
  struct Backend: Equatable, Sendable {
    var pid: String
    var start: String
  }

  /// The writer's backend, read as its connection is set up.
  static let backendIdentity =
    "SELECT pg_backend_pid()::text, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()"

  /// Ends the backend `$1`/`$2` (the node's own role's) and waits up to 10 s for it to exit; nothing when it is gone.
  static let fenceSQL = """
    SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
    WHERE pid = $1::integer AND backend_start = $2::timestamptz AND pid <> pg_backend_pid()
    """

  /// The statement a load runs first while a lost writer connection's backend may still commit.
  func fenceStatements(_ backend: Backend?) -> [PGStatement] {
    guard let backend else { return [] }
    return [.query(Self.fenceSQL, [backend.pid, backend.start])]
  }

  /// A load ran its fence: that backend is gone (the writer's next loss sets a new one).
  func fenced(_ backend: Backend?) {
    if let backend, fence == backend { fence = nil }
  }
}
