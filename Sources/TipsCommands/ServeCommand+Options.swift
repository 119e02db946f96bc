import TipsLogging
import TipsProtocol
import TipsServer
import TipsTransport

// `tipsd serve`'s options: each one declaration here and the field it sets (in ``ServerConfiguration``, or in
// ``ServeCommand`` for those checked together once all are read).

extension ServeCommand {
  public static let options: [Option<ServeCommand>] = [
    .section("SERVE OPTIONS"),
    .flag("--stdio", help: "serve one client on stdin/stdout (logs go to stderr); exit when stdin closes") {
      $0.configuration.listen = .stdio
    },
    .value(
      "--socket", as: "PATH",
      help: """
        serve many clients on a Unix socket (mode 0600); default:
        $XDG_RUNTIME_DIR/tipsd/tipsd.sock, else /tmp/tipsd-UID/tipsd.sock
        """
    ) { $0.configuration.listen = .socket(path: $1.text) },
    .value(
      "--datastore", as: "PATH",
      help: """
        SQLite datastore; default $XDG_DATA_HOME/tipsd/default.sqlite
        (else ~/.local/share/tipsd/default.sqlite); ":memory:" keeps nothing
        """
    ) { $0.configuration.datastorePath = $1.text },
    .flag(
      "--fsync",
      help: """
        commit with synchronous=FULL: acknowledged writes survive power loss,
        not only a crash of the daemon (slower)
        """
    ) { $0.configuration.fsync = true },
    .flag("--datastore-recover", help: "if the datastore is unreadable, move it aside (timestamped) and start fresh") {
      $0.configuration.recoverDatastore = true
    },
    .value(
      "--catalog", as: "FILE",
      help: """
        register the tips, parameters and groups of a catalog file at start;
        SIGHUP or catalog/reload reloads it (a broken edit keeps the old one)
        """
    ) { $0.configuration.catalogPath = $1.text },
    .value(
      "--messages", as: "DIR",
      help: """
        translators' files DIR/{locale}.json (seed 000's `tipkit.<tipId>.title` keys),
        merged into the catalog's copy; checked like the catalog at start
        (default: a `messages` directory beside the catalog, if there is one)
        """
    ) { $0.configuration.messagesDirectory = $1.text },
    .flag("--watch", help: "reload the catalog whenever its file (or a message file) changes") {
      $0.configuration.watchCatalog = true
    },
    .value(
      "--clock", as: "system|virtual", help: "virtual: time moves only through clock/advance and clock/set (tests)"
    ) {
      command, value throws(UsageError) in
      command.clock = try value.oneOf(ClockName.self)
    },
    .value("--clock-start", as: "SECONDS", help: "the virtual clock's first instant (default: now)") {
      command, value throws(UsageError) in
      command.clockStart = try value.number()
    },
    .flag(
      "--allow-testing",
      help: """
        answer testing/*, datastore/reset, clock/advance and clock/set (tests and
        development only; refused with -32011 otherwise)
        """
    ) { $0.configuration.allowTesting = true },
    .flag("--strict-events", help: "refuse donations of events the catalog does not declare (-32602)") {
      $0.configuration.strictEvents = true
    },
    .value(
      "--install-id", as: "ID",
      help: """
        the install id A/B variants are assigned from (default: initialize's
        installId, else a random id kept in the datastore)
        """
    ) { command, value throws(UsageError) in command.configuration.installID = try value.nonEmpty() },
    .value("--log-level", as: "LEVEL", help: "trace, debug, info (default), notice, warning, error") {
      command, value throws(UsageError) in
      guard let level = LogLevel(name: value.text) else {
        throw value.invalid("unknown level \"\(value.text)\" (trace, debug, info, notice, warning, error)")
      }
      command.configuration.logLevel = level
    },
    .value("--max-connections", as: "N", help: "default 256") { command, value throws(UsageError) in
      command.configuration.maxConnections = try value.positiveInteger()
    },
    .value(
      "--max-connections-per-peer", as: "N",
      help: """
        connections one peer (a uid on the socket, an address on --listen) may hold
        open at once (default 128; 0: no per-peer limit); extra ones get -32010 or 429
        """
    ) { command, value throws(UsageError) in
      guard let count = Int(value.text), count >= 0 else {
        throw value.invalid("\"\(value.text)\" is not 0 or a positive integer")
      }
      command.configuration.connectionLimits.perPeer = count
    },
    .value(
      "--peer-connection-rate", as: "N",
      help: """
        new connections a second one peer may open, bursts of twice as many
        (default 200; 0: no rate limit); faster ones get -32010 or 429
        """
    ) { command, value throws(UsageError) in
      let rate = try value.number()
      guard rate >= 0 else { throw value.invalid("must be 0 or a positive number of connections a second") }
      command.configuration.connectionLimits.ratePerPeer = rate
      command.configuration.connectionLimits.burstPerPeer = max(1, rate * 2)
    },
    .value(
      "--handshake-timeout", as: "SECONDS",
      help: "close a --listen connection that has not sent its request or upgraded in this long (default 10)"
    ) { command, value throws(UsageError) in
      command.configuration.connectionLimits.handshakeTimeout = try value.positiveNumber(of: "seconds")
    },
    .value("--max-message-size", as: "BYTES", help: "default 1048576") { command, value throws(UsageError) in
      command.configuration.maxMessageSize = try value.positiveInteger()
    },
    .value(
      "--partial-timeout", as: "SECONDS",
      help: "close a connection whose message stays incomplete this long (default 30)"
    ) { command, value throws(UsageError) in command.configuration.partialMessageTimeout = try value.number() },
    .value("--queue-limit", as: "BYTES", help: "per-connection outgoing queue bound (default 4194304)") {
      command, value throws(UsageError) in
      command.configuration.outgoingQueueLimit = try value.positiveInteger()
    },
    .value(
      "--allow-uid", as: "UID",
      help: """
        also accept socket clients running as UID (repeatable); by default only
        the daemon's own uid may connect (checked with SO_PEERCRED)
        """
    ) { command, value throws(UsageError) in
      guard let uid = UInt32(value.text) else { throw value.invalid("\"\(value.text)\" is not a uid") }
      command.configuration.allowedPeerUIDs.insert(uid)
    },

    .section("HISTORY AND METRICS"),
    .value(
      "--idempotency-hours", as: "HOURS",
      help: """
        remember each change's idempotencyKey this long: a retry with the key changes
        nothing and gets the first reply (default 24)
        """
    ) { command, value throws(UsageError) in
      command.configuration.idempotencyHours = try value.positiveNumber(of: "hours")
    },
    .value(
      "--history-days", as: "DAYS",
      help: """
        keep this many days of lifecycle history (impressions, eligibility changes,
        invalidations, actions, variants, goal and app-closed donations) for
        analytics/* and metrics/get (default 90; 0 records none)
        """
    ) { command, value throws(UsageError) in
      let days = try value.number()
      guard days >= 0 else { throw value.invalid("must be 0 or a positive number of days") }
      command.configuration.historyDays = days
    },
    .value(
      "--app-closed-event", as: "NAME",
      help: """
        the event the app donates when it goes to the background (e.g.
        app.backgrounded): enables the close rate after an impression
        """
    ) { command, value throws(UsageError) in command.configuration.appClosedEvent = try value.nonEmpty() },
    .value(
      "--close-window", as: "SECONDS",
      help: "an app close this soon after an impression counts against the tip (default 10)"
    ) { command, value throws(UsageError) in
      command.configuration.closeWindow = try value.positiveNumber(of: "seconds")
    },
    .value("--close-rate-alert", as: "RATIO", help: "flag tips whose close rate is above RATIO (e.g. 0.2)") {
      command, value throws(UsageError) in
      let ratio = try value.number()
      guard ratio >= 0, ratio <= 1 else { throw value.invalid("must be a ratio from 0 to 1") }
      command.configuration.closeRateAlert = ratio
    },
    .value(
      "--baseline-days", as: "DAYS",
      help: """
        compare the goal's daily rate this many days before and after a tip's first
        impression (default 7)
        """
    ) { command, value throws(UsageError) in
      command.configuration.baselineDays = try value.positiveNumber(of: "days")
    },

    .section("SYNC ACROSS DEVICES (off unless --sync is given; see docs/durability-and-sync.md)"),
    .value(
      "--sync", as: "URL",
      help: """
        sync this account's tip state with its other devices through PostgreSQL:
        postgresql://USER[:PASSWORD]@HOST[:PORT]/DB or a libpq "key=value" string
        (the password is never logged). tipsd creates and migrates a `tipsd` schema.
        Or through a hosted node: wss://HOST[:PORT]/ with the user's token
        (--sync-token-command or --sync-token-file; ws:// to 127.0.0.1 only)
        """
    ) { $0.sync.server = $1.text },
    .value(
      "--sync-token-command", as: "CMD",
      help: """
        with --sync wss://…: a shell command printing the user's JWT (its sub is the
        account); run before every connection and when the node says it expired
        """
    ) { command, value throws(UsageError) in
      guard command.sync.tokenSource == nil else {
        throw value.invalid("give one of --sync-token-command and --sync-token-file")
      }
      command.sync.tokenSource = .command(try value.nonEmpty())
    },
    .value(
      "--sync-token-file", as: "FILE",
      help: "with --sync wss://…: a file holding the user's JWT, read again before every connection"
    ) { command, value throws(UsageError) in
      guard command.sync.tokenSource == nil else {
        throw value.invalid("give one of --sync-token-command and --sync-token-file")
      }
      command.sync.tokenSource = .file(try value.nonEmpty())
    },
    .value(
      "--account", as: "ID",
      help: "whose state this is (required with --sync postgresql://…; a wss:// URL's is the token's sub)"
    ) {
      command, value throws(UsageError) in
      command.sync.account = try value.nonEmpty()
    },
    .value(
      "--device", as: "ID", help: "this device's id (default: a random id made on first start, kept in the datastore)"
    ) { command, value throws(UsageError) in command.sync.device = try value.nonEmpty() },
    .value(
      "--sync-outbox-limit", as: "N",
      help: """
        refuse synced changes (-32012) while N operations wait for PostgreSQL
        (default 100000; queued operations are merged first where the merge allows)
        """
    ) { command, value throws(UsageError) in command.sync.outboxLimit = try value.positiveInteger() },

    .section("HOSTED MODE (one tipsd for every user of an app; see docs/hosting.md)"),
    .value(
      "--hosted", as: "URL",
      help: """
        serve every user of an app: each user's state in PostgreSQL (this URL, as
        for --sync; a multi-host URL with target_session_attrs=read-write follows a
        failover), each session signed in with the app's JWT (its sub is the account)
        or the admin token (--token-file). Needs --catalog; no datastore, no --sync.
        `--hosted memory:` keeps every account in memory (one node, nothing kept: a trial)
        """
    ) { $0.hosted.server = $1.text },
    .value("--node", as: "NAME", help: "this node's name in every account it serves (default: HOSTNAME:PORT)") {
      command, value throws(UsageError) in
      let node = try value.nonEmpty()
      // Devices push through a node under ids of this prefix (sync/push): a node's own may not look like one.
      guard !node.hasPrefix(SyncPushRequest.devicePrefix) else {
        throw value.invalid("a node's name may not begin with \"\(SyncPushRequest.devicePrefix)\" (devices' ids do)")
      }
      command.hosted.node = node
    },
    .value(
      "--apps", as: "FILE",
      help: """
        the deployment's other apps (#48), JSON: {"apps": [{"id", "jwtSecretFile" | "jwks",
        "jwtAudience", "jwtIssuer"?, "catalog", "accountRate"?, "accountMax…"?}]}; a
        session names one with initialize's app or the WebSocket path /apps/ID (the
        --catalog and --jwt-* flags are the app default); re-read on SIGHUP
        """
    ) { command, value in command.hosted.set { $0.appsFile = value.text } },
    .value(
      "--jwt-secret-file", as: "FILE",
      help: """
        HS256/HS384/HS512 secret (the file's bytes, one trailing newline dropped):
        at least 32 bytes (48 for HS384, 64 for HS512), mode 0600, owned by tipsd's user
        """
    ) { command, value in command.hosted.set { $0.jwtSecretFile = value.text } },
    .value(
      "--jwks", as: "FILE",
      help: """
        RS256/ES256 public keys by kid, as Firebase Auth, Auth0 and Supabase publish
        them (re-read on SIGHUP); needs --jwt-audience or --jwt-issuer
        """
    ) { command, value in command.hosted.set { $0.jwksFile = value.text } },
    .value("--jwt-audience", as: "AUD", help: "a token's aud must name this (repeatable: any of them)") {
      command, value throws(UsageError) in
      let audience = try value.nonEmpty()
      command.hosted.set { $0.audiences.append(audience) }
    },
    .value("--jwt-issuer", as: "ISS", help: "a token's iss must be this") { command, value throws(UsageError) in
      let issuer = try value.nonEmpty()
      command.hosted.set { $0.issuer = issuer }
    },
    .flag(
      "--jwt-any-audience",
      help: """
        accept a --jwks token whatever its aud and iss (tests and private key sets
        only: a shared JWKS such as Firebase's signs every project's tokens)
        """
    ) { $0.hosted.anyAudience = true },
    .value("--jwt-leeway", as: "SECONDS", help: "clock skew allowed on exp, nbf and iat (default 30)") {
      command, value throws(UsageError) in
      let seconds = try value.number()
      guard seconds >= 0, seconds <= 3600 else { throw value.invalid("must be from 0 to 3600 seconds") }
      command.hosted.set { $0.leeway = seconds }
    },
    .value(
      "--ops-device-days", as: "N",
      help: """
        keep the operations a device synced within N days has not read yet; the others go once a snapshot holds
        them (a device away longer reads the snapshot when back; default 30)
        """
    ) { command, value throws(UsageError) in
      let days = try value.positiveNumber(of: "days")
      command.hosted.set { $0.opsDeviceDays = days }
    },
    .value(
      "--postgres-timeout", as: "SECONDS",
      help: """
        a PostgreSQL link that has not answered for SECONDS is dropped and connected
        again (what waited gets -32016), so no request waits without end (default 15)
        """
    ) { command, value throws(UsageError) in
      let seconds = try value.positiveNumber(of: "seconds")
      command.hosted.set { $0.postgresTimeout = seconds }
    },
    .value(
      "--commit-pipeline", as: "N",
      help: """
        commit transactions a node has in flight at once; turns made meanwhile wait and go
        together in the next one (default 1)
        """
    ) { command, value throws(UsageError) in
      let transactions = try value.positiveInteger()
      command.hosted.set { $0.commitPipeline = transactions }
    },
    .flag(
      "--commit-per-account",
      help: """
        commit a turn with one tipsd.commit call an account instead of one set-based
        statement for all of them (the default, at a third of PostgreSQL's CPU a donation)
        """
    ) { command in command.hosted.set { $0.setBasedCommit = false } },
    .flag(
      "--set-based-commit",
      help: "one set-based statement for a turn's accounts (the default; kept for old command lines)"
    ) { command in command.hosted.set { $0.setBasedCommit = true } },
    .value(
      "--sign-in-timeout", as: "SECONDS",
      help: "close a connection not signed in within SECONDS of connecting (default 10)"
    ) { command, value throws(UsageError) in
      let seconds = try value.positiveNumber(of: "seconds")
      command.hosted.set { $0.signInTimeout = seconds }
    },
    .value(
      "--sign-in-failures", as: "N",
      help: """
        failed signature checks a second the node spends on at most (bursts of twice
        as many); past it new tokens are refused before any cryptography (default 2000)
        """
    ) { command, value throws(UsageError) in
      let rate = try value.positiveNumber(of: "checks a second")
      command.hosted.set { $0.signInFailureRate = rate }
    },
    .value(
      "--erasure-days", as: "DAYS",
      help: "an erased account's id is refused (sign-in, changes) for DAYS after accounts/delete (default 30)"
    ) { command, value throws(UsageError) in
      let days = try value.positiveNumber(of: "days")
      command.hosted.set { $0.erasureDays = days }
    },
    .value(
      "--admin-session-max", as: "HOURS",
      help: "an admin session (the admin token) ends after HOURS; sign in again (default 12)"
    ) { command, value throws(UsageError) in
      let hours = try value.positiveNumber(of: "hours")
      command.hosted.set { $0.adminSessionMax = hours * 3600 }
    },
    .value(
      "--max-resident-accounts", as: "N",
      help: "accounts held in memory at most; the least recently used without sessions go (default 100000)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.maxResidentAccounts = count }
    },
    .value("--account-rate", as: "N", help: "requests a second per account, bursts of twice as many (default 50)") {
      command, value throws(UsageError) in
      let rate = try value.positiveNumber(of: "requests a second")
      command.hosted.set { $0.accountRate = rate }
    },
    .value(
      "--account-input-rate", as: "BYTES",
      help:
        "bytes a second an account's sessions may send, bursts of twice as many; past it reading waits (default 262144)"
    ) { command, value throws(UsageError) in
      let rate = try value.positiveNumber(of: "bytes a second")
      command.hosted.set { $0.accountInputRate = rate }
    },
    .value(
      "--account-max-donations", as: "N", help: "donations an account may keep, every event together (default 100000)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxDonations = count }
    },
    .value(
      "--account-max-keys", as: "N",
      help: "idempotency keys an account may hold within --idempotency-hours (default 10000)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxIdempotencyKeys = count }
    },
    .value(
      "--account-max-state-bytes", as: "N",
      help: "bytes of an account's merged state (its snapshot) past which changes are refused (default 262144)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxStateBytes = count }
    },
    .value("--max-info-bytes", as: "N", help: "bytes of one donation's info JSON at most (default 4096)") {
      command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.maxInfoBytes = count }
    },
    .value(
      "--account-max-devices", as: "N",
      help: """
        devices an account syncs (sync/pull) at most; a new one replaces the least
        recently seen only once it was silent for --ops-device-days (default 16)
        """
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxDevices = count }
    },
    .value("--account-max-sessions", as: "N", help: "sessions signed in to one account on this node (default 32)") {
      command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxSessions = count }
    },
    .value(
      "--account-max-history-rows", as: "N",
      help: "lifecycle history rows an account may add on this node a day (UTC); then changes wait (default 10000)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.accountMaxHistoryRows = count }
    },
    .value(
      "--ops-keep", as: "N",
      help: "operations kept behind a snapshot for devices; one further behind reads the snapshot (default 1000)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.opsKeep = count }
    },
    .value(
      "--compaction-threshold", as: "N",
      help: "operations stored after an account's snapshot past which a node writes a new one (default 500)"
    ) { command, value throws(UsageError) in
      let count = try value.positiveInteger()
      command.hosted.set { $0.compactionThreshold = count }
    },
    .value(
      "--repair-interval", as: "SECONDS",
      help: "compare each resident account with PostgreSQL every SECONDS; read it again if they differ (300; 0: off)"
    ) { command, value throws(UsageError) in
      let seconds = try value.number()
      guard seconds >= 0 else { throw value.invalid("must be 0 (off) or a positive number of seconds") }
      command.hosted.set { $0.repairInterval = seconds }
    },
    .value(
      "--webhook-retry-first", as: "SECONDS",
      help: "the longest wait before a failed webhook's first retry; later waits double up to an hour (5)"
    ) { command, value throws(UsageError) in
      let seconds = try value.number()
      guard seconds > 0 else { throw value.invalid("must be a positive number of seconds") }
      command.hosted.set { $0.webhookRetryFirst = seconds }
    },
    .value(
      "--webhook-lease", as: "SECONDS",
      help: "how long the node delivering webhooks holds the fleet's lease unrenewed; another takes over after (10)"
    ) { command, value throws(UsageError) in
      let seconds = try value.number()
      guard seconds >= 1 else { throw value.invalid("must be at least 1 second") }
      command.hosted.set { $0.webhookLease = seconds }
    },

    .section("HTTP AND WEBSOCKET (off unless --listen is given)"),
    .value(
      "--listen", as: "HOST:PORT",
      help: """
        also serve HTTP/1.1 and WebSocket on HOST:PORT (repeatable): 127.0.0.1:8787,
        [::1]:8787, localhost:8787; port 0 picks a free port (logged). One JSON-RPC
        message per text frame; GET /healthz answers without a token, GET /metrics
        (Prometheus) with Authorization: Bearer <token>, GET / is the web inspector
        """
    ) { command, value throws(UsageError) in
      do throws(TransportError) {
        command.configuration.web.addresses.append(try ListenAddress(parsing: value.text))
      } catch {
        throw .invalid(error.message)
      }
    },
    .value(
      "--token-file", as: "PATH",
      help: """
        the token WebSocket clients must present (default: `token` beside the
        socket); created (mode 0600) when missing, kept across restarts. Hosted
        mode: the admin token, only when given (re-read on SIGHUP)
        """
    ) { $0.configuration.web.tokenFile = $1.text },
    .value(
      "--allow-origin", as: "ORIGIN",
      help: "also accept browser pages from ORIGIN, e.g. http://localhost:8081 (repeatable)"
    ) { $0.configuration.web.allowedOrigins.insert($1.text) },
    .value(
      "--tls-cert", as: "FILE", help: "PEM certificate: serve wss:// and https:// (needed for a non-loopback HOST)"
    ) {
      $0.configuration.web.tlsCertificate = $1.text
    },
    .value("--tls-key", as: "FILE", help: "its PEM private key") { $0.configuration.web.tlsKey = $1.text },
    .value(
      "--ping-interval", as: "SECONDS",
      help: "ping quiet WebSocket peers this often; close those silent for two (default 15)"
    ) { command, value throws(UsageError) in
      command.configuration.web.pingInterval = try value.positiveNumber(of: "seconds")
    },
  ]
}
