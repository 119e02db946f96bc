/**
 * Connection and reconnection: the connection state, opening a transport and initializing it (with the connect
 * timeout and the protocol-version check), noticing a lost connection, exponential backoff with jitter, and the
 * no-op mode while the daemon is absent (one warning per outage). What is re-sent after connecting is decided
 * by the {@link ConnectionHooks} (registrations, then subscriptions).
 */
import { ConnectionError, TipsdError } from "./errors.js";
import { ClientInfo, InitializeResult, PROTOCOL_VERSION } from "./protocol.js";
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
}

function majorOf(version: string): string {
  return String(version).split(".")[0];
}

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
    });
    let init: InitializeResult;
    try {
      const params: { protocolVersion: string; clientInfo: ClientInfo; locale?: string } = { protocolVersion: PROTOCOL_VERSION, clientInfo: this.settings.clientInfo };
      if (this.settings.locale !== undefined) params.locale = this.settings.locale;
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
      const error = e instanceof ConnectionError ? e : new ConnectionError(e instanceof TipsdError ? "EPROTOCOL" : "ENOTCONNECTED", `initialize failed: ${asError(e).message}`, undefined, e);
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
    const wasConnected = this.everConnected;
    this.everConnected = true;
    this.failedAttempts = 0;
    // Everything the hook sends is written to the transport synchronously, before any waiting call is released,
    // so the daemon sees registrations and subscriptions first.
    this.hooks.connected(conn, wasConnected);
    this.outageWarned = false;
    this.setState("connected");
    if (wasConnected) logAt(this.settings.logger, "debug", "reconnected to tipsd");
    return true;
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
    this.hooks.lost(conn);
    if (this.currentState === "closed") return;
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
