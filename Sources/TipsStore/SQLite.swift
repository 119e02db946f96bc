import CSQLite

// A thin internal layer over the SQLite C API: one connection, cached prepared statements, typed binds and
// column reads. Nothing here is public; the module's API speaks only in ``DatastoreError``.

/// A failed SQLite call: the (extended) result code and SQLite's message.
struct SQLiteError: Error {
  var code: Int32
  var message: String
  /// False when the datastore itself detected the problem (e.g. unparsable stored JSON).
  var fromSQLite = true

  /// The primary result code (the low byte of an extended code).
  var primaryCode: Int32 { code & 0xff }

  /// True for the codes that mean the file's content is damaged or is not a database.
  var isCorruption: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }
}

/// One SQLite connection with a cache of prepared statements keyed by their SQL text.
final class SQLiteConnection {
  private(set) var handle: OpaquePointer?
  private var statements: [String: Statement] = [:]
  private var staticStatements: [UnsafeRawPointer: Statement] = [:]

  /// Process-wide SQLite configuration, applied once before the first connection opens.
  private static let configured: Bool = {
    _ = tipsd_sqlite_disable_memstatus()
    return true
  }()

  /// Opens (creating if missing) the database at `path`.
  init(path: String, checkpointOnClose: Bool = true) throws(SQLiteError) {
    _ = Self.configured
    var db: OpaquePointer?
    let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
    let rc = sqlite3_open_v2(path, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc, message: message)
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
    self.checkpointOnClose = checkpointOnClose
    tipsd_sqlite_no_checkpoint_on_close(db, checkpointOnClose ? 0 : 1)
  }

  /// Whether closing checkpoints the WAL into the database file (SQLite's default). Off until the file has been
  /// validated: a checkpoint on close would write to a damaged file that is being refused.
  var checkpointOnClose: Bool = true {
    didSet { tipsd_sqlite_no_checkpoint_on_close(handle, checkpointOnClose ? 0 : 1) }
  }

  deinit { close() }

  /// Finalizes every cached statement and closes the connection (a WAL checkpoint happens here).
  func close() {
    for statement in statements.values { statement.finalize() }
    for statement in staticStatements.values { statement.finalize() }
    statements = [:]
    staticStatements = [:]
    if let handle { sqlite3_close_v2(handle) }
    handle = nil
  }

  /// The error SQLite reports for `code` on this connection.
  func error(_ code: Int32) -> SQLiteError {
    guard let handle else { return SQLiteError(code: code, message: "the connection is closed") }
    return SQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)))
  }

  /// Runs one or more statements that return no rows needed by the caller.
  func execute(_ sql: StaticString) throws(SQLiteError) {
    try execute(sql.description)
  }

  /// Runs one or more statements that return no rows needed by the caller.
  func execute(_ sql: String) throws(SQLiteError) {
    guard let handle else { throw error(SQLITE_MISUSE) }
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw error(rc) }
  }

  /// A prepared statement for the static `sql`, from the cache when it was prepared before (keyed by the text's
  /// address: no hashing of the SQL on the hot path). The statement is reset; bind every parameter.
  func prepare(_ sql: StaticString) throws(SQLiteError) -> Statement {
    let key = UnsafeRawPointer(sql.utf8Start)
    if let cached = staticStatements[key] {
      cached.reset()
      return cached
    }
    let statement = try prepareUncached(sql.description)
    staticStatements[key] = statement
    return statement
  }

  /// A prepared statement for `sql`, from the cache when it was prepared before. The statement is reset; bind
  /// every parameter.
  func prepare(_ sql: String) throws(SQLiteError) -> Statement {
    if let cached = statements[sql] {
      cached.reset()
      return cached
    }
    let statement = try prepareUncached(sql)
    statements[sql] = statement
    return statement
  }

  /// A statement that is not cached (for one-off SQL such as migrations); finalized on deinit.
  func prepareUncached(_ sql: String) throws(SQLiteError) -> Statement {
    guard let handle else { throw error(SQLITE_MISUSE) }
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw error(rc) }
    return Statement(handle: statement, connection: self)
  }

  /// The first column of the first row of `sql` as text, or nil when there is no row or it is NULL.
  func scalarText(_ sql: String) throws(SQLiteError) -> String? {
    let statement = try prepareUncached(sql)
    guard try statement.step() else { return nil }
    return statement.text(0)
  }

  /// The first column of the first row of `sql` as an integer, or nil when there is no row or it is NULL.
  func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
    let statement = try prepareUncached(sql)
    guard try statement.step(), !statement.isNull(0) else { return nil }
    return statement.int64(0)
  }

  /// The row id of the last successful INSERT.
  var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

  /// Rows changed by the last INSERT, UPDATE or DELETE.
  var changes: Int { Int(sqlite3_changes(handle)) }

  /// Whether a transaction is open.
  var inTransaction: Bool {
    guard let handle else { return false }
    return sqlite3_get_autocommit(handle) == 0
  }
}

/// A prepared statement. Parameters are 1-based, columns 0-based, as in SQLite.
final class Statement {
  private(set) var handle: OpaquePointer?
  private unowned let connection: SQLiteConnection

  init(handle: OpaquePointer, connection: SQLiteConnection) {
    self.handle = handle
    self.connection = connection
  }

  deinit { finalize() }

  func finalize() {
    if let handle { sqlite3_finalize(handle) }
    handle = nil
  }

  /// Resets the statement for another run. Bindings are kept: every caller binds every parameter.
  func reset() {
    sqlite3_reset(handle)
  }

  /// Advances: true when a row is ready, false when done.
  @discardableResult
  func step() throws(SQLiteError) -> Bool {
    let rc = sqlite3_step(handle)
    if rc == SQLITE_ROW { return true }
    if rc == SQLITE_DONE { return false }
    let error = connection.error(rc)
    sqlite3_reset(handle)
    throw error
  }

  /// Runs the statement to completion, then resets it so that it holds no read lock.
  func run() throws(SQLiteError) {
    while try step() {}
    sqlite3_reset(handle)
  }

  // MARK: Binding

  func bind(_ index: Int32, _ value: Int64) {
    sqlite3_bind_int64(handle, index, value)
  }

  func bind(_ index: Int32, _ value: Int) {
    sqlite3_bind_int64(handle, index, Int64(value))
  }

  func bind(_ index: Int32, _ value: Double) {
    sqlite3_bind_double(handle, index, value)
  }

  func bind(_ index: Int32, _ value: Double?) {
    if let value { sqlite3_bind_double(handle, index, value) } else { sqlite3_bind_null(handle, index) }
  }

  func bindNull(_ index: Int32) {
    sqlite3_bind_null(handle, index)
  }

  /// Binds the UTF-8 of `value` as text (SQLite copies it).
  func bind(_ index: Int32, _ value: String) {
    var value = value
    value.withUTF8 { buffer in
      bindText(index, UnsafeRawBufferPointer(buffer))
    }
  }

  func bind(_ index: Int32, _ value: String?) {
    if let value { bind(index, value) } else { bindNull(index) }
  }

  /// Binds bytes as a blob (SQLite copies them).
  func bindBlob(_ index: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { bindBlob(index, $0) }
  }

  /// Binds UTF-8 bytes (e.g. serialized JSON) as text (SQLite copies them).
  func bindText(_ index: Int32, _ bytes: [UInt8]) {
    bytes.withUnsafeBytes { bindText(index, $0) }
  }

  private func bindText(_ index: Int32, _ buffer: UnsafeRawBufferPointer) {
    if let base = buffer.baseAddress, buffer.count > 0 {
      sqlite3_bind_text(
        handle, index, base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), tipsd_sqlite_transient())
    } else {
      // A nil pointer would bind NULL; an empty string must stay an empty string.
      sqlite3_bind_text(handle, index, "", 0, tipsd_sqlite_transient())
    }
  }

  /// Binds bytes as a blob (SQLite copies them).
  func bindBlob(_ index: Int32, _ buffer: UnsafeRawBufferPointer) {
    // A zero-length blob, not NULL, for an empty buffer.
    sqlite3_bind_blob(
      handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count),
      tipsd_sqlite_transient())
  }

  // MARK: Columns

  /// The column's blob bytes without copying, valid until the next step/reset (empty for NULL or an empty blob).
  func blobBytes(_ column: Int32) -> UnsafeRawBufferPointer {
    let pointer = sqlite3_column_blob(handle, column)
    let count = Int(sqlite3_column_bytes(handle, column))
    guard count > 0, let pointer else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: pointer, count: count)
  }

  func isNull(_ column: Int32) -> Bool {
    sqlite3_column_type(handle, column) == SQLITE_NULL
  }

  func int64(_ column: Int32) -> Int64 {
    sqlite3_column_int64(handle, column)
  }

  func int(_ column: Int32) -> Int {
    Int(sqlite3_column_int64(handle, column))
  }

  func double(_ column: Int32) -> Double {
    sqlite3_column_double(handle, column)
  }

  func optionalDouble(_ column: Int32) -> Double? {
    isNull(column) ? nil : sqlite3_column_double(handle, column)
  }

  /// The column's text, or nil when it is NULL.
  func text(_ column: Int32) -> String? {
    guard let pointer = sqlite3_column_text(handle, column) else { return nil }
    let count = Int(sqlite3_column_bytes(handle, column))
    return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
  }

  /// The column's text bytes without copying, valid until the next step/reset; nil when the column is NULL.
  func textBytes(_ column: Int32) -> UnsafeRawBufferPointer? {
    guard let pointer = sqlite3_column_text(handle, column) else { return nil }
    let count = Int(sqlite3_column_bytes(handle, column))
    return UnsafeRawBufferPointer(start: pointer, count: count)
  }
}
