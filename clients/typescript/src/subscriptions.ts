/**
 * Subscriptions and listeners: `observe`, `onAction` and `onAnalyticsEvent` subscribers, establishing them on each
 * connection (`tips/observe`, `actions/subscribe`, `analytics/subscribe`) and ending them (`tips/unobserve`,
 * `actions/unsubscribe`, `analytics/unsubscribe`), dispatching `tips/shouldDisplayChanged`,
 * `groups/currentTipChanged`, `tips/actionPerformed` and `analytics/event` to the right listener, never the same
 * value twice in a row and never after unsubscribing, resynchronising observers from the `tips/observe` result
 * after a reconnection, and resuming analytics subscribers from the last cursor they were given.
 */
import { TipsdError } from "./errors.js";
import {
  Action,
  ActionPerformedParams,
  AnalyticsEvent,
  AnalyticsEventParams,
  AnalyticsSubscribeResult,
  CurrentTipChangedParams,
  ErrorCode,
  ObserveParams,
  ObserveResult,
  Reason,
  ShouldDisplayChangedParams,
  Status,
  TipContent,
} from "./protocol.js";
import { asError, RpcConnection } from "./calls.js";
import type { ConnectionState } from "./connection.js";
import { Logger, logAt } from "./options.js";

/** Returned by every subscription; calling it more than once is harmless. */
export type Unsubscribe = () => void;

/** Why a listener is being called. */
export type ChangeCause =
  /** The first state seen, from the `tips/observe` result. */
  | "initial"
  /** A server notification. */
  | "notification"
  /** After a reconnection, the `tips/observe` result differed from what the listener last saw. */
  | "resync"
  /**
   * Offline-first (`storage`): the last state the node gave, as stored — delivered when the listener is added,
   * before any connection; the node's own state follows as `"resync"` where it differs.
   */
  | "stored";

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

/** What every kind of subscriber has. */
interface SubscriberBase {
  active: boolean;
  conn?: RpcConnection;
  subscription?: string | number;
  /** Set while a subscribe request for this connection is in flight. */
  requesting?: RpcConnection;
  /** Hosted mode, admin: the account it is made on (`params.account` of its requests). */
  account?: string;
}

interface Observer extends SubscriberBase {
  kind: "observer";
  params: ObserveParams;
  listener: (change: TipChange | GroupChange) => void;
  lastTip: Map<string, boolean>;
  lastGroup: Map<string, string | null>;
}

interface ActionSubscriber extends SubscriberBase {
  kind: "actions";
  tipIds?: string[];
  listener: (event: ActionEvent) => void;
}

interface AnalyticsSubscriber extends SubscriberBase {
  kind: "analytics";
  /** The cursor to resume after: the last one delivered, else the one asked for, else the head when subscribed. */
  after?: number;
  listener: (event: AnalyticsEvent) => void;
}

type Subscriber = Observer | ActionSubscriber | AnalyticsSubscriber;

/** The subscribe and unsubscribe method of each kind; subscribers are (re)established in this order. */
const METHODS = {
  observer: { subscribe: "tips/observe", unsubscribe: "tips/unobserve" },
  actions: { subscribe: "actions/subscribe", unsubscribe: "actions/unsubscribe" },
  analytics: { subscribe: "analytics/subscribe", unsubscribe: "analytics/unsubscribe" },
} as const;
const KINDS = Object.keys(METHODS) as Subscriber["kind"][];

function subKey(id: string | number): string {
  return typeof id === "number" ? `n${id}` : `s${id}`;
}

/** `params` with the subscriber's account, if it has one. */
function scoped(sub: Subscriber, params: object): object {
  return sub.account === undefined ? params : { ...params, account: sub.account };
}

/** What subscriptions need from the connection manager. */
export interface SubscriptionLink {
  readonly state: ConnectionState;
  readonly current: RpcConnection | null;
}

/** Offline-first: where observed tip states are recorded, and the stored ones read back. */
export interface TipMemory {
  /** Every tip state the node gives (observe results and notifications). */
  record(change: TipChange): void;
  /** The stored tip states (once restored). */
  stored(): TipChange[];
  /** Calls `listener` once the stored state is loaded (synchronously when it already is). */
  whenRestored(listener: () => void): void;
}

export class Subscriptions {
  private readonly subscribers = new Set<Subscriber>();
  /** Per connection: server subscription id (see subKey) → local subscriber. */
  private readonly routes = new WeakMap<RpcConnection, Map<string, Subscriber>>();

  constructor(private readonly link: SubscriptionLink, private readonly logger: Logger, private readonly memory?: TipMemory) {}

  observe(target: ObserveTarget, listener: (change: TipChange | GroupChange) => void, account?: string): Unsubscribe {
    const params: ObserveParams =
      typeof target === "string"
        ? { ids: [target] }
        : { ...(target.ids ? { ids: [...target.ids] } : {}), ...(target.groups ? { groups: [...target.groups] } : {}) };
    const observer: Observer = { kind: "observer", params, listener, active: true, account, lastTip: new Map(), lastGroup: new Map() };
    const unsubscribe = this.add(observer);
    const memory = this.memory;
    if (memory) {
      // The stored states first (after this call returns), unless the node already said otherwise.
      memory.whenRestored(() =>
        Promise.resolve().then(() => {
          const ids = params.ids ? new Set(params.ids) : params.groups ? new Set<string>() : undefined;
          for (const stored of memory.stored()) {
            if (!observer.active) return;
            if ((ids && !ids.has(stored.id)) || observer.lastTip.has(stored.id)) continue;
            observer.lastTip.set(stored.id, stored.shouldDisplay);
            this.callListener(observer, stored);
          }
        }),
      );
    }
    return unsubscribe;
  }

  onAction(listener: (event: ActionEvent) => void, options: { tipIds?: string[] }, account?: string): Unsubscribe {
    return this.add({ kind: "actions", tipIds: options.tipIds ? [...options.tipIds] : undefined, listener, active: true, account });
  }

  onAnalyticsEvent(listener: (event: AnalyticsEvent) => void, options: { after?: number }, account?: string): Unsubscribe {
    return this.add({ kind: "analytics", after: options.after, listener, active: true, account });
  }

  private add(sub: Subscriber): Unsubscribe {
    this.subscribers.add(sub);
    this.subscribeIfConnected(sub);
    return () => this.unsubscribe(sub);
  }

  /** A new connection is up: subscribes every live subscriber on it, observers first. */
  attach(conn: RpcConnection): void {
    for (const kind of KINDS) {
      for (const sub of this.subscribers) {
        if (sub.kind !== kind) continue;
        sub.conn = undefined;
        sub.subscription = undefined;
        this.subscribe(conn, sub);
      }
    }
  }

  /** The connection was lost: the server-side subscriptions went with it. */
  detach(conn: RpcConnection): void {
    this.routes.delete(conn);
    for (const sub of this.subscribers) if (sub.conn === conn) sub.conn = undefined;
  }

  /** `close()`: no listener is called again. */
  clear(): void {
    for (const sub of this.subscribers) sub.active = false;
    this.subscribers.clear();
    if (this.link.current) this.routes.delete(this.link.current);
  }

  /** Re-tries subscriptions that failed (typically observing a tip before it was registered). */
  resubscribePending(): void {
    const conn = this.link.current;
    if (!conn || !conn.open || this.link.state !== "connected") return;
    for (const sub of this.subscribers) if (sub.kind === "observer" && sub.conn !== conn) this.subscribe(conn, sub);
  }

  dispatch(conn: RpcConnection, method: string, params: unknown): void {
    if (!params || typeof params !== "object") return;
    const p = params as { subscription?: string | number };
    if (p.subscription === undefined) return;
    const sub = this.routes.get(conn)?.get(subKey(p.subscription));
    if (!sub || !sub.active || sub.conn !== conn) {
      logAt(this.logger, "debug", `${method} for an unknown or ended subscription ${String(p.subscription)}`);
      return;
    }
    if (method === "tips/shouldDisplayChanged" && sub.kind === "observer") {
      const n = params as ShouldDisplayChangedParams;
      const change: TipChange = { type: "tip", id: n.id, shouldDisplay: n.shouldDisplay, status: n.status, tip: n.tip, cause: "notification" };
      if (n.reason !== undefined) change.reason = n.reason;
      this.remember(change);
      if (sub.lastTip.get(n.id) === n.shouldDisplay) return;
      sub.lastTip.set(n.id, n.shouldDisplay);
      this.callListener(sub, change);
    } else if (method === "groups/currentTipChanged" && sub.kind === "observer") {
      const n = params as CurrentTipChangedParams;
      if (sub.lastGroup.has(n.group) && sub.lastGroup.get(n.group) === n.tipId) return;
      sub.lastGroup.set(n.group, n.tipId);
      this.callListener(sub, { type: "group", group: n.group, tipId: n.tipId, cause: "notification" } as GroupChange);
    } else if (method === "tips/actionPerformed" && sub.kind === "actions") {
      const n = params as ActionPerformedParams;
      this.callListener(sub, { tipId: n.tipId, actions: Array.isArray(n.actions) ? n.actions : [] });
    } else if (method === "analytics/event" && sub.kind === "analytics") {
      const { subscription: _subscription, seq: _seq, ...event } = params as AnalyticsEventParams;
      if (sub.after !== undefined && event.cursor <= sub.after) return; // already delivered (at least once → once)
      sub.after = event.cursor;
      this.callListener(sub, event);
    } else {
      logAt(this.logger, "debug", `ignored notification ${method}`);
    }
  }

  private subscribeIfConnected(sub: Subscriber): void {
    const conn = this.link.current;
    if (conn && this.link.state === "connected") this.subscribe(conn, sub);
  }

  private subscribe(conn: RpcConnection, sub: Subscriber): void {
    if (!sub.active || !conn.open || sub.requesting === conn || (sub.conn === conn && sub.subscription !== undefined)) return;
    sub.requesting = conn;
    const method = METHODS[sub.kind].subscribe;
    const params = scoped(
      sub,
      sub.kind === "observer"
        ? sub.params
        : sub.kind === "actions"
          ? sub.tipIds ? { tipIds: sub.tipIds } : {}
          : sub.after === undefined ? {} : { after: sub.after },
    );
    // Runs as soon as the result is read, before any notification that follows it is dispatched.
    const hook = (raw: unknown) => {
      const result = raw as ObserveResult;
      if (sub.requesting === conn) sub.requesting = undefined;
      if (!conn.open) return;
      if (!sub.active) {
        // Unsubscribed while the request was in flight: drop the server side right away.
        conn.requestQuietly(METHODS[sub.kind].unsubscribe, scoped(sub, { subscription: result.subscription }));
        return;
      }
      sub.conn = conn;
      sub.subscription = result.subscription;
      let routes = this.routes.get(conn);
      if (!routes) this.routes.set(conn, (routes = new Map()));
      routes.set(subKey(result.subscription), sub);
      if (sub.kind === "observer") this.resync(sub, result);
      // Live only: a reconnection resumes after what was the newest event when the subscription was made.
      else if (sub.kind === "analytics" && sub.after === undefined) sub.after = (raw as AnalyticsSubscribeResult).head;
    };
    conn.request(method, params, hook).catch((e) => {
      if (sub.requesting === conn) sub.requesting = undefined;
      if (!conn.open) return; // the reconnection will retry
      if (e instanceof TipsdError && e.code === ErrorCode.UnknownTip) {
        logAt(this.logger, "debug", `${method} ${JSON.stringify(params)}: ${e.message}; will retry after the next registration`);
      } else {
        this.logger.warn(`${method} failed: ${asError(e).message}`);
      }
    });
  }

  private unsubscribe(sub: Subscriber): void {
    if (!sub.active) return;
    sub.active = false;
    this.subscribers.delete(sub);
    const conn = sub.conn;
    if (conn && sub.subscription !== undefined) {
      this.routes.get(conn)?.delete(subKey(sub.subscription));
      if (conn.open) conn.requestQuietly(METHODS[sub.kind].unsubscribe, scoped(sub, { subscription: sub.subscription }));
    }
    sub.conn = undefined;
    sub.subscription = undefined;
  }

  /** Calls the listener for whatever differs from what it last saw (everything, the first time). */
  private resync(observer: Observer, result: ObserveResult): void {
    for (const state of result.tips ?? []) {
      if (this.memory) {
        const current: TipChange = { type: "tip", id: state.id, shouldDisplay: state.shouldDisplay, status: state.status, tip: state.tip, cause: "resync" };
        if (state.reason !== undefined) current.reason = state.reason;
        this.remember(current);
      }
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

  private remember(change: TipChange): void {
    if (!this.memory) return;
    try {
      this.memory.record(change);
    } catch (e) {
      logAt(this.logger, "debug", "recording a tip's state failed", e);
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
}
