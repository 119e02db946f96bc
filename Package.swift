// swift-tools-version:6.0
// tipsd — TipKit's eligibility engine as a JSON-RPC daemon.
// Dependencies flow one way (docs/architecture.md draws the same; scripts/layers.txt lists what each may import):
//   TipsJSON, TipsTime ← TipsEngine ← TipsStore ─────────────────────┐
//              TipsEngine ← TipsCatalog ───────────────────┤
//              TipsEngine ← TipsMetrics ← TipsProtocol ────┤
//   TipsRecords, TipsTransport, TipsLogging ← TipsSync ──────┼─ TipsServer ──┐   (the daemon)
//                           TipsFraming, TipsTransport ────┘               │
//   TipsProtocol, TipsFraming, TipsTransport ← TipsClient ─────────────────┤
//   TipsProtocol, TipsFraming, TipsTransport ← TipsEmbedded ───────────────┼─ TipsCommands ← tipsd
//                               TipsJSON ← TipsTranscript ─────────────────┤   (the command line)
//           TipsCatalog, TipsClient ← TipsLanguageServer ──────────────────┘   (tipsd lsp)
//   TipsJSON, TipsTime, TipsSystem, COpenSSL ← TipsAuth ; TipsSync ← TipsHosted   (hosted mode: JWTs; state in PostgreSQL)
//   TipsSystem (POSIX calls) under TipsLogging, TipsStore, TipsCatalog, TipsTransport and TipsClient; CLibPQ (libpq)
//   under TipsSync
import PackageDescription

let swiftSettings: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
  name: "tipsd",
  products: [
    .executable(name: "tipsd", targets: ["tipsd"]),
    .library(name: "TipsEngine", targets: ["TipsEngine"]),
  ],
  targets: [
    // MARK: C system libraries
    .systemLibrary(name: "CLibUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
    .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    /// libwebsockets on tipsd's libuv loop (a foreign loop; the glue is Debian's libwebsockets-evlib-uv).
    .systemLibrary(
      name: "CLibWebSockets", pkgConfig: "libwebsockets",
      providers: [.apt(["libwebsockets-dev", "libwebsockets-evlib-uv"])]),
    /// libpq, PostgreSQL's client, for sync across devices (non-blocking API only, on the daemon's loop).
    .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
    /// OpenSSL 3's libcrypto, for hosted mode's JWT signatures (HMAC, RSA and ECDSA through EVP).
    .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),

    // MARK: TipsSystem — one funnel for POSIX calls (errno, EINTR)
    .target(name: "TipsSystem", swiftSettings: swiftSettings),

    // MARK: TipsLogging — the one logging type (`Logger`, its levels and handlers) of the daemon, sync and `tipsd lsp`
    .target(name: "TipsLogging", dependencies: ["TipsSystem"], swiftSettings: swiftSettings),

    // MARK: TipsJSON — byte-level JSON value, parser and writer (no I/O)
    .target(name: "TipsJSON", swiftSettings: swiftSettings),
    .testTarget(name: "TipsJSONTests", dependencies: ["TipsJSON"], swiftSettings: swiftSettings),

    // MARK: TipsTime — instants every layer shares: `Timestamp` (seconds since 1970) and ISO 8601 text (pure)
    .target(name: "TipsTime", swiftSettings: swiftSettings),

    // MARK: TipsEngine — pure rule engine with an injected clock
    .target(name: "TipsEngine", dependencies: ["TipsJSON", "TipsTime"], swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsEngineTests", dependencies: ["TipsEngine", "TipsJSON", "TipsTestSupport"], swiftSettings: swiftSettings
    ),

    // MARK: TipsRecords — what every store keeps beside the engine's state, as values: the sync layer's rows and
    // writes, the lifecycle history's chunk encoding (pure; no storage of its own)
    .target(name: "TipsRecords", dependencies: ["TipsEngine"], swiftSettings: swiftSettings),

    // MARK: TipsMetrics — seed 000's metrics over the lifecycle history (pure)
    .target(name: "TipsMetrics", dependencies: ["TipsEngine", "TipsJSON"], swiftSettings: swiftSettings),
    .testTarget(name: "TipsMetricsTests", dependencies: ["TipsMetrics", "TipsEngine"], swiftSettings: swiftSettings),

    /// The statistics simulation's door into TipsMetrics (Tests/Simulation, `make stats`): simulated accounts' histories
    /// as JSON lines in, pooled `metrics/get` results out.
    .executableTarget(
      name: "tipsd-metrics-pool", dependencies: ["TipsMetrics", "TipsEngine", "TipsJSON"], path: "Tests/MetricsPool",
      swiftSettings: swiftSettings),

    // MARK: TipsStore — SQLite persistence of engine state
    .target(
      name: "TipsStore", dependencies: ["TipsEngine", "TipsJSON", "TipsRecords", "TipsSystem", "CSQLite"],
      swiftSettings: swiftSettings
    ),
    .testTarget(
      name: "TipsStoreTests",
      dependencies: ["TipsStore", "TipsEngine", "TipsJSON", "TipsSystem", "tipsd-crash-child"],
      exclude: ["Fixtures"],
      swiftSettings: swiftSettings
    ),
    /// Child process for the store's SIGKILL crash test: applies mutations and reports each acknowledged one.
    .executableTarget(
      name: "tipsd-crash-child",
      dependencies: ["TipsStore", "TipsEngine", "TipsJSON", "TipsSystem"],
      path: "Tests/CrashChild",
      swiftSettings: swiftSettings
    ),

    // MARK: TipsCatalog — catalog files, message files, templates, `tipsd lint` and `tipsd strings` (no daemon state)
    .target(name: "TipsCatalog", dependencies: ["TipsEngine", "TipsJSON", "TipsSystem"], swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsCatalogTests",
      dependencies: ["TipsCatalog", "TipsEngine", "TipsJSON"],
      exclude: ["Fixtures"],
      swiftSettings: swiftSettings
    ),

    // MARK: TipsFraming — newline and Content-Length framing (pure)
    .target(name: "TipsFraming", swiftSettings: swiftSettings),
    .testTarget(name: "TipsFramingTests", dependencies: ["TipsFraming"], swiftSettings: swiftSettings),

    // MARK: TipsProtocol — JSON-RPC 2.0 envelopes, errors, and one typed request per method (Requests/)
    .target(
      name: "TipsProtocol", dependencies: ["TipsEngine", "TipsJSON", "TipsMetrics"], swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsProtocolTests", dependencies: ["TipsProtocol", "TipsEngine", "TipsJSON", "TipsTestSupport"],
      swiftSettings: swiftSettings),

    // MARK: TipsTransport — libuv event loop, sockets, pipes, timers, signals; HTTP and WebSocket (libwebsockets)
    .target(
      name: "TipsTransport", dependencies: ["CLibUV", "CLibWebSockets", "TipsSystem"], swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsTransportTests", dependencies: ["TipsTransport", "TipsSystem"], swiftSettings: swiftSettings),

    // MARK: TipsClient — one blocking JSON-RPC client for `tipsd call`, the tests and the benchmarks
    .target(
      name: "TipsClient", dependencies: ["TipsJSON", "TipsFraming", "TipsProtocol", "TipsTransport", "TipsSystem"],
      swiftSettings: swiftSettings),

    // MARK: TipsEmbedded — an in-memory event loop with manual time and in-memory streams: the server in-process
    // (`tipsd test`, and the in-process test suites)
    .target(
      name: "TipsEmbedded", dependencies: ["TipsEngine", "TipsJSON", "TipsFraming", "TipsProtocol", "TipsTransport"],
      swiftSettings: swiftSettings),

    // MARK: TipsTranscript — the transcript format of `tipsd test` and protocol/conformance (parse, match, JUnit)
    .target(name: "TipsTranscript", dependencies: ["TipsJSON"], swiftSettings: swiftSettings),

    // MARK: TipsLanguageServer — `tipsd lsp`: an LSP 3.17 server for catalogs and message files (a handler, and a
    // runner on stdin/stdout)
    .target(
      name: "TipsLanguageServer",
      dependencies: [
        "TipsCatalog", "TipsEngine", "TipsJSON", "TipsFraming", "TipsClient", "TipsLogging", "TipsProtocol",
        "TipsSystem",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsLanguageServerTests",
      dependencies: ["TipsLanguageServer", "TipsCatalog", "TipsJSON", "TipsTestSupport"],
      swiftSettings: swiftSettings),

    // MARK: TipsSync — sync across devices through PostgreSQL: the merge model, the libpq client, the outbox pump
    .target(
      name: "TipsSync",
      dependencies: [
        "TipsEngine", "TipsRecords", "TipsJSON", "TipsLogging", "TipsProtocol", "TipsTransport", "CLibPQ",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsSyncTests",
      dependencies: [
        "TipsSync", "TipsHosted", "TipsEngine", "TipsStore", "TipsJSON", "TipsTestSupport", "TipsEmbedded",
        "TipsLogging",
        "TipsProtocol", "TipsTransport", "tipsd",
      ],
      swiftSettings: swiftSettings
    ),

    // MARK: TipsHosted — hosted mode: every user's state in PostgreSQL (account snapshots, loading, group commit)
    .target(
      name: "TipsHosted",
      dependencies: [
        "TipsEngine", "TipsRecords", "TipsSync", "TipsJSON", "TipsTransport", "TipsLogging", "TipsSystem",
      ],
      swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsHostedTests",
      dependencies: [
        "TipsHosted", "TipsSync", "TipsEngine", "TipsStore", "TipsJSON", "TipsTestSupport", "TipsLogging",
      ],
      swiftSettings: swiftSettings),

    // MARK: TipsAuth — hosted mode's JWT verifier: HS* secrets and a JWKS (RS*, ES*), claims, subjects (no I/O but
    // reading its configuration files)
    .target(
      name: "TipsAuth", dependencies: ["TipsJSON", "TipsSystem", "TipsTime", "COpenSSL"], swiftSettings: swiftSettings
    ),
    .testTarget(
      name: "TipsAuthTests", dependencies: ["TipsAuth", "TipsJSON", "TipsSystem", "TipsTestSupport", "COpenSSL"],
      exclude: ["Fixtures"], swiftSettings: swiftSettings),

    // MARK: TipsWebhooks — Standard Webhooks signing (OpenSSL), URLs, backoff, and an HTTP/1.1 POST on the loop
    .target(
      name: "TipsWebhooks", dependencies: ["COpenSSL", "TipsTransport"], swiftSettings: swiftSettings),
    .testTarget(
      name: "TipsWebhooksTests", dependencies: ["TipsWebhooks", "TipsTransport"], swiftSettings: swiftSettings),

    // MARK: TipsServer — the daemon: wires engine, store, sync, protocol, framing and transport
    .target(
      name: "TipsServer",
      dependencies: [
        "TipsEngine", "TipsCatalog", "TipsStore", "TipsSync", "TipsProtocol", "TipsFraming", "TipsTransport",
        "TipsJSON",
        "TipsSystem", "TipsMetrics", "TipsLogging", "TipsHosted", "TipsAuth", "TipsWebhooks",
      ],
      swiftSettings: swiftSettings
    ),
    /// Test fixtures shared by the suites: the real `tipsd` binary as a process with a blocking JSON-RPC client
    /// (end-to-end suites), and an embedded event loop with in-memory streams and manual time (in-process suites).
    .target(
      name: "TipsTestSupport",
      dependencies: [
        "TipsEngine", "TipsJSON", "TipsFraming", "TipsProtocol", "TipsTransport", "TipsClient", "TipsEmbedded",
      ],
      path: "Tests/TipsTestSupport",
      swiftSettings: swiftSettings
    ),
    .testTarget(
      name: "TipsServerTests",
      dependencies: [
        "TipsServer", "TipsHosted", "TipsSync", "TipsJSON", "TipsFraming", "TipsLogging", "TipsProtocol", "TipsMetrics",
        "TipsTestSupport", "TipsAuth", "tipsd",
      ],
      swiftSettings: swiftSettings
    ),

    .testTarget(
      name: "TipsHardeningTests",
      dependencies: [
        "TipsServer", "TipsCommands", "TipsCatalog", "TipsJSON", "TipsFraming", "TipsTestSupport", "tipsd",
      ],
      swiftSettings: swiftSettings
    ),

    // MARK: TipsCommands — the command line: one type per subcommand over one argument reader
    .target(
      name: "TipsCommands",
      dependencies: [
        "TipsServer", "TipsClient", "TipsEmbedded", "TipsTranscript", "TipsLanguageServer", "TipsCatalog", "TipsEngine",
        "TipsJSON", "TipsLogging", "TipsMetrics", "TipsProtocol", "TipsStore", "TipsSync", "TipsSystem",
        "TipsTransport",
      ],
      swiftSettings: swiftSettings
    ),
    .testTarget(
      name: "TipsCommandsTests",
      dependencies: [
        "TipsCommands", "TipsServer", "TipsCatalog", "TipsJSON", "TipsMetrics", "TipsProtocol", "TipsSync",
        "TipsTestSupport", "TipsTransport", "tipsd",
      ],
      swiftSettings: swiftSettings
    ),

    // MARK: tipsd — thin executable
    .executableTarget(name: "tipsd", dependencies: ["TipsCommands"], swiftSettings: swiftSettings),

    // MARK: benchmarks (make bench)
    .executableTarget(
      name: "tipsd-bench",
      dependencies: [
        "TipsEngine", "TipsStore", "TipsJSON", "TipsProtocol", "TipsFraming", "TipsTransport", "TipsClient",
        "TipsSystem",
        "TipsTestSupport", "TipsAuth", "COpenSSL",
      ],
      path: "Benchmarks/tipsd-bench",
      swiftSettings: swiftSettings
    ),
  ],
  swiftLanguageModes: [.v6]
)
