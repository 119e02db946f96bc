/**
 * Calls: JSON-RPC request/response bookkeeping on one connection ({@link RpcConnection}: ids, in-flight
 * requests, request timeouts, correlating responses, batches, server→client requests), and {@link Calls}, which
 * sends a client call on the live connection and turns its outcome into what the public promise gives — the
 * result, `undefined` with a logged warning (lenient), or a rejection (strict).
 */
import { ConnectionError, TipsdError } from "./errors.js";
import { ErrorCode, JsonRpcErrorObject } from "./protocol.js";
import type { Transport } from "./transport.js";
import { Logger, logAt, Timers } from "./options.js";
import type { ConnectionState } from "./connection.js";

/** A call's result: `undefined` is possible unless the client is strict. */
export type Outcome<S extends boolean, T> = S extends true ? T : T | undefined;

/** What a call came to, before the strict/lenient policy is applied. */
export type CallResult = { ok: true; value: unknown } | { ok: false; error: Error };

export function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: unknown;
  /** Runs synchronously when the result arrives, before any later message is dispatched. */
  hook?: (result: unknown) => void;
}

export interface RpcSettings {
  logger: Logger;
  timers: Timers;
  /** 0 disables request timeouts. */
  requestTimeoutMs: number;
  /** Request ids are unique across a client's connections. */
  nextId(): number;
}

export interface RpcEvents {
  /** A server notification, while the connection is open. */
  notification(conn: RpcConnection, method: string, params: unknown): void;
  /** The transport closed (reported once by the transport). */
  closed(conn: RpcConnection, error?: Error): void;
  /** An error answering no request (id null): e.g. hosted mode's -32013 when the session's token expired. */
  error(conn: RpcConnection, error: JsonRpcErrorObject): void;
}

/** One live transport with its in-flight requests. */
export class RpcConnection {
  open = true;
  private readonly pending = new Map<number, Pending>();

  constructor(readonly transport: Transport, private readonly settings: RpcSettings, private readonly events: RpcEvents) {
    // The transport may deliver queued messages, or its close, as soon as the handlers are installed.
    transport.onMessage = (text) => this.receive(text);
    transport.onClose = (error) => events.closed(this, error);
  }

  /** Sends a request; the promise settles with its result or error, or when the connection is dropped. */
  request(method: string, params: unknown, hook?: (result: unknown) => void): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (!this.open) {
        reject(new ConnectionError("ECONNCLOSED", "the connection is closed", method));
        return;
      }
      const { timers, requestTimeoutMs } = this.settings;
      const id = this.settings.nextId();
      const message: { jsonrpc: "2.0"; id: number; method: string; params?: unknown } = { jsonrpc: "2.0", id, method };
      if (params !== undefined) message.params = params;
      const pending: Pending = { method, resolve, reject, timer: undefined, hook };
      if (requestTimeoutMs > 0) {
        pending.timer = timers.setTimeout(() => {
          if (this.pending.get(id) !== pending) return;
          this.pending.delete(id);
          reject(new ConnectionError("ETIMEDOUT", `no answer within ${requestTimeoutMs} ms`, method));
        }, requestTimeoutMs);
      }
      this.pending.set(id, pending);
      try {
        this.transport.send(JSON.stringify(message));
      } catch (e) {
        this.pending.delete(id);
        if (pending.timer !== undefined) timers.clearTimeout(pending.timer);
        reject(new ConnectionError("ECONNCLOSED", `send failed: ${asError(e).message}`, method, e));
      }
    });
  }

  /** Fire-and-forget request whose failure is only worth a debug line. */
  requestQuietly(method: string, params: unknown): void {
    this.request(method, params).catch((e) => logAt(this.settings.logger, "debug", `${method} failed`, e));
  }

  /** Sends a client→server notification. */
  notify(method: string, params: unknown): void {
    const message: { jsonrpc: "2.0"; method: string; params?: unknown } = { jsonrpc: "2.0", method };
    if (params !== undefined) message.params = params;
    try {
      this.transport.send(JSON.stringify(message));
    } catch (e) {
      logAt(this.settings.logger, "debug", `${method} not sent`, e);
    }
  }

  /** The connection is gone: fails every in-flight request with the error's code and message. */
  fail(error: ConnectionError): void {
    this.open = false;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      if (p.timer !== undefined) this.settings.timers.clearTimeout(p.timer);
      p.reject(new ConnectionError(error.code, error.message, p.method));
    }
  }

  private receive(text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.settings.logger.warn("received a message that is not JSON; ignored", text.length > 200 ? text.slice(0, 200) + "…" : text);
      return;
    }
    if (Array.isArray(message)) {
      for (const m of message) this.handle(m);
    } else {
      this.handle(message);
    }
  }

  private handle(message: unknown): void {
    if (!message || typeof message !== "object") return;
    const m = message as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: JsonRpcErrorObject };
    const logger = this.settings.logger;
    if (typeof m.method === "string") {
      if (m.id === undefined || m.id === null) {
        if (this.open) this.events.notification(this, m.method, m.params);
      } else {
        // The protocol defines no server→client requests; answer politely.
        try {
          this.transport.send(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: ErrorCode.MethodNotFound, message: `client does not implement ${m.method}` } }));
        } catch {
          /* ignore */
        }
      }
      return;
    }
    if (typeof m.id !== "number") {
      if (m.error) this.events.error(this, m.error);
      return;
    }
    const pending = this.pending.get(m.id);
    if (!pending) {
      logAt(logger, "debug", `response to unknown request ${m.id}`);
      return;
    }
    this.pending.delete(m.id);
    if (pending.timer !== undefined) this.settings.timers.clearTimeout(pending.timer);
    if (m.error) {
      pending.reject(new TipsdError(pending.method, m.error));
    } else {
      if (pending.hook) {
        try {
          pending.hook(m.result);
        } catch (e) {
          logAt(logger, "debug", "response hook failed", e);
        }
      }
      pending.resolve(m.result === undefined ? null : m.result);
    }
  }
}

/** What calls need from the connection manager. */
export interface CallLink {
  readonly state: ConnectionState;
  /** The connection attempt in progress, if any. */
  readonly attempt: Promise<boolean> | null;
  /** The live connection, if any. */
  readonly current: RpcConnection | null;
  /** Warns once per outage; false (nothing logged) when this outage was already reported. */
  warnOutage(message: string, ...details: unknown[]): boolean;
  /** Whether a lost connection is connected again by itself. */
  readonly reconnects?: boolean;
}

/**
 * A fresh idempotency key: 128 random bits (the platform's `crypto.randomUUID` where there is one — Node, browsers,
 * Hermes with a polyfill — else time, a counter and `Math.random`: unique enough for one account's retries).
 */
export function newIdempotencyKey(): string {
  const uuid = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto?.randomUUID;
  if (typeof uuid === "function") return uuid.call((globalThis as { crypto?: unknown }).crypto);
  keyCounter = (keyCounter + 1) % 0x100000000;
  const random = () => Math.floor(Math.random() * 0x100000000).toString(16).padStart(8, "0");
  return `${Date.now().toString(16)}-${keyCounter.toString(16)}-${random()}${random()}`;
}
let keyCounter = 0;

/** How long a change is retried with its idempotency key before its outcome is given up (30 s). */
export const CHANGE_RETRY_WINDOW_MS = 30_000;

/** Client calls: wait for a connection attempt in progress, send on the live connection, settle the outcome. */
export class Calls {
  constructor(
    private readonly link: CallLink,
    private readonly logger: Logger,
    private readonly strict: boolean,
    private readonly timers?: Timers,
  ) {}

  /**
   * A change (`events/donate`, `tips/invalidate`, …) sent with a fresh `idempotencyKey` and, when its outcome is
   * unknown — -32016 (not acknowledged), no answer in time, the connection lost with it in flight — sent again with
   * the same key once the daemon (or, hosted, any node) can take it: the daemon applies it once, and a retry of a
   * change already made gets its first reply. Retried for {@link CHANGE_RETRY_WINDOW_MS} at most.
   */
  async change(method: string, params: unknown): Promise<CallResult> {
    const keyed = { ...((params as object | undefined) ?? {}), idempotencyKey: newIdempotencyKey() };
    const started = this.now();
    let first: CallResult | undefined;
    for (let attempt = 0; ; attempt++) {
      const r = await this.call(method, keyed);
      if (r.ok) return r;
      const e = r.error;
      const unknown =
        (e instanceof TipsdError && e.code === ErrorCode.Unavailable) ||
        (e instanceof ConnectionError && (e.code === "ECONNCLOSED" || e.code === "ETIMEDOUT")) ||
        (first !== undefined && e instanceof ConnectionError && e.code === "ENOTCONNECTED");
      // Giving up says what happened to the change itself (not that a later attempt found no connection).
      if (!unknown) return first && e instanceof ConnectionError ? first : r;
      first = first ?? r;
      const connectionLost = e instanceof ConnectionError;
      if (this.now() - started > CHANGE_RETRY_WINDOW_MS || (connectionLost && this.link.reconnects === false)) {
        return first;
      }
      const retryAfter = e instanceof TipsdError ? Number((e.data as { retryAfter?: unknown } | undefined)?.retryAfter) : NaN;
      const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : Math.min(2_000, 100 * 2 ** attempt);
      await this.sleep(wait);
      if (this.link.state === "closed") return first;
      if (this.link.state === "connecting" && this.link.attempt) await this.link.attempt;
    }
  }

  private now(): number {
    return this.timers?.now?.() ?? Date.now();
  }

  private sleep(ms: number): Promise<void> {
    const timers = this.timers;
    return new Promise((resolve) => (timers ? timers.setTimeout(resolve, ms) : setTimeout(resolve, ms)));
  }

  /**
   * Sends a request once a connection is there; never throws — the result says what happened. When connected,
   * the request is written synchronously, so calls reach the daemon in the order they were made.
   */
  async call(method: string, params: unknown): Promise<CallResult> {
    const link = this.link;
    if (link.state === "closed") return { ok: false, error: new ConnectionError("ECLOSED", "the client is closed", method) };
    if (link.state === "connecting" && link.attempt) await link.attempt;
    const conn = link.current;
    if (!conn || !conn.open || link.state !== "connected") {
      return { ok: false, error: new ConnectionError("ENOTCONNECTED", "tipsd is not connected", method) };
    }
    try {
      return { ok: true, value: await conn.request(method, params) };
    } catch (e) {
      return { ok: false, error: asError(e) };
    }
  }

  /** Turns a result into the public promise's value: strict rejects; otherwise log and resolve undefined. */
  settle(r: CallResult): unknown {
    if (r.ok) return r.value;
    if (this.strict) throw r.error;
    const e = r.error;
    if (e instanceof ConnectionError) {
      if (e.code === "ECLOSED") {
        logAt(this.logger, "debug", e.message);
      } else if (!this.link.warnOutage(`${e.message}; calls are no-ops until it is back`, e.code)) {
        logAt(this.logger, "debug", `no-op: ${e.message}`);
      }
    } else {
      this.logger.warn(e.message);
    }
    return undefined;
  }

  /** `call`, then `settle`. */
  request(method: string, params: unknown): Promise<unknown> {
    return this.call(method, params).then((r) => this.settle(r));
  }
}
