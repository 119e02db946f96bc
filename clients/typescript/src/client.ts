/**
 * TipsClient: JSON-RPC 2.0 over any {@link Transport}, with typed methods for every tipsd method, listener-based
 * subscriptions, and resilience: when the daemon is absent or the connection drops, calls resolve to
 * `undefined` with one logged warning per outage (unless `strict`), and the client reconnects with exponential
 * backoff, re-registers what it registered and re-establishes its subscriptions.
 */
import { ConnectionError, TipsdError } from "./errors";
import {
  Action,
  ActionPerformedParams,
  ClientInfo,
  ClientNotificationMap,
  ClockNowResult,
  ClockResult,
  ConfigureParams,
  ConfigureResult,
  CurrentTipChangedParams,
  DisplayFrequency,
  DonateResult,
  ErrorCode,
  EventConfigureResult,
  Explanation,
  GroupDefinition,
  GroupRegisterResult,
  InitializeResult,
  JSONObject,
  JsonRpcErrorObject,
  Method,
  ObserveParams,
  ObserveResult,
  ParameterDefinition,
  ParametersDefineResult,
  ParametersSetResult,
  ParameterValue,
  ParamsOf,
  PROTOCOL_VERSION,
  Reason,
  RegisterResult,
  RemovedResult,
  ResultOf,
  ShouldDisplayChangedParams,
  Status,
  StatusResult,
  TipContent,
  TipDefinition,
  TipState,
  UnregisterResult,
} from "./protocol";
import type { Transport, TransportFactory } from "./transport";

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
}

export type ConnectionState = "connecting" | "connected" | "disconnected" | "closed";

/** A call's result: `undefined` is possible unless the client is strict. */
export type Outcome<S extends boolean, T> = S extends true ? T : T | undefined;

/** Returned by every subscription; calling it more than once is harmless. */
export type Unsubscribe = () => void;

/** Why a listener is being called. */
export type ChangeCause =
  /** The first state seen, from the `tips/observe` result. */
  | "initial"
  /** A server notification. */
  | "notification"
  /** After a reconnection, the `tips/observe` result differed from what the listener last saw. */
  | "resync";

/** A tip's visibility as delivered to an `observe` listener. */
export interface TipChange {
  type: "tip";
  id: string;
  shouldDisplay: boolean;
  status: Status;
  reason?: Reason;
  tip: TipContent;
  cause: ChangeCause;
}

/** A group's current tip as delivered to an `observe` listener. */
export interface GroupChange {
  type: "group";
  group: string;
  tipId: string | null;
  cause: ChangeCause;
}

/** What an `onAction` listener receives: the tip and its performed actions (always an array). */
export interface ActionEvent {
  tipId: string;
  actions: Action[];
}

export type ObserveTarget = string | { ids?: string[]; groups?: string[] };

const DEFAULT_CLIENT_INFO: ClientInfo = { name: "@tipsd/client", version: "0.1.0" };

interface Pending {
  method: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: unknown;
  /** Runs synchronously when the result arrives, before any later message is dispatched. */
  hook?: (result: unknown) => void;
}

/** One live transport with its in-flight requests and server-side subscription ids. */
interface Connection {
  transport: Transport;
  pending: Map<number, Pending>;
  /** Server subscription id (stringified) → local subscriber. */
  subscriptions: Map<string, Subscriber>;
  open: boolean;
}

interface Observer {
  kind: "observer";
  params: ObserveParams;
  listener: (change: TipChange | GroupChange) => void;
  active: boolean;
  conn?: Connection;
  subscription?: string | number;
  /** True while a `tips/observe` for the current connection is in flight. */
  requesting?: Connection;
  lastTip: Map<string, boolean>;
  lastGroup: Map<string, string | null>;
}

interface ActionSubscriber {
  kind: "actions";
  tipIds?: string[];
  listener: (event: ActionEvent) => void;
  active: boolean;
  conn?: Connection;
  subscription?: string | number;
  requesting?: Connection;
}

type Subscriber = Observer | ActionSubscriber;

function subKey(id: string | number): string {
  return typeof id === "number" ? `n${id}` : `s${id}`;
}

function majorOf(version: string): string {
  return String(version).split(".")[0];
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * A tipsd client. Create one with {@link connect} (waits for the first connection attempt) or
 * {@link createClient} (returns at once — handy for a module-level singleton in an app).
 */
export class TipsClient<S extends boolean = false> {
  private readonly factory: TransportFactory;
  private readonly logger: Logger;
  private readonly strict: boolean;
  private readonly reconnectOptions: Required<ReconnectOptions> | null;
  private readonly requestTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly restore: boolean;
  private readonly clientInfo: ClientInfo;
  private readonly locale: string | undefined;

  private conn: Connection | null = null;
  private currentState: ConnectionState = "connecting";
  private attempt: Promise<boolean> | null = null;
  private failedAttempts = 0;
  private reconnectTimer: unknown = undefined;
  private nextId = 1;
  private outageWarned = false;
  private everConnected = false;
  private readonly stateListeners = new Set<(state: ConnectionState) => void>();
  private readonly observers = new Set<Observer>();
  private readonly actionSubscribers = new Set<ActionSubscriber>();

  // What this client configured and registered, replayed after a reconnection.
  private displayFrequency: DisplayFrequency | undefined;
  private readonly parameters = new Map<string, ParameterDefinition>();
  private readonly transientValues = new Map<string, ParameterValue>();
  private readonly tips = new Map<string, TipDefinition>();
  private readonly groups = new Map<string, GroupDefinition>();
  private readonly eventLimits = new Map<string, number>();

  /** The daemon's `initialize` result for the current (or last) connection. */
  initializeResult: InitializeResult | undefined;

  constructor(options: ClientOptions<S>) {
    if (!options || typeof options.transport !== "function") throw new TypeError("TipsClient: options.transport must be a function");
    this.factory = options.transport;
    this.logger = options.logger === null ? silentLogger : options.logger ?? consoleLogger;
    this.strict = options.strict === true;
    const r = options.reconnect ?? true;
    this.reconnectOptions =
      r === false
        ? null
        : {
            initialDelayMs: (r === true ? undefined : r.initialDelayMs) ?? 250,
            maxDelayMs: (r === true ? undefined : r.maxDelayMs) ?? 10_000,
            factor: (r === true ? undefined : r.factor) ?? 2,
            jitter: (r === true ? undefined : r.jitter) ?? 0.2,
            maxAttempts: (r === true ? undefined : r.maxAttempts) ?? Infinity,
          };
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    this.restore = options.restoreRegistrations ?? true;
    this.clientInfo = options.clientInfo ?? DEFAULT_CLIENT_INFO;
    this.locale = options.locale;
    this.startAttempt();
  }

  // ─── Connection state ─────────────────────────────────────────────────────────────────────────────────────

  get state(): ConnectionState {
    return this.currentState;
  }

  get connected(): boolean {
    return this.currentState === "connected";
  }

  get isStrict(): S {
    return this.strict as S;
  }

  /** Listens to connection state changes. */
  onConnectionChange(listener: (state: ConnectionState) => void): Unsubscribe {
    this.stateListeners.add(listener);
    return () => {
      this.stateListeners.delete(listener);
    };
  }

  /**
   * Resolves once the client is connected (true), or false when the current attempt fails or the timeout
   * passes. Never rejects.
   */
  async waitUntilConnected(timeoutMs = this.connectTimeoutMs): Promise<boolean> {
    if (this.currentState === "connected") return true;
    if (this.currentState === "closed") return false;
    return new Promise<boolean>((resolve) => {
      let done = false;
      const finish = (value: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        off();
        resolve(value);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      const off = this.onConnectionChange((state) => {
        if (state === "connected") finish(true);
        else if (state === "closed") finish(false);
      });
    });
  }

  /** Waits for the connection attempt in progress, if any; true when connected afterwards. */
  ready(): Promise<boolean> {
    if (this.attempt) return this.attempt;
    return Promise.resolve(this.currentState === "connected");
  }

  /**
   * Closes the client for good: no more reconnection; pending and later calls become no-ops (or reject with
   * `ECLOSED` when strict). With `{shutdown: true}` it first sends `shutdown` and `exit`, which makes a stdio
   * daemon exit with status 0.
   */
  async close(options: { shutdown?: boolean } = {}): Promise<void> {
    if (this.currentState === "closed") return;
    const conn = this.conn;
    if (options.shutdown && conn && conn.open) {
      try {
        await this.send(conn, "shutdown", undefined);
        this.sendNotification(conn, "exit", undefined);
      } catch (e) {
        this.log("debug", "shutdown during close failed", e);
      }
    }
    this.setState("closed");
    if (this.reconnectTimer !== undefined) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
    for (const o of this.observers) o.active = false;
    for (const a of this.actionSubscribers) a.active = false;
    this.observers.clear();
    this.actionSubscribers.clear();
    if (conn) {
      this.conn = null;
      this.dropConnection(conn, new ConnectionError("ECLOSED", "the client was closed"));
      try {
        conn.transport.close();
      } catch (e) {
        this.log("debug", "transport close failed", e);
      }
    }
  }

  // ─── Typed methods ────────────────────────────────────────────────────────────────────────────────────────

  /** `events/donate`: records an event; resolves to the stored donation count. */
  donate(id: string, info?: JSONObject): Promise<Outcome<S, DonateResult>> {
    return this.request("events/donate", info === undefined ? { id } : { id, info });
  }

  /** `events/configure`: caps the stored donations of an event. */
  configureEvent(id: string, maxDonations: number): Promise<Outcome<S, EventConfigureResult>> {
    this.eventLimits.set(id, maxDonations);
    return this.request("events/configure", { id, maxDonations });
  }

  /** `tips/invalidate` (reason defaults to `tipClosed` on the daemon). */
  invalidate(id: string, reason?: Reason): Promise<Outcome<S, TipState>> {
    return this.request("tips/invalidate", reason === undefined ? { id } : { id, reason });
  }

  /** `tips/resetEligibility`. */
  resetEligibility(id: string): Promise<Outcome<S, TipState>> {
    return this.request("tips/resetEligibility", { id });
  }

  /** `tips/configure`. */
  configure(options: ConfigureParams | DisplayFrequency): Promise<Outcome<S, ConfigureResult>> {
    const params = typeof options === "string" ? { displayFrequency: options } : options;
    this.displayFrequency = params.displayFrequency;
    return this.request("tips/configure", params);
  }

  /** `tips/register`: registers (or re-registers) tip definitions. */
  async register(tips: TipDefinition[]): Promise<Outcome<S, RegisterResult>> {
    for (const tip of tips) this.tips.set(tip.id, tip);
    const result = await this.callRaw("tips/register", { tips });
    if (!result.ok && result.error instanceof TipsdError) for (const tip of tips) if (this.tips.get(tip.id) === tip) this.tips.delete(tip.id);
    if (result.ok) this.resubscribePending();
    return this.settle(result) as Outcome<S, RegisterResult>;
  }

  /** `tips/unregister`: resolves to the ids that were registered. */
  unregister(ids: string[]): Promise<Outcome<S, UnregisterResult>> {
    for (const id of ids) this.tips.delete(id);
    return this.request("tips/unregister", { ids });
  }

  /** `groups/register`. */
  async registerGroup(group: GroupDefinition): Promise<Outcome<S, GroupRegisterResult>> {
    this.groups.set(group.id, group);
    const result = await this.callRaw("groups/register", group);
    if (!result.ok && result.error instanceof TipsdError && this.groups.get(group.id) === group) this.groups.delete(group.id);
    if (result.ok) this.resubscribePending();
    return this.settle(result) as Outcome<S, GroupRegisterResult>;
  }

  /** `groups/unregister`. */
  unregisterGroup(id: string): Promise<Outcome<S, null>> {
    this.groups.delete(id);
    return this.request("groups/unregister", { id });
  }

  /** `parameters/define`. */
  async defineParameters(parameters: ParameterDefinition[]): Promise<Outcome<S, ParametersDefineResult>> {
    for (const p of parameters) this.parameters.set(p.id, p);
    const result = await this.callRaw("parameters/define", { parameters });
    if (!result.ok && result.error instanceof TipsdError) for (const p of parameters) if (this.parameters.get(p.id) === p) this.parameters.delete(p.id);
    return this.settle(result) as Outcome<S, ParametersDefineResult>;
  }

  /** `parameters/set`. Values of transient parameters this client defined are re-set after a reconnection. */
  setParameter(id: string, value: ParameterValue): Promise<Outcome<S, ParametersSetResult>> {
    if (this.parameters.get(id)?.transient) this.transientValues.set(id, value);
    return this.request("parameters/set", { id, value });
  }

  /** `tips/displayed`: an impression from a self-drawn UI (`duration` in seconds). */
  displayed(id: string, duration?: number): Promise<Outcome<S, TipState>> {
    return this.request("tips/displayed", duration === undefined ? { id } : { id, duration });
  }

  /** `tips/status`: every tip, or the given ones. */
  status(ids?: string[]): Promise<Outcome<S, StatusResult>> {
    return this.request("tips/status", ids === undefined ? {} : { ids });
  }

  /** `tips/explain`: why is this tip (not) showing? */
  explain(id: string): Promise<Outcome<S, Explanation>> {
    return this.request("tips/explain", { id });
  }

  /** `tips/performAction`: records the action; invalidates the tip (`actionPerformed`) unless `invalidate: false`. */
  performAction(id: string, actionId: string, options: { invalidate?: boolean } = {}): Promise<Outcome<S, TipState>> {
    return this.request(
      "tips/performAction",
      options.invalidate === undefined ? { id, actionId } : { id, actionId, invalidate: options.invalidate },
    );
  }

  /** `testing/showAllTips`. */
  showAllTipsForTesting(): Promise<Outcome<S, null>> {
    return this.request("testing/showAllTips", undefined);
  }

  /** `testing/hideAllTips`. */
  hideAllTipsForTesting(): Promise<Outcome<S, null>> {
    return this.request("testing/hideAllTips", undefined);
  }

  /** `testing/showTips`. */
  showTipsForTesting(ids: string[]): Promise<Outcome<S, null>> {
    return this.request("testing/showTips", { ids });
  }

  /** `testing/hideTips`. */
  hideTipsForTesting(ids: string[]): Promise<Outcome<S, null>> {
    return this.request("testing/hideTips", { ids });
  }

  /** `testing/clear`: removes every testing override. */
  clearTestingOverrides(): Promise<Outcome<S, null>> {
    return this.request("testing/clear", undefined);
  }

  /** `datastore/reset`. */
  datastoreReset(): Promise<Outcome<S, null>> {
    return this.request("datastore/reset", undefined);
  }

  /** `clock/now`. */
  clockNow(): Promise<Outcome<S, ClockNowResult>> {
    return this.request("clock/now", undefined);
  }

  /** `clock/advance` (virtual clock only). */
  clockAdvance(seconds: number): Promise<Outcome<S, ClockResult>> {
    return this.request("clock/advance", { seconds });
  }

  /** `clock/set` (virtual clock only; seconds since the epoch). */
  clockSet(now: number): Promise<Outcome<S, ClockResult>> {
    return this.request("clock/set", { now });
  }

  /** `rpc.discover`: the daemon's OpenRPC document. */
  discover(): Promise<Outcome<S, JSONObject>> {
    return this.request("rpc.discover", undefined);
  }

  /** `shutdown`: afterwards the daemon refuses every request on this connection except `exit`. */
  shutdown(): Promise<Outcome<S, null>> {
    return this.request("shutdown", undefined);
  }

  /** `exit` (a notification): over stdio the daemon exits; over a socket this connection closes. */
  exit(): void {
    const conn = this.conn;
    if (conn && conn.open) this.sendNotification(conn, "exit", undefined);
  }

  /** Sends a client→server notification (`exit`, `$/cancelRequest`); dropped when not connected. */
  notify<M extends keyof ClientNotificationMap>(method: M, params: ClientNotificationMap[M]): void {
    const conn = this.conn;
    if (conn && conn.open && this.currentState === "connected") this.sendNotification(conn, method, params);
    else this.log("debug", `${method} not sent: not connected`);
  }

  /** Any request by name, typed through the protocol's method table. */
  request<M extends Method>(method: M, params: ParamsOf<M>): Promise<Outcome<S, ResultOf<M>>> {
    return this.callRaw(method, params).then((r) => this.settle(r) as Outcome<S, ResultOf<M>>);
  }

  // ─── Subscriptions ────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Observes one tip (`observe("filter.tip", listener)`), or tips and groups (`observe({ids, groups}, …)`;
   * `{}` observes every tip, including tips registered later). The listener first receives the current state
   * (`cause: "initial"`), then every change. It is never called twice in a row with the same value for a tip
   * (or group), never called after unsubscribing — even if a notification is already in flight — and after a
   * reconnection it receives `cause: "resync"` changes for whatever differs from what it last saw.
   *
   * Works while disconnected: the subscription is made as soon as a connection is up.
   */
  observe(tipId: string, listener: (change: TipChange) => void): Unsubscribe;
  observe(target: { ids?: string[]; groups?: string[] }, listener: (change: TipChange | GroupChange) => void): Unsubscribe;
  observe(target: ObserveTarget, listener: ((change: TipChange) => void) | ((change: TipChange | GroupChange) => void)): Unsubscribe {
    const params: ObserveParams =
      typeof target === "string"
        ? { ids: [target] }
        : { ...(target.ids ? { ids: [...target.ids] } : {}), ...(target.groups ? { groups: [...target.groups] } : {}) };
    const observer: Observer = {
      kind: "observer",
      params,
      listener: listener as (change: TipChange | GroupChange) => void,
      active: true,
      lastTip: new Map(),
      lastGroup: new Map(),
    };
    this.observers.add(observer);
    if (this.conn && this.currentState === "connected") this.subscribe(this.conn, observer);
    return () => this.unsubscribe(observer);
  }

  /**
   * Listens to performed actions (`tips/actionPerformed`), for every tip or the given ones. Returns an
   * unsubscribe function; the listener is never called after it.
   */
  onAction(listener: (event: ActionEvent) => void, options: { tipIds?: string[] } = {}): Unsubscribe {
    const subscriber: ActionSubscriber = {
      kind: "actions",
      tipIds: options.tipIds ? [...options.tipIds] : undefined,
      listener,
      active: true,
    };
    this.actionSubscribers.add(subscriber);
    if (this.conn && this.currentState === "connected") this.subscribe(this.conn, subscriber);
    return () => this.unsubscribe(subscriber);
  }

  private subscribe(conn: Connection, sub: Subscriber): void {
    if (!sub.active || !conn.open || sub.requesting === conn || (sub.conn === conn && sub.subscription !== undefined)) return;
    sub.requesting = conn;
    const method = sub.kind === "observer" ? "tips/observe" : "actions/subscribe";
    const params = sub.kind === "observer" ? sub.params : sub.tipIds ? { tipIds: sub.tipIds } : {};
    const hook = (raw: unknown) => {
      const result = raw as ObserveResult;
      if (sub.requesting === conn) sub.requesting = undefined;
      if (!conn.open) return;
      if (!sub.active) {
        // Unsubscribed while the request was in flight: drop the server side right away.
        this.sendQuietly(conn, sub.kind === "observer" ? "tips/unobserve" : "actions/unsubscribe", { subscription: result.subscription });
        return;
      }
      sub.conn = conn;
      sub.subscription = result.subscription;
      conn.subscriptions.set(subKey(result.subscription), sub);
      if (sub.kind === "observer") this.resync(sub, result);
    };
    this.send(conn, method, params, hook).catch((e) => {
      if (sub.requesting === conn) sub.requesting = undefined;
      if (!conn.open) return; // the reconnection will retry
      if (e instanceof TipsdError && e.code === ErrorCode.UnknownTip) {
        this.log("debug", `${method} ${JSON.stringify(params)}: ${e.message}; will retry after the next registration`);
      } else {
        this.logger.warn(`${method} failed: ${asError(e).message}`);
      }
    });
  }

  /** Re-tries subscriptions that failed (typically observing a tip before it was registered). */
  private resubscribePending(): void {
    const conn = this.conn;
    if (!conn || !conn.open || this.currentState !== "connected") return;
    for (const o of this.observers) if (o.conn !== conn) this.subscribe(conn, o);
  }

  private unsubscribe(sub: Subscriber): void {
    if (!sub.active) return;
    sub.active = false;
    if (sub.kind === "observer") this.observers.delete(sub);
    else this.actionSubscribers.delete(sub);
    const conn = sub.conn;
    if (conn && sub.subscription !== undefined) {
      conn.subscriptions.delete(subKey(sub.subscription));
      if (conn.open) this.sendQuietly(conn, sub.kind === "observer" ? "tips/unobserve" : "actions/unsubscribe", { subscription: sub.subscription });
    }
    sub.conn = undefined;
    sub.subscription = undefined;
  }

  private resync(observer: Observer, result: ObserveResult): void {
    for (const state of result.tips ?? []) {
      if (!observer.active) return;
      const seen = observer.lastTip.get(state.id);
      if (seen === state.shouldDisplay) continue;
      observer.lastTip.set(state.id, state.shouldDisplay);
      const change: TipChange = {
        type: "tip",
        id: state.id,
        shouldDisplay: state.shouldDisplay,
        status: state.status,
        tip: state.tip,
        cause: seen === undefined ? "initial" : "resync",
      };
      if (state.reason !== undefined) change.reason = state.reason;
      this.callListener(observer, change);
    }
    for (const g of result.groups ?? []) {
      if (!observer.active) return;
      const seen = observer.lastGroup.get(g.group);
      if (observer.lastGroup.has(g.group) && seen === g.tipId) continue;
      const cause: ChangeCause = observer.lastGroup.has(g.group) ? "resync" : "initial";
      observer.lastGroup.set(g.group, g.tipId);
      this.callListener(observer, { type: "group", group: g.group, tipId: g.tipId, cause });
    }
  }

  private callListener<T>(sub: { active: boolean; listener: (value: T) => void }, value: T): void {
    if (!sub.active) return;
    try {
      sub.listener(value);
    } catch (e) {
      (this.logger.error ?? this.logger.warn).call(this.logger, "a listener threw", e);
    }
  }

  private dispatchNotification(conn: Connection, method: string, params: unknown): void {
    if (!params || typeof params !== "object") return;
    const p = params as { subscription?: string | number };
    if (p.subscription === undefined) return;
    const sub = conn.subscriptions.get(subKey(p.subscription));
    if (!sub || !sub.active || sub.conn !== conn) {
      this.log("debug", `${method} for an unknown or ended subscription ${String(p.subscription)}`);
      return;
    }
    if (method === "tips/shouldDisplayChanged" && sub.kind === "observer") {
      const n = params as ShouldDisplayChangedParams;
      if (sub.lastTip.get(n.id) === n.shouldDisplay) return;
      sub.lastTip.set(n.id, n.shouldDisplay);
      const change: TipChange = { type: "tip", id: n.id, shouldDisplay: n.shouldDisplay, status: n.status, tip: n.tip, cause: "notification" };
      if (n.reason !== undefined) change.reason = n.reason;
      this.callListener(sub, change);
    } else if (method === "groups/currentTipChanged" && sub.kind === "observer") {
      const n = params as CurrentTipChangedParams;
      if (sub.lastGroup.has(n.group) && sub.lastGroup.get(n.group) === n.tipId) return;
      sub.lastGroup.set(n.group, n.tipId);
      this.callListener(sub, { type: "group", group: n.group, tipId: n.tipId, cause: "notification" } as GroupChange);
    } else if (method === "tips/actionPerformed" && sub.kind === "actions") {
      const n = params as ActionPerformedParams;
      this.callListener(sub, { tipId: n.tipId, actions: Array.isArray(n.actions) ? n.actions : [] });
    } else {
      this.log("debug", `ignored notification ${method}`);
    }
  }

  // ─── Calls ────────────────────────────────────────────────────────────────────────────────────────────────

  /** Sends a request once a connection is there; never throws — the outcome says what happened. */
  private async callRaw(method: string, params: unknown): Promise<{ ok: true; value: unknown } | { ok: false; error: Error }> {
    if (this.currentState === "closed") return { ok: false, error: new ConnectionError("ECLOSED", "the client is closed", method) };
    if (this.currentState === "connecting" && this.attempt) await this.attempt;
    const conn = this.conn;
    if (!conn || !conn.open || this.currentState !== "connected") {
      return { ok: false, error: new ConnectionError("ENOTCONNECTED", "tipsd is not connected", method) };
    }
    try {
      return { ok: true, value: await this.send(conn, method, params) };
    } catch (e) {
      return { ok: false, error: asError(e) };
    }
  }

  /** Turns an outcome into the public promise's value: strict rejects; otherwise log and resolve undefined. */
  private settle(r: { ok: true; value: unknown } | { ok: false; error: Error }): unknown {
    if (r.ok) return r.value;
    if (this.strict) throw r.error;
    const e = r.error;
    if (e instanceof ConnectionError) {
      if (e.code === "ECLOSED") {
        this.log("debug", e.message);
      } else if (!this.outageWarned) {
        this.outageWarned = true;
        this.logger.warn(`${e.message}; calls are no-ops until it is back`, e.code);
      } else {
        this.log("debug", `no-op: ${e.message}`);
      }
    } else {
      this.logger.warn(e.message);
    }
    return undefined;
  }

  private send(conn: Connection, method: string, params: unknown, hook?: (result: unknown) => void): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (!conn.open) {
        reject(new ConnectionError("ECONNCLOSED", "the connection is closed", method));
        return;
      }
      const id = this.nextId++;
      const message: { jsonrpc: "2.0"; id: number; method: string; params?: unknown } = { jsonrpc: "2.0", id, method };
      if (params !== undefined) message.params = params;
      const pending: Pending = { method, resolve, reject, timer: undefined, hook };
      if (this.requestTimeoutMs > 0) {
        pending.timer = setTimeout(() => {
          if (conn.pending.get(id) !== pending) return;
          conn.pending.delete(id);
          reject(new ConnectionError("ETIMEDOUT", `no answer within ${this.requestTimeoutMs} ms`, method));
        }, this.requestTimeoutMs);
      }
      conn.pending.set(id, pending);
      try {
        conn.transport.send(JSON.stringify(message));
      } catch (e) {
        conn.pending.delete(id);
        if (pending.timer !== undefined) clearTimeout(pending.timer);
        reject(new ConnectionError("ECONNCLOSED", `send failed: ${asError(e).message}`, method, e));
      }
    });
  }

  private sendNotification(conn: Connection, method: string, params: unknown): void {
    const message: { jsonrpc: "2.0"; method: string; params?: unknown } = { jsonrpc: "2.0", method };
    if (params !== undefined) message.params = params;
    try {
      conn.transport.send(JSON.stringify(message));
    } catch (e) {
      this.log("debug", `${method} not sent`, e);
    }
  }

  /** Fire-and-forget request whose failure is only worth a debug line. */
  private sendQuietly(conn: Connection, method: string, params: unknown): void {
    this.send(conn, method, params).catch((e) => this.log("debug", `${method} failed`, e));
  }

  private onMessage(conn: Connection, text: string): void {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.logger.warn("received a message that is not JSON; ignored", text.length > 200 ? text.slice(0, 200) + "…" : text);
      return;
    }
    if (Array.isArray(message)) {
      for (const m of message) this.handle(conn, m);
    } else {
      this.handle(conn, message);
    }
  }

  private handle(conn: Connection, message: unknown): void {
    if (!message || typeof message !== "object") return;
    const m = message as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: JsonRpcErrorObject };
    if (typeof m.method === "string") {
      if (m.id === undefined || m.id === null) {
        if (conn.open) this.dispatchNotification(conn, m.method, m.params);
      } else {
        // The protocol defines no server→client requests; answer politely.
        try {
          conn.transport.send(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: ErrorCode.MethodNotFound, message: `client does not implement ${m.method}` } }));
        } catch {
          /* ignore */
        }
      }
      return;
    }
    if (typeof m.id !== "number") {
      if (m.error) this.logger.warn(`tipsd reported an error: ${m.error.message} (${m.error.code})`);
      return;
    }
    const pending = conn.pending.get(m.id);
    if (!pending) {
      this.log("debug", `response to unknown request ${m.id}`);
      return;
    }
    conn.pending.delete(m.id);
    if (pending.timer !== undefined) clearTimeout(pending.timer);
    if (m.error) {
      pending.reject(new TipsdError(pending.method, m.error));
    } else {
      if (pending.hook) {
        try {
          pending.hook(m.result);
        } catch (e) {
          this.log("debug", "response hook failed", e);
        }
      }
      pending.resolve(m.result === undefined ? null : m.result);
    }
  }

  // ─── Connecting, dropping, reconnecting ───────────────────────────────────────────────────────────────────

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
        this.log("debug", "a connection-state listener threw", e);
      }
    }
  }

  private log(level: "debug" | "error", message: string, ...details: unknown[]): void {
    const fn = this.logger[level];
    if (fn) fn.call(this.logger, message, ...details);
  }

  private startAttempt(): Promise<boolean> {
    if (this.attempt) return this.attempt;
    this.setState("connecting");
    const attempt = this.connectOnce().then(
      (ok) => ok,
      (e) => {
        this.log("debug", "connection attempt failed unexpectedly", e);
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
    const conn: Connection = { transport, pending: new Map(), subscriptions: new Map(), open: true };
    transport.onMessage = (text) => this.onMessage(conn, text);
    transport.onClose = (error) => this.connectionClosed(conn, error);
    let init: InitializeResult;
    try {
      const params: { protocolVersion: string; clientInfo: ClientInfo; locale?: string } = { protocolVersion: PROTOCOL_VERSION, clientInfo: this.clientInfo };
      if (this.locale !== undefined) params.locale = this.locale;
      init = (await this.withTimeout(this.send(conn, "initialize", params), this.connectTimeoutMs, "initialize")) as InitializeResult;
      if (!init || typeof init !== "object" || majorOf(init.protocolVersion) !== majorOf(PROTOCOL_VERSION)) {
        throw new ConnectionError("EPROTOCOL", `tipsd speaks protocol ${init && init.protocolVersion}, this client ${PROTOCOL_VERSION}`);
      }
    } catch (e) {
      conn.open = false;
      this.dropConnection(conn, new ConnectionError("ECONNCLOSED", "initialize failed"));
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
    this.conn = conn;
    this.initializeResult = init;
    const wasConnected = this.everConnected;
    this.everConnected = true;
    this.failedAttempts = 0;
    // Everything below is written to the transport synchronously, before any waiting call is released, so the
    // daemon sees registrations and subscriptions first.
    this.replay(conn, wasConnected);
    this.outageWarned = false;
    this.setState("connected");
    if (wasConnected) this.log("debug", "reconnected to tipsd");
    return true;
  }

  private openTransport(): Promise<Transport> {
    return new Promise<Transport>((resolve, reject) => {
      let settled = false;
      const timer = setTimeout(() => {
        if (settled) return;
        settled = true;
        reject(new Error(`timed out after ${this.connectTimeoutMs} ms`));
      }, this.connectTimeoutMs);
      Promise.resolve()
        .then(() => this.factory())
        .then(
          (transport) => {
            clearTimeout(timer);
            if (settled) {
              transport.close();
              return;
            }
            settled = true;
            resolve(transport);
          },
          (e) => {
            clearTimeout(timer);
            if (settled) return;
            settled = true;
            reject(e);
          },
        );
    });
  }

  private withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
    if (!(ms > 0)) return p;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new ConnectionError("ETIMEDOUT", `${what} timed out after ${ms} ms`)), ms);
      p.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }

  /** Re-sends registrations (after a reconnection) and subscribes every live subscriber. */
  private replay(conn: Connection, reconnection: boolean): void {
    const warn = (what: string) => (e: unknown) => {
      if (conn.open) this.logger.warn(`restoring ${what} failed: ${asError(e).message}`);
    };
    if (this.restore && (reconnection || this.hasRegistrations())) {
      if (this.displayFrequency) this.send(conn, "tips/configure", { displayFrequency: this.displayFrequency }).catch(warn("display frequency"));
      if (this.parameters.size > 0) this.send(conn, "parameters/define", { parameters: [...this.parameters.values()] }).catch(warn("parameters"));
      for (const [id, value] of this.transientValues) this.send(conn, "parameters/set", { id, value }).catch(warn(`parameter ${id}`));
      if (this.tips.size > 0) this.send(conn, "tips/register", { tips: [...this.tips.values()] }).catch(warn("tips"));
      for (const group of this.groups.values()) this.send(conn, "groups/register", group).catch(warn(`group ${group.id}`));
      for (const [id, maxDonations] of this.eventLimits) this.send(conn, "events/configure", { id, maxDonations }).catch(warn(`event ${id}`));
    }
    for (const o of this.observers) {
      o.conn = undefined;
      o.subscription = undefined;
      this.subscribe(conn, o);
    }
    for (const a of this.actionSubscribers) {
      a.conn = undefined;
      a.subscription = undefined;
      this.subscribe(conn, a);
    }
  }

  private hasRegistrations(): boolean {
    return (
      this.displayFrequency !== undefined ||
      this.parameters.size > 0 ||
      this.tips.size > 0 ||
      this.groups.size > 0 ||
      this.eventLimits.size > 0
    );
  }

  /** Fails every in-flight request of a connection that is gone. */
  private dropConnection(conn: Connection, error: ConnectionError): void {
    conn.open = false;
    const pending = [...conn.pending.values()];
    conn.pending.clear();
    conn.subscriptions.clear();
    for (const p of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer);
      p.reject(new ConnectionError(error.code, error.message, p.method));
    }
  }

  private connectionClosed(conn: Connection, error?: Error): void {
    if (!conn.open) return;
    this.dropConnection(conn, new ConnectionError("ECONNCLOSED", "the connection to tipsd closed"));
    if (this.conn !== conn) return; // closed during initialize: the attempt handles it
    this.conn = null;
    for (const o of this.observers) if (o.conn === conn) o.conn = undefined;
    for (const a of this.actionSubscribers) if (a.conn === conn) a.conn = undefined;
    if (this.currentState === "closed") return;
    this.logger.warn(`lost the connection to tipsd${error ? `: ${error.message}` : ""}; calls are no-ops until it is back`);
    this.outageWarned = true;
    this.setState("disconnected");
    this.scheduleReconnect();
  }

  private attemptFailed(error: ConnectionError): void {
    this.failedAttempts++;
    if (this.currentState === "closed") return;
    if (!this.outageWarned) {
      this.outageWarned = true;
      this.logger.warn(`${error.message}; calls are no-ops until it is reachable`);
    } else {
      this.log("debug", `reconnection attempt ${this.failedAttempts} failed: ${error.message}`);
    }
    this.lastError = error;
    this.setState("disconnected");
    this.scheduleReconnect();
  }

  /** The error of the last failed connection attempt. */
  lastError: ConnectionError | undefined;

  private scheduleReconnect(): void {
    const r = this.reconnectOptions;
    if (!r || this.currentState === "closed" || this.reconnectTimer !== undefined) return;
    if (this.failedAttempts >= r.maxAttempts) {
      this.logger.warn(`giving up on tipsd after ${this.failedAttempts} attempts`);
      return;
    }
    const base = Math.min(r.maxDelayMs, r.initialDelayMs * Math.pow(r.factor, Math.max(0, this.failedAttempts - 1)));
    const spread = base * r.jitter;
    const delay = Math.max(0, Math.min(r.maxDelayMs, base - spread + Math.random() * 2 * spread));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.currentState === "disconnected") this.startAttempt();
    }, delay);
  }

  /** Skips the backoff wait and tries to connect now (no-op when connected, connecting or closed). */
  reconnectNow(): Promise<boolean> {
    if (this.currentState !== "disconnected") return this.ready();
    if (this.reconnectTimer !== undefined) {
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
    }
    return this.startAttempt();
  }
}

/** Creates a client and starts connecting in the background (calls made meanwhile wait for the attempt). */
export function createClient<S extends boolean = false>(options: ClientOptions<S>): TipsClient<S> {
  return new TipsClient<S>(options);
}

/**
 * Creates a client and waits for its first connection attempt. Not strict: always resolves (a missing daemon
 * means a client in no-op mode that keeps trying). Strict: rejects (and closes the client) when the first
 * attempt fails.
 */
export async function connect<S extends boolean = false>(options: ClientOptions<S>): Promise<TipsClient<S>> {
  const client = new TipsClient<S>(options);
  const ok = await client.ready();
  if (!ok && options.strict === true) {
    const error = client.lastError ?? new ConnectionError("ENOTCONNECTED", "cannot reach tipsd");
    await client.close();
    throw error;
  }
  return client;
}
