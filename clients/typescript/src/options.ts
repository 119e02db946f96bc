/**
 * The client's options and their defaults: {@link ClientOptions}, {@link ReconnectOptions}, the {@link Logger},
 * and the timers the client schedules with. `resolveOptions` turns options into the settings the other modules
 * read. Public types are re-exported by `./client`; the rest is internal.
 */
import type { TokenSource } from "./auth.js";
import type { ClientInfo } from "./protocol.js";
import type { TransportFactory } from "./transport.js";
import type { StorageAdapter } from "./offline.js";

/** Where the client's diagnostics go. `warn` is required; the others are optional. */
export interface Logger {
  warn(message: string, ...details: unknown[]): void;
  error?(message: string, ...details: unknown[]): void;
  debug?(message: string, ...details: unknown[]): void;
}

/** The default logger: `console.warn`/`console.error` with a `[tipsd]` prefix; debug is dropped. */
export const consoleLogger: Logger = {
  warn: (message, ...details) => {
    if (typeof console !== "undefined") console.warn(`[tipsd] ${message}`, ...details);
  },
  error: (message, ...details) => {
    if (typeof console !== "undefined") console.error(`[tipsd] ${message}`, ...details);
  },
};

const silentLogger: Logger = { warn: () => {} };

/** Writes a debug or error line, when the logger has that level. */
export function logAt(logger: Logger, level: "debug" | "error", message: string, ...details: unknown[]): void {
  const fn = logger[level];
  if (fn) fn.call(logger, message, ...details);
}

export interface ReconnectOptions {
  /** Delay before the first retry (default 250 ms). */
  initialDelayMs?: number;
  /** Cap on the delay (default 10 s). */
  maxDelayMs?: number;
  /** Growth per failed attempt (default 2). */
  factor?: number;
  /** Random spread, as a fraction of the delay (default 0.2: ±20%). */
  jitter?: number;
  /** Give up after this many consecutive failed attempts (default: never). */
  maxAttempts?: number;
}

export interface ClientOptions<S extends boolean = boolean> {
  /** Opens a connection; called again for every reconnection. See `./node` and `webSocketTransport`. */
  transport: TransportFactory;
  /** Sent in `initialize` (default `{name: "@tipsd/client"}`). */
  clientInfo?: ClientInfo;
  locale?: string;
  /** Hosted mode with several apps (`tipsd serve --apps`): the app to sign in to, sent in `initialize`. */
  app?: string;
  /**
   * `false` (default): calls never reject — when the daemon is absent, the connection drops, or a request fails,
   * they resolve to `undefined` and the problem is logged. `true`: calls reject with {@link ConnectionError} or
   * {@link TipsdError}, and `connect()` rejects when the first connection fails (for tests and tooling).
   */
  strict?: S;
  /** Diagnostics sink (default {@link consoleLogger}; `null` silences the client). */
  logger?: Logger | null;
  /** Reconnect with exponential backoff (default on). `false` disables it. */
  reconnect?: boolean | ReconnectOptions;
  /** A request unanswered after this long fails with `ETIMEDOUT` (default 30 s; 0 disables). */
  requestTimeoutMs?: number;
  /** An attempt to open the transport and initialize gives up after this long (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * After a reconnection, re-send what this client configured, defined and registered (display frequency,
   * parameter definitions and transient parameter values, tips, groups, event limits) before re-subscribing
   * (default true). Needed when the daemon came back without them (a fresh in-memory datastore, a new stdio
   * child); harmless otherwise.
   */
  restoreRegistrations?: boolean;
  /**
   * Hosted mode (`tipsd serve --hosted`): signs each session in inside `initialize` (`auth.token`) with the app's
   * JWT or the admin token — a string, or a provider asked before each connection attempt (`"connect"`,
   * `"reconnect"`) and before each refresh (`"refresh"`). How a Unix-socket or stdio client signs in; over a
   * WebSocket, `connectWebSocket`'s `token` presents it at the upgrade instead. A refused sign-in fails the attempt
   * (`lastError.code` `"EUNAUTHORIZED"`) and the client retries with backoff, asking the provider again.
   */
  token?: TokenSource;
  /**
   * Hosted mode: when `initialize` reports that the session's token expires (`auth.expiresAt`), ask the token
   * provider for a new one a margin before (60 s, or a tenth of the lifetime when shorter) and send it with
   * `auth/refresh` on the live connection — its subscriptions stay; should that fail, reconnect (default true).
   * Needs a provider (a fixed string cannot be renewed): the `token` option's, or the transport's
   * (`webSocketTransport(url, {token})`).
   */
  autoRefresh?: boolean;
  /**
   * Hosted mode, admin token: the account every account-scoped request of this client acts on (sent as
   * `params.account`). `client.forAccount(account)` gives a view acting on another one over the same connection.
   */
  account?: string;
  /**
   * Offline-first (issue #37): where the client keeps the last state of every tip it observed (with its display copy)
   * and the changes made while the node was out of reach — React Native's AsyncStorage, a browser's `localStorage`,
   * `memoryStorage()`, or `fileStorage(dir)` from `@tipsd/client/node`. With it, changes (`donate`, `displayed`,
   * `invalidate`, `performAction`, `setParameter`, …) are stored with their idempotency keys and sent in order
   * whenever connected, across restarts; tips are known before any connection (`storedTip`, `tipVisibilityStore`,
   * `observe`'s `cause: "stored"`). See the README's "Offline first".
   */
  storage?: StorageAdapter;
  /** The prefix of the keys written to `storage` (default `"tipsd"`); one per signed-in user of a device. */
  storageKey?: string;
  /** The most changes kept waiting in `storage` (default 10 000); one made beyond that is refused with a warning. */
  maxQueuedChanges?: number;
}

/**
 * The timer functions behind every delay and timeout of the client: reconnection backoff, request timeouts,
 * the connect timeout and `waitUntilConnected`. For tests only: they pass a manual clock as the undocumented
 * option `timers` (deliberately not part of {@link ClientOptions}) so that time advances only when they say so.
 */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Milliseconds since the epoch, which a token's expiry is compared with (default `Date.now()`). */
  now?(): number;
}

/** The host's timers, looked up at each call. */
const hostTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle),
  now: () => Date.now(),
};

const DEFAULT_CLIENT_INFO: ClientInfo = { name: "@tipsd/client", version: "0.1.0" };

/** {@link ClientOptions} with every default applied. */
export interface Settings {
  factory: TransportFactory;
  logger: Logger;
  strict: boolean;
  reconnect: Required<ReconnectOptions> | null;
  requestTimeoutMs: number;
  connectTimeoutMs: number;
  restoreRegistrations: boolean;
  clientInfo: ClientInfo;
  locale: string | undefined;
  app: string | undefined;
  timers: Timers;
  /** Sent in `initialize`'s `auth`. */
  token: TokenSource | undefined;
  /** What refreshes a hosted session: `token`, else the transport's. */
  refreshToken: TokenSource | undefined;
  autoRefresh: boolean;
  account: string | undefined;
  storage: StorageAdapter | undefined;
  storageKey: string | undefined;
  maxQueuedChanges: number | undefined;
}

export function resolveOptions(options: ClientOptions<boolean>): Settings {
  const r = options.reconnect ?? true;
  return {
    factory: options.transport,
    logger: options.logger === null ? silentLogger : options.logger ?? consoleLogger,
    strict: options.strict === true,
    reconnect:
      r === false
        ? null
        : {
            initialDelayMs: (r === true ? undefined : r.initialDelayMs) ?? 250,
            maxDelayMs: (r === true ? undefined : r.maxDelayMs) ?? 10_000,
            factor: (r === true ? undefined : r.factor) ?? 2,
            jitter: (r === true ? undefined : r.jitter) ?? 0.2,
            maxAttempts: (r === true ? undefined : r.maxAttempts) ?? Infinity,
          },
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    restoreRegistrations: options.restoreRegistrations ?? true,
    clientInfo: options.clientInfo ?? DEFAULT_CLIENT_INFO,
    locale: options.locale,
    app: options.app,
    timers: (options as { timers?: Timers }).timers ?? hostTimers,
    token: options.token,
    refreshToken: options.token ?? options.transport.token,
    autoRefresh: options.autoRefresh ?? true,
    account: options.account,
    storage: options.storage,
    storageKey: options.storageKey,
    maxQueuedChanges: options.maxQueuedChanges,
  };
}
