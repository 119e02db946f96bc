import CSQLite
import TipsEngine
import TipsJSON
// The sync layer's rows and the history's encoding are TipsRecords'; the datastore's users get them with it.
@_exported public import TipsRecords

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// How a ``Datastore`` is opened.
public struct DatastoreOptions: Sendable {
  /// Power-loss durability: `synchronous=FULL`, an fsync of the WAL at every commit (`--fsync`).
  ///
  /// When false (the default) the datastore runs with `synchronous=NORMAL`: a committed transaction has been
  /// written to the WAL file before ``Datastore/commit(_:)`` returns, so it survives a crash or kill -9 of the
  /// process; only a power loss or kernel crash can lose the last transactions (the database itself stays
  /// consistent either way).
  public var fsync: Bool
  /// When the file is damaged or is not a database, move it (and its `-wal`/`-shm`) aside to
  /// `<path>.corrupt-<UTC time>` and start with an empty datastore (`--datastore-recover`). Without it such a
  /// file is refused and left untouched.
  public var recover: Bool
  /// Hold SQLite's file locks for the whole session (`locking_mode=EXCLUSIVE`; the default). tipsd owns the file
  /// anyway (the lock file), and this saves the half-dozen `fcntl` calls each transaction would otherwise make;
  /// the cost is that no other connection — the `sqlite3` shell included — can read the file while tipsd runs.
  public var exclusiveLocking: Bool
  /// Caps the file at this many pages (`PRAGMA max_page_count`): a commit that would grow it further fails as on a
  /// full disk (`SQLITE_FULL`) and nothing of it is kept. nil: no cap (SQLite's default). For tests of commit
  /// failure without a full filesystem.
  public var maxPages: Int?

  public init(fsync: Bool = false, recover: Bool = false, exclusiveLocking: Bool = true, maxPages: Int? = nil) {
    self.fsync = fsync
    self.recover = recover
    self.exclusiveLocking = exclusiveLocking
    self.maxPages = maxPages
  }
}

/// Why a datastore could not be opened, read or written. ``message`` is a full sentence naming the path and,
/// when SQLite failed, SQLite's own message; it says what to do about it.
public struct DatastoreError: Error, Sendable, CustomStringConvertible {
  /// The datastore (or directory) concerned.
  public var path: String
  public var message: String
  /// SQLite's (extended) result code, when SQLite reported the failure.
  public var sqliteCode: Int32?
  /// The file's content is damaged or is not a SQLite database (what `recover` handles).
  public internal(set) var isCorruption: Bool

  public init(path: String, message: String, sqliteCode: Int32? = nil) {
    self.path = path
    self.message = message
    self.sqliteCode = sqliteCode
    self.isCorruption = false
  }

  public var description: String { message }
}

/// The SQLite datastore behind tipsd: donations, parameter values, tip records, the display-frequency cooldown
/// and per-event donation limits, under a versioned schema.
///
/// - Durability: ``apply(_:)`` runs a batch of writes in one transaction and returns only once it is committed;
///   the server acknowledges mutations after that (group commit: one transaction per event-loop turn).
/// - Ownership: the datastore is locked for the life of the instance (`flock` on `<path>.lock`); a second open,
///   from any process including this one, is refused.
/// - Corruption: a file that is not a database, or whose pages are damaged, is refused at open with SQLite's
///   message and never modified, unless ``DatastoreOptions/recover`` moves it aside.
///
/// Not thread-safe: use one instance from one thread (the server's event loop).
public final class Datastore {
  /// The database path as given (`:memory:` for a throwaway datastore).
  public let path: String
  public let options: DatastoreOptions
  /// When ``DatastoreOptions/recover`` moved a damaged file aside at open: where it is now.
  public private(set) var recoveredFrom: String?
  /// The schema version of the open datastore (always the current one after a successful open).
  public private(set) var schemaVersion: Int = 0

  /// The SQLite connection while open (internal for tests).
  private(set) var connection: SQLiteConnection?
  private var lock: FileLock?
  /// Per event name: its row id in `events` and its donation chunks (row id and size), oldest first, so that
  /// bounding the history deletes by primary key without a query. nil until built (by a load or before the first
  /// write), and dropped whenever a transaction fails.
  var histories: [String: EventHistory]?
  /// The open batch's donations per event, written as one chunk each (see ``DonationChunk``), in first-seen order.
  /// Touched for every donation; `@exclusivity(unchecked)`: one writer at a time (the commit), never passed inout
  /// across a call that touches it again.
  @exclusivity(unchecked) var pending = PendingChunks()
  /// The state read at open to validate the file, handed out by the first ``load()`` unless a write came first.
  var preloaded: EngineSnapshot?

  /// The page size of new datastore files, in bytes (`TIPSD_PAGE_SIZE` overrides it, for benchmarks).
  static let pageSize: Int = {
    if let text = getenv("TIPSD_PAGE_SIZE").map({ String(cString: $0) }), let size = Int(text) { return size }
    return 1024
  }()

  /// The schema version this build writes.
  public static var currentSchemaVersion: Int { Schema.currentVersion }

  /// `$XDG_DATA_HOME/tipsd/<name>.sqlite` when `XDG_DATA_HOME` is set to an absolute path, else
  /// `$HOME/.local/share/tipsd/<name>.sqlite` (the home directory from the password database when `HOME` is unset).
  public static func defaultPath(name: String = "default", environment: [String: String]) -> String {
    if let dataHome = environment["XDG_DATA_HOME"], dataHome.hasPrefix("/") {
      return "\(trimmingTrailingSlashes(dataHome))/tipsd/\(name).sqlite"
    }
    var home = environment["HOME"] ?? ""
    if home.isEmpty, let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir {
      home = String(cString: directory)
    }
    if home.isEmpty { home = "." }
    return "\(trimmingTrailingSlashes(home))/.local/share/tipsd/\(name).sqlite"
  }

  private static func trimmingTrailingSlashes(_ path: String) -> String {
    var path = Substring(path)
    while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
    return String(path)
  }

  /// Opens (creating when missing) the datastore at `path`: creates missing parent directories (mode 0700),
  /// takes the ownership lock, checks the file, and migrates an older schema forward.
  ///
  /// Refuses, leaving the file untouched: a datastore locked by another instance, a damaged file (unless
  /// `options.recover`), a SQLite database that is not a tipsd datastore, and a schema newer than this build.
  public init(path: String, options: DatastoreOptions = .init()) throws(DatastoreError) {
    self.path = path
    self.options = options
    let inMemory = path == ":memory:" || path.isEmpty
    do throws(DatastoreError) {
      if !inMemory {
        try createDirectories(parentDirectory(of: path))
        lock = try FileLock.acquire(path + ".lock", datastorePath: path)
      }
      do throws(DatastoreError) {
        try openFile()
      } catch  where error.isCorruption && options.recover && !inMemory {
        connection?.close()
        connection = nil
        recoveredFrom = try moveAside(path)
        try openFile()
      }
    } catch {
      close()
      throw error
    }
  }

  deinit { close() }

  /// Closes the database (checkpointing the WAL) and releases the lock. Idempotent; later calls to ``load()``
  /// and ``apply(_:)`` fail.
  public func close() {
    connection?.close()
    connection = nil
    lock?.release()
    lock = nil
  }

  // MARK: Opening

  /// How open makes sure that the file is sound before anything is written to it.
  enum OpenCheck {
    /// `PRAGMA quick_check`: every page of every table (b-tree structure, free list).
    case quickCheck
    /// Reading the whole state, which reads every page of every table, and keeping it for ``load()``.
    case fullRead
  }

  /// The full read: it checks every page that holds state (quick_check also walks the free list) and costs
  /// nothing extra, where quick_check took about as long as the load itself with 1,000,000 donations.
  static let openCheck: OpenCheck = .fullRead

  private func openFile() throws(DatastoreError) {
    let connection = try sqlite("cannot open") { () throws(SQLiteError) in
      try SQLiteConnection(path: path, checkpointOnClose: false)
    }
    self.connection = connection
    histories = nil
    preloaded = nil

    // The first read of the file: a garbage or truncated header fails here (SQLITE_NOTADB).
    let tables = try sqlite("cannot read") { () throws(SQLiteError) in
      let statement = try connection.prepareUncached("SELECT name FROM sqlite_schema WHERE type = 'table'")
      var names: Set<String> = []
      while try statement.step() { names.insert(statement.text(0) ?? "") }
      return names
    }

    var version = 0
    if !tables.isEmpty {
      guard tables.contains("schema_version") else {
        throw DatastoreError(
          path: path,
          message: "the file \(path) is a SQLite database but not a tipsd datastore (it has no schema_version "
            + "table); it was left untouched. Use another --datastore path.")
      }
      let stored = try sqlite("cannot read") { () throws(SQLiteError) in
        try connection.scalarInt("SELECT max(version) FROM schema_version")
      }
      version = Int(stored ?? 0)
      if version > Schema.currentVersion {
        throw DatastoreError(
          path: path,
          message: "the datastore \(path) has schema version \(version), newer than this tipsd understands "
            + "(\(Schema.currentVersion)); it was left untouched. Run a newer tipsd, or use another --datastore path.")
      }
    }

    // Damaged pages anywhere (a truncated file, overwritten pages) are found before anything is written. A
    // migration reads and rewrites old tables, so an older file is always quick-checked first.
    let fullRead = !tables.isEmpty && version == Schema.currentVersion && Self.openCheck == .fullRead
    if !tables.isEmpty && !fullRead {
      try sqlite("cannot check") { () throws(SQLiteError) in try quickCheck(connection) }
    }
    if fullRead {
      preloaded = try load(connection)
    }

    try sqlite("cannot configure") { () throws(SQLiteError) in
      // A new file gets small pages: a commit appends every page it changed to the WAL, and one request's commit
      // changes one page. (An existing file keeps its page size; WAL mode cannot change it.)
      if tables.isEmpty { try connection.execute("PRAGMA page_size = \(Datastore.pageSize)") }
      let mode = try connection.scalarText("PRAGMA journal_mode = WAL")?.lowercased()
      guard mode == "wal" || mode == "memory" else {
        throw SQLiteError(code: SQLITE_ERROR, message: "cannot switch to WAL mode (journal_mode is \(mode ?? "?"))")
      }
      try connection.execute("PRAGMA synchronous = \(options.fsync ? "FULL" : "NORMAL")")
      if options.exclusiveLocking { try connection.execute("PRAGMA locking_mode = EXCLUSIVE") }
      if let pages = options.maxPages { _ = try connection.scalarInt("PRAGMA max_page_count = \(max(1, pages))") }
    }
    if version < Schema.currentVersion {
      try sqlite("cannot migrate") { () throws(SQLiteError) in try migrate(connection, from: version) }
    }
    // The file is sound: from here on closing may checkpoint the WAL into it.
    connection.checkpointOnClose = true
    schemaVersion = Schema.currentVersion
  }

  private func quickCheck(_ connection: SQLiteConnection) throws(SQLiteError) {
    let statement = try connection.prepareUncached("PRAGMA quick_check(5)")
    var problems: [String] = []
    while try statement.step() { problems.append(statement.text(0) ?? "") }
    guard problems != ["ok"] else { return }
    throw SQLiteError(
      code: SQLITE_CORRUPT,
      message: "database disk image is malformed (quick_check: \(problems.joined(separator: "; ")))")
  }

  /// Runs every migration after `version`, in one transaction.
  private func migrate(_ connection: SQLiteConnection, from version: Int) throws(SQLiteError) {
    try connection.execute(SQL.begin)
    do throws(SQLiteError) {
      for migration in Schema.migrations where migration.version > version {
        try connection.execute(migration.sql)
        try migration.transform?(connection)
        try connection.execute("UPDATE schema_version SET version = \(migration.version)")
      }
      try connection.execute(SQL.commit)
    } catch {
      if connection.inTransaction { try? connection.execute(SQL.rollback) }
      throw error
    }
  }

  // MARK: Errors

  /// Runs SQLite work, turning its failure into a ``DatastoreError`` that names the path.
  func sqlite<T>(_ action: String, _ body: () throws(SQLiteError) -> T) throws(DatastoreError) -> T {
    do {
      return try body()
    } catch {
      throw failure(error, action)
    }
  }

  private func failure(_ error: SQLiteError, _ action: String) -> DatastoreError {
    var result: DatastoreError
    if error.isCorruption {
      result = DatastoreError(
        path: path,
        message: "the datastore \(path) is damaged or is not a SQLite database (SQLite: \(error.message)); "
          + "it was left untouched. Restore it from a backup, or restart with --datastore-recover to move it "
          + "aside and start with an empty datastore.",
        sqliteCode: error.fromSQLite ? error.code : nil)
      result.isCorruption = true
    } else {
      result = DatastoreError(
        path: path, message: "\(action) the datastore \(path): \(error.message)",
        sqliteCode: error.fromSQLite ? error.code : nil)
    }
    return result
  }

  func openConnection() throws(DatastoreError) -> SQLiteConnection {
    guard let connection else {
      throw DatastoreError(path: path, message: "the datastore \(path) is closed")
    }
    return connection
  }
}
