public import TipsAuth
public import TipsLogging
public import TipsSync
public import TipsTransport

/// How the daemon keeps time.
public enum ClockMode: Sendable, Equatable {
  /// The system's real-time clock; time-driven changes fire from a libuv timer.
  case system
  /// A clock that moves only through `clock/advance` and `clock/set` (for tests), starting at `start`.
  case virtual(start: Double)
}

/// Where `tipsd serve` listens.
public enum Listen: Sendable, Equatable {
  case stdio
  case socket(path: String)
}

/// The HTTP/WebSocket listener (`--listen`), off unless an address is given.
public struct WebConfiguration: Sendable {
  /// `--listen HOST:PORT` (repeatable).
  public var addresses: [ListenAddress] = []
  /// The token file (`--token-file`; default: `token` beside the socket).
  public var tokenFile: String?
  /// `--allow-origin ORIGIN` (repeatable).
  public var allowedOrigins: Set<String> = []
  /// `--tls-cert` and `--tls-key`.
  public var tlsCertificate: String?
  public var tlsKey: String?
  /// `--ping-interval SECONDS`.
  public var pingInterval: Double = 15

  public init() {}

  public var isEnabled: Bool { !addresses.isEmpty }
}

/// Sync across devices through PostgreSQL (`--sync`), off unless given.
public struct SyncConfiguration: Sendable {
  /// `--sync`: a `postgresql://` URI or libpq `key=value` string (may hold a password: never logged).
  public var server: String
  /// `--account ID`: whose state this is; every device of the account syncs with the others.
  public var account: String
  /// `--device ID`: this device's id (default: one made on first start and kept in the datastore).
  public var device: String?
  /// `--sync-outbox-limit N`: synced changes are refused while this many operations wait for PostgreSQL.
  public var outboxLimit = 100_000
  /// The pump's reconnect backoff ceiling, in seconds (not a command-line option).
  public var retryMax: Double = 2
  /// `--sync-token-command` / `--sync-token-file`: with a `ws://` or `wss://` `server`, the device syncs through a
  /// hosted node with the user's token (read before every connection); `account` may then be empty (the token's
  /// `sub`, or the datastore's account when the token cannot be read at start).
  public var tokenSource: SyncTokenSource?

  public init(server: String, account: String, device: String? = nil, tokenSource: SyncTokenSource? = nil) {
    self.server = server
    self.account = account
    self.device = device
    self.tokenSource = tokenSource
  }

  /// Whether `server` names a hosted node (`ws://`, `wss://`) rather than PostgreSQL.
  public static func isNode(_ server: String) -> Bool { server.hasPrefix("ws://") || server.hasPrefix("wss://") }
}

/// Hosted mode (`--hosted`): one daemon serves every user of an app, each user's state in PostgreSQL, each session
/// signed in with the app's own JWT (its `sub` is the account) or the admin token (`--token-file`).
public struct HostedConfiguration: Sendable {
  /// `--hosted memory:`: every account in memory, nothing kept past the process (trying hosted mode without
  /// PostgreSQL, one node; the in-process tests and the fuzzers).
  public static let memory = "memory:"

  /// `--hosted`: a `postgresql://` URI or libpq `key=value` string (may hold a password: never logged); a multi-host
  /// URL with `target_session_attrs=read-write` follows a failover by itself.
  public var server: String
  /// `--node NAME`: this node's name, its device id in every account it serves (default: the host name, and the
  /// first `--listen` port).
  public var node: String
  /// `--jwt-secret-file FILE`: HS256/384/512 secret.
  public var jwtSecretFile: String?
  /// `--jwks FILE`: RS256/ES256 keys by `kid` (re-read on SIGHUP).
  public var jwksFile: String?
  /// `--jwt-audience AUD` (repeatable): a token's `aud` must name one of them.
  public var audiences: [String] = []
  /// `--jwt-issuer ISS`: a token's `iss` must be it.
  public var issuer: String?
  /// `--jwt-leeway SECONDS`: clock skew allowed on `exp`, `nbf` and `iat`.
  public var leeway: Double = 30
  /// Who tokens sign in, when not the app's JWTs (`--jwt-secret-file`, `--jwks`): no flag sets it; tests hand in an
  /// ``Authenticator`` naming principals, to test hosted logic in process without minting tokens.
  public var authenticator: (any Authenticator)?
  /// `--max-resident-accounts N`: accounts held in memory at most (least recently used ones without sessions are
  /// dropped past it; their state is all in PostgreSQL).
  public var maxResidentAccounts = 100_000
  /// `--account-rate N`: requests a second per account (bursts of twice as many), answered -32015 beyond.
  public var accountRate: Double = 50
  /// `--account-input-rate BYTES`: bytes a second an account's sessions may send a node (bursts of twice as many);
  /// past it the sending session is not read until the budget refills (nothing is refused: reading waits).
  public var accountInputRate: Double = 262_144
  /// `--account-max-donations N`: donations an account may keep (every event together); -32015 beyond.
  public var accountMaxDonations = 100_000
  /// `--account-max-keys N`: idempotency keys an account may hold within `--idempotency-hours` (each is a reply kept in
  /// memory and in PostgreSQL): a change with a new key past it is refused (-32015, quota `idempotencyKeys`).
  public var accountMaxIdempotencyKeys = 10_000
  /// `--account-max-state-bytes N`: bytes of an account's merged state (its snapshot's JSON, what a node holds
  /// resident) past which a change is refused (-32015, quota `stateBytes`); compaction's work is bounded by it.
  public var accountMaxStateBytes = 256 << 10
  /// `--max-info-bytes N`: bytes of one donation's `info` (its JSON), by `events/donate` or `sync/push`; -32015
  /// (quota `infoBytes`) beyond.
  public var maxInfoBytes = 4 << 10
  /// `--account-max-devices N`: devices an account's `sync/pull` keeps a cursor for (`tipsd.devices`); a new one past
  /// it replaces the least recently seen only when that one was silent longer than `--ops-device-days`, else -32015
  /// (quota `devices`).
  public var accountMaxDevices = 16
  /// `--account-max-sessions N`: sessions signed in to one account on one node; -32015 (quota `sessions`) beyond.
  public var accountMaxSessions = 32
  /// `--account-max-history-rows N`: rows of lifecycle history (`tipsd.history`, one per commit that recorded any)
  /// an account may add on one node in a UTC day; past it, changes are refused (-32015, quota `historyRows`) until
  /// the next day.
  public var accountMaxHistoryRows = 10_000
  /// `--ops-keep N`: operations kept behind an account's snapshot at most for devices that have not read them; a
  /// device further behind reads the snapshot (so a device pulling from 0 again and again never holds the
  /// retention back).
  public var opsKeep = 1_000
  /// `--compaction-threshold N`: operations stored after an account's snapshot past which a node's compactor writes
  /// a new one (so loading an account reads its snapshot and at most about this many operations).
  public var compactionThreshold = 500
  /// `--repair-interval SECONDS`: how often each resident account's merged state is checked against PostgreSQL's at
  /// the same cursor, and read again when they differ (`tipsd_hosted_repairs_total`; a net that should stay idle);
  /// 0 turns it off.
  public var repairInterval: Double = 300
  /// `--webhook-retry-first SECONDS`: the longest wait before a failed webhook delivery's first retry (5; each
  /// later wait doubles, with jitter, up to an hour; an endpoint undelivered for a day is disabled).
  public var webhookRetryFirst: Double = 5
  /// `--webhook-lease SECONDS`: how long the node delivering webhooks holds the fleet's lease without renewing it
  /// (10): another node takes over this long after it died.
  public var webhookLease: Double = 10
  /// `--ops-device-days N`: a device that synced within N days keeps the operations it has not read yet; one silent
  /// longer reads the account's snapshot when it comes back (the operations before the snapshot are pruned).
  public var opsDeviceDays: Double = 30
  /// `--postgres-timeout SECONDS`: a PostgreSQL link whose oldest batch waited this long is declared lost (what was
  /// in flight fails: -32016; it connects again), so no request waits on PostgreSQL without end.
  public var postgresTimeout: Double = 15
  /// `--commit-pipeline N`: commit transactions a hosted node has in flight at once; turns made meanwhile go in one
  /// transaction once one is answered (``HostedStore/Configuration/commitPipeline``).
  public var commitPipeline = 1
  /// A turn of many accounts committed by one set-based statement (``PGSchema/commitSet``); `--commit-per-account`
  /// turns it off (one `tipsd.commit` call an account). On by default since it cost PostgreSQL a third of the CPU a
  /// donation and carried the fleet further with 1, 2 and 3 nodes (docs/benchmarks.md, #47).
  public var setBasedCommit = true
  /// `--sign-in-timeout SECONDS`: a connection not signed in this long after it connected is closed.
  public var signInTimeout: Double = 10
  /// `--sign-in-failures N`: failed signature checks a second the node spends on at most (bursts of twice as many);
  /// past it, new tokens are refused before any cryptography (-32013 `throttled`, with `retryAfter`).
  public var signInFailureRate: Double = 2_000
  /// Failed sign-ins (`initialize` and `auth/refresh`) one connection may make; it is closed at the next.
  public var maxFailedSignInsPerConnection = 3
  /// `auth/refresh` calls a connection may make a minute (bursts of as many).
  public var refreshesPerMinute: Double = 6
  /// `--erasure-days DAYS`: how long an erased account's id stays refused (sign-in, changes, history).
  public var erasureDays: Double = 30
  /// `--admin-session-max HOURS` (in seconds here): an admin session ends this long after it signed in.
  public var adminSessionMax: Double = 12 * 3600
  /// `--token-file PATH`, when given: the admin token (re-read on SIGHUP). nil: no admin token on this node.
  public var adminTokenFile: String?
  /// `--apps FILE`: the deployment's apps beside `default` (#48: each with its sign-in, catalog and budgets; re-read
  /// on SIGHUP). See ``HostedApp``.
  public var appsFile: String?

  public init(server: String, node: String) {
    self.server = server
    self.node = node
  }
}

/// Everything `tipsd serve` can be told. Defaults are what `tipsd serve` uses with no flags.
public struct ServerConfiguration: Sendable {
  public var listen: Listen = .stdio
  /// HTTP and WebSocket, alongside `listen`.
  public var web = WebConfiguration()
  /// A datastore file path, or `:memory:`.
  public var datastorePath: String = ":memory:"
  /// `synchronous=FULL`: survive power loss, not only a process crash.
  public var fsync = false
  /// Move a corrupt datastore aside and start fresh.
  public var recoverDatastore = false
  /// A catalog file registered at start.
  public var catalogPath: String?
  /// Translators' message files for the catalog's copy, `DIR/{locale}.json` (`--messages DIR`).
  public var messagesDirectory: String?
  public var clock: ClockMode = .system
  public var logLevel: LogLevel = .info
  /// Largest accepted message, in bytes.
  public var maxMessageSize = 1 << 20
  /// Seconds a partial message may stay incomplete before the connection is closed.
  public var partialMessageTimeout: Double = 30
  public var maxConnections = 256
  /// Per-peer limits on new connections (`--max-connections-per-peer`, `--peer-connection-rate`,
  /// `--handshake-timeout`).
  public var connectionLimits = ConnectionLimits()
  /// Bytes a connection may have waiting to be written before it is disconnected.
  public var outgoingQueueLimit = 4 << 20
  /// Bytes handed to the kernel above which further output waits in our queue (where notifications coalesce).
  public var outgoingHighWater = 256 << 10
  /// Caps the datastore at this many pages (SQLite `max_page_count`; a commit past it fails as a full disk would).
  /// Not a command-line option: tests use it to make a commit fail.
  public var datastoreMaxPages: Int?
  /// `--allow-testing`: answer testing overrides, `datastore/reset`, `clock/advance` and `clock/set` (refused with
  /// -32011 otherwise, so a reset left in an app's code cannot wipe users' state).
  public var allowTesting = false
  /// `--watch`: reload the catalog when its file (or a message file) changes.
  public var watchCatalog = false
  /// `--strict-events`: refuse donations of events the catalog does not declare (a typo must not count silently).
  public var strictEvents = false
  /// `--install-id`: the install id variants are assigned from (else the one `initialize` sends, else a random
  /// one made on first start and kept in the datastore).
  public var installID: String?
  /// `--sync`, `--account`, `--device`, `--sync-outbox-limit`.
  public var sync: SyncConfiguration?
  /// `--hosted` and its options: every user's state in PostgreSQL (then there is no datastore and no `--sync`).
  public var hosted: HostedConfiguration?
  /// Peer uids (`SO_PEERCRED`) accepted on the Unix socket besides the daemon's own (`--allow-uid`, repeatable).
  public var allowedPeerUIDs: Set<UInt32> = []
  /// `--history-days`: days of lifecycle history kept (impressions, eligibility changes, invalidations, actions,
  /// variant assignments, goal and app-closed donations); 0 records none and deletes what was stored.
  public var historyDays: Double = 90
  /// `--idempotency-hours`: how long a change's `idempotencyKey` is remembered (a repeat within it changes nothing and
  /// gets the first reply).
  public var idempotencyHours: Double = 24
  /// `idempotencyHours` in seconds.
  var idempotencyWindow: Double { idempotencyHours * 3600 }
  /// `--app-closed-event`: the event the app donates when it goes to the background, for the close rate (the
  /// catalog may later declare it too; this is the value the server reads). nil: the close rate is unavailable.
  public var appClosedEvent: String?
  /// `--close-window`: seconds after an impression within which an app close counts against the tip.
  public var closeWindow: Double = 10
  /// `--close-rate-alert`: a close rate above this ratio is flagged; nil: never.
  public var closeRateAlert: Double?
  /// `--baseline-days`: days before and after a tip's first impression whose goal donations are compared.
  public var baselineDays: Double = 7

  /// Whether the lifecycle history is recorded.
  public var recordsHistory: Bool { historyDays > 0 }

  /// Whether a Unix-socket peer may connect: its uid is the daemon's own or on the allow-list. A peer whose
  /// credentials cannot be read (`nil`) is refused.
  public func allowsPeer(uid: UInt32?, ownUID: UInt32) -> Bool {
    guard let uid else { return false }
    return uid == ownUID || allowedPeerUIDs.contains(uid)
  }

  public init() {}
}
