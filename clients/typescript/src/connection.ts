/**
 * Connection and reconnection: the connection state, opening a transport and initializing it (with the connect
 * timeout, the protocol-version check and, in hosted mode, the sign-in), noticing a lost connection, exponential
 * backoff with jitter, and the no-op mode while the daemon is absent (one warning per outage). A hosted session's
 * token is refreshed before it expires (`auth/refresh` on the live connection; a reconnection when that fails or
 * when the daemon ends the session). What is re-sent after connecting is decided by the {@link ConnectionHooks}
 * (registrations, then subscriptions).
 */
import { refreshDelayMs, resolveToken, TokenProvider } from "./auth.js";
import { ConnectionError, TipsdError } from "./errors.js";
import { ErrorCode, InitializeParams, InitializeResult, JsonRpcErrorObject, PROTOCOL_VERSION, SignIn } from "./protocol.js";
import type { Transport } from "./transport.js";
import { asError, CallLink, RpcConnection, RpcSettings } from "./calls.js";
import { logAt, Settings } from "./options.js";

export type ConnectionState = "connecting" | "connected" | "disconnected" | "closed";

/** What the rest of the client does when the connection changes. */
export interface ConnectionHooks {
  /**
   * A connection is up and initialized. Runs before the state becomes `"connected"` and before waiting calls are
   * released: whatever it sends reaches the daemon first.
   */
  connected(conn: RpcConnection, reconnection: boolean): void;
  /** The live connection was lost (its requests have failed; the server-side subscriptions are gone). */
  lost(conn: RpcConnection): void;
  /** `close()`: the state is already `"closed"`; the connection is dropped right after. */
  closing(): void;
  /** A server notification on an open connection. */
  notification(conn: RpcConnection, method: string, params: unknown): void;
}

/** Where the connection publishes what the client exposes (the TipsClient's public fields). */
export interface ConnectionRecord {
  initializeResult: InitializeResult | undefined;
  lastError: ConnectionError | undefined;
  /** Hosted mode: who the session is signed in as, and until when (updated by each refresh). */
  auth: SignIn | undefined;
}

function majorOf(version: string): string {
  return String(version).split(".")[0];
}

/** The longest delay a timer takes (setTimeout's limit, ~24.8 days); a later refresh is scheduled in steps. */
const MAX_TIMER_MS = 0x7fffffff;

export class ConnectionManager implements CallLink {
  /** The live, initialized connection. */
  current: RpcConnection | null = null;
  /** The connection attempt in progress. */
  attempt: Promise<boolean> | null = null;
  private currentState: ConnectionState = "connecting";
  private failedAttempts = 0;
  private reconnectTimer: unknown = undefined;
  private nextId = 1;
  private outageWarned = false;
  private everConnected = false;
  /** Connection attempts started (the first asks the token provider for `"connect"`, later ones `"reconnect"`). */
  private attempts = 0;
  private refreshTimer: unknown = undefined;
  /** A connection about to close that is replaced at once (its token could not be refreshed, or expired). */
  private replacing: RpcConnection | null = null;
  private warnedFixedToken = false;
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly rpc: RpcSettings;

  constructor(private readonly settings: Settings, private readonly record: ConnectionRecord, private readonly hooks: ConnectionHooks) {
    this.rpc = {
      logger: settings.logger,
      timers: settings.timers,
      requestTimeoutMs: settings.requestTimeoutMs,
      nextId: () => this.nextId++,
    };
  }

  get state(): ConnectionState {
    return this.currentState;
  }

  /** Whether a lost connection is connected again by itself (reconnection on, not closed). */
  get reconnects(): boolean {
    return this.settings.reconnect !== null && this.currentState !== "closed";
  }

  onChange(listener: (state: ConnectionState) => void): () => void {
    this.stateListeners.add(listener);
    return () => {
      this.stateListeners.delete(listener);
    };
  }

  warnOutage(message: string, ...details: unknown[]): boolean {
    if (this.outageWarned) return false;
    this.outageWarned = true;
    this.settings.logger.warn(message, ...details);
    return true;
  }

  waitUntilConnected(timeoutMs = this.settings.connectTimeoutMs): Promise<boolean> {
    if (this.currentState === "connected") return Promise.resolve(true);
    if (this.currentState === "closed") return Promise.resolve(false);
    const timers = this.settings.timers;
    return new Promise<boolean>((resolve) => {
      let done = false;
      const finish = (value: boolean) => {
        if (done) return;
        done = true;
        timers.clearTimeout(timer);
        off();
        resolve(value);
      };
      const timer = timers.setTimeout(() => finish(false), timeoutMs);
      const off = this.onChange((state) => {
        if (state === "connected") finish(true);
        else if (state === "closed") finish(false);
      });
    });
  }

  ready(): Promise<boolean> {
    if (this.attempt) return this.attempt;
    return Promise.resolve(this.currentState === "connected");
  }

  async close(shutdown: boolean): Promise<void> {
    if (this.currentState === "closed") return;
    const conn = this.current;
    if (shutdown && conn && conn.open) {
      try {
        await conn.request("shutdown", undefined);
        conn.notify("exit", undefined);
      } catch (e) {
        logAt(this.settings.logger, "debug", "shutdown during close failed", e);
      }
    }
    this.setState("closed");
    this.cancelRefresh();
    if (this.reconnectTimer !== undefined) {
      this.settings.timers.clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
    this.hooks.closing();
    if (conn) {
      this.current = null;
      conn.fail(new ConnectionError("ECLOSED", "the client was closed"));
      try {
        conn.transport.close();
      } catch (e) {
        logAt(this.settings.logger, "debug", "transport close failed", e);
      }
    }
  }

  reconnectNow(): Promise<boolean> {
    if (this.currentState !== "disconnected") return this.ready();
    if (this.reconnectTimer !== undefined) {
      this.settings.timers.clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
    return this.startAttempt();
  }

  /** A method, so that TypeScript does not narrow the state across awaits. */
  private isClosed(): boolean {
    return this.currentState === "closed";
  }

  private setState(state: ConnectionState): void {
    if (this.currentState === state) return;
    this.currentState = state;
    for (const listener of [...this.stateListeners]) {
      try {
        listener(state);
      } catch (e) {
        logAt(this.settings.logger, "debug", "a connection-state listener threw", e);
      }
    }
  }

  startAttempt(): Promise<boolean> {
    if (this.attempt) return this.attempt;
    this.setState("connecting");
    const attempt = this.connectOnce().then(
      (ok) => ok,
      (e) => {
        logAt(this.settings.logger, "debug", "connection attempt failed unexpectedly", e);
        return false;
      },
    );
    this.attempt = attempt;
    attempt.then(() => {
      if (this.attempt === attempt) this.attempt = null;
    });
    return attempt;
  }

  private async connectOnce(): Promise<boolean> {
    const reason = this.attempts++ === 0 ? "connect" : "reconnect";
    let token: string | undefined;
    if (this.settings.token !== undefined) {
      try {
        token = await resolveToken(this.settings.token, reason);
      } catch (e) {
        this.attemptFailed(new ConnectionError("ENOTCONNECTED", `cannot sign in: ${asError(e).message}`, undefined, e));
        return false;
      }
      if (this.isClosed()) return false;
    }
    let transport: Transport;
    try {
      transport = await this.openTransport();
    } catch (e) {
      this.attemptFailed(new ConnectionError("ENOTCONNECTED", `cannot reach tipsd: ${asError(e).message}`, undefined, e));
      return false;
    }
    if (this.isClosed()) {
      transport.close();
      return false;
    }
    const conn = new RpcConnection(transport, this.rpc, {
      notification: (c, method, params) => this.hooks.notification(c, method, params),
      closed: (c, error) => this.connectionClosed(c, error),
      error: (c, error) => this.daemonError(c, error),
    });
    let init: InitializeResult;
    try {
      const params: InitializeParams = { protocolVersion: PROTOCOL_VERSION, clientInfo: this.settings.clientInfo };
      if (this.settings.locale !== undefined) params.locale = this.settings.locale;
      if (this.settings.app !== undefined) params.app = this.settings.app;
      if (token !== undefined) params.auth = { token };
      init = (await this.withTimeout(conn.request("initialize", params), this.settings.connectTimeoutMs, "initialize")) as InitializeResult;
      if (!init || typeof init !== "object" || majorOf(init.protocolVersion) !== majorOf(PROTOCOL_VERSION)) {
        throw new ConnectionError("EPROTOCOL", `tipsd speaks protocol ${init && init.protocolVersion}, this client ${PROTOCOL_VERSION}`);
      }
    } catch (e) {
      conn.fail(new ConnectionError("ECONNCLOSED", "initialize failed"));
      try {
        transport.close();
      } catch {
        /* ignore */
      }
      const code = !(e instanceof TipsdError) ? "ENOTCONNECTED" : e.code === ErrorCode.Unauthorized ? "EUNAUTHORIZED" : "EPROTOCOL";
      const error = e instanceof ConnectionError ? e : new ConnectionError(code, `initialize failed: ${asError(e).message}`, undefined, e);
      this.attemptFailed(error);
      return false;
    }
    if (!conn.open || this.isClosed()) {
      if (conn.open) transport.close();
      if (!this.isClosed()) this.attemptFailed(new ConnectionError("ENOTCONNECTED", "the connection closed during initialize"));
      return false;
    }
    this.current = conn;
    this.record.initializeResult = init;
    this.record.auth = init.auth;
    const wasConnected = this.everConnected;
    this.everConnected = true;
    this.failedAttempts = 0;
    // Everything the hook sends is written to the transport synchronously, before any waiting call is released,
    // so the daemon sees registrations and subscriptions first.
    this.hooks.connected(conn, wasConnected);
    this.outageWarned = false;
    this.setState("connected");
    if (wasConnected) logAt(this.settings.logger, "debug", "reconnected to tipsd");
    this.scheduleRefresh(conn);
    return true;
  }

  // ─── Hosted mode: keeping the session signed in ─────────────────────────────────────────────────────────────

  /** Arms the refresh of `conn`'s token, when the daemon said when it expires. */
  private scheduleRefresh(conn: RpcConnection): void {
    this.cancelRefresh();
    const expiresAt = this.record.auth ? this.record.auth.expiresAt : null;
    if (typeof expiresAt !== "number" || !this.settings.autoRefresh || this.current !== conn) return;
    const source = this.settings.refreshToken;
    if (typeof source !== "function") {
      if (!this.warnedFixedToken) {
        this.warnedFixedToken = true;
        this.settings.logger.warn(
          `the session's token expires at ${new Date(expiresAt * 1000).toISOString()} and cannot be refreshed: give a token provider (a function) instead of a string`,
        );
      }
      return;
    }
    const timers = this.settings.timers;
    const delay = refreshDelayMs(expiresAt, timers.now ? timers.now() : Date.now());
    this.refreshTimer = timers.setTimeout(
      () => {
        this.refreshTimer = undefined;
        if (delay > MAX_TIMER_MS) this.scheduleRefresh(conn);
        else void this.refresh(conn, source);
      },
      Math.min(delay, MAX_TIMER_MS),
    );
  }

  /** `auth/refresh` succeeded on the live connection (the client's own refresh, or the app's call). */
  refreshed(signIn: SignIn): void {
    const conn = this.current;
    if (!conn || !signIn || typeof signIn !== "object") return;
    this.record.auth = signIn;
    this.scheduleRefresh(conn);
  }

  private cancelRefresh(): void {
    if (this.refreshTimer === undefined) return;
    this.settings.timers.clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
  }

  /** Asks the provider for a new token and sends it with `auth/refresh`; on failure, replaces the connection. */
  private async refresh(conn: RpcConnection, source: TokenProvider): Promise<void> {
    const live = () => this.current === conn && conn.open && this.currentState === "connected";
    if (!live()) return;
    let signIn: SignIn;
    try {
      const token = await resolveToken(source, "refresh");
      if (!live()) return;
      signIn = (await conn.request("auth/refresh", { token })) as SignIn;
    } catch (e) {
      if (!live()) return;
      this.settings.logger.warn(`could not refresh the session's token (${asError(e).message}); reconnecting`);
      this.replace(conn);
      return;
    }
    if (!live()) return;
    logAt(this.settings.logger, "debug", "refreshed the session's token");
    this.refreshed(signIn);
  }

  /** Closes `conn` and connects again at once (the token provider is asked with `"reconnect"`). */
  private replace(conn: RpcConnection): void {
    this.replacing = conn;
    try {
      conn.transport.close();
    } catch (e) {
      logAt(this.settings.logger, "debug", "transport close failed", e);
    }
  }

  /** An error answering no request. Hosted mode's -32013 ends the session (the daemon closes it next). */
  private daemonError(conn: RpcConnection, error: JsonRpcErrorObject): void {
    if (error.code !== ErrorCode.Unauthorized || this.current !== conn) {
      this.settings.logger.warn(`tipsd reported an error: ${error.message} (${error.code})`);
      return;
    }
    const data = error.data as { reason?: unknown } | undefined;
    const reason = data && typeof data.reason === "string" ? data.reason : "unauthorized";
    this.record.lastError = new ConnectionError("EUNAUTHORIZED", `tipsd ended the session (${reason}): ${error.message}`, undefined, new TipsdError("session", error));
    this.settings.logger.warn(`${this.record.lastError.message}; signing in again`);
    this.replacing = conn;
  }

  private openTransport(): Promise<Transport> {
    const { timers, connectTimeoutMs } = this.settings;
    return new Promise<Transport>((resolve, reject) => {
      let settled = false;
      const timer = timers.setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new Error(`timed out after ${connectTimeoutMs} ms`));
      }, connectTimeoutMs);
      Promise.resolve()
        .then(() => this.settings.factory())
        .then(
          (transport) => {
            timers.clearTimeout(timer);
            if (settled) {
              transport.close();
              return;
            }
            settled = true;
            resolve(transport);
          },
          (e) => {
            timers.clearTimeout(timer);
            if (settled) return;
            settled = true;
            reject(e);
          },
        );
    });
  }

  private withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    if (!(ms > 0)) return p;
    const timers = this.settings.timers;
    return new Promise<T>((resolve, reject) => {
      const timer = timers.setTimeout(() => reject(new ConnectionError("ETIMEDOUT", `${what} timed out after ${ms} ms`)), ms);
      p.then(
        (v) => {
          timers.clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          timers.clearTimeout(timer);
          reject(e);
        },
      );
    });
  }

  private connectionClosed(conn: RpcConnection, error?: Error): void {
    if (!conn.open) return;
    conn.fail(new ConnectionError("ECONNCLOSED", "the connection to tipsd closed"));
    if (this.current !== conn) return; // closed during initialize: the attempt handles it
    this.current = null;
    this.cancelRefresh();
    this.hooks.lost(conn);
    if (this.currentState === "closed") return;
    if (this.replacing === conn) {
      // Expected: the session is signed in again at once, with a new token.
      this.replacing = null;
      this.setState("disconnected");
      this.startAttempt();
      return;
    }
    this.settings.logger.warn(`lost the connection to tipsd${error ? `: ${error.message}` : ""}; calls are no-ops until it is back`);
    this.outageWarned = true;
    this.setState("disconnected");
    this.scheduleReconnect();
  }

  private attemptFailed(error: ConnectionError): void {
    this.failedAttempts++;
    if (this.currentState === "closed") return;
    if (!this.warnOutage(`${error.message}; calls are no-ops until it is reachable`)) {
      logAt(this.settings.logger, "debug", `reconnection attempt ${this.failedAttempts} failed: ${error.message}`);
    }
    this.record.lastError = error;
    this.setState("disconnected");
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const r = this.settings.reconnect;
    if (!r || this.currentState === "closed" || this.reconnectTimer !== undefined) return;
    if (this.failedAttempts >= r.maxAttempts) {
      this.settings.logger.warn(`giving up on tipsd after ${this.failedAttempts} attempts`);
      return;
    }
    const base = Math.min(r.maxDelayMs, r.initialDelayMs * Math.pow(r.factor, Math.max(0, this.failedAttempts - 1)));
    const spread = base * r.jitter;
    const delay = Math.max(0, Math.min(r.maxDelayMs, base - spread + Math.random() * 2 * spread));
    this.reconnectTimer = this.settings.timers.setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.currentState === "disconnected") this.startAttempt();
    }, delay);
  }
}
