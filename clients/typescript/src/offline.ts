/**
 * Offline-first (issue #37): with a {@link StorageAdapter} (`storage` in the client's options), the client keeps
 *
 * - the last state of every tip it observed — `shouldDisplay`, status, reason and the display copy (title, message,
 *   image, actions… as the node sent them) — so that an app draws the right tips at start, before any connection
 *   ({@link TipsClient.storedTip}, `tipVisibilityStore`, `observe`'s `cause: "stored"` changes);
 * - an outbox of the changes made through it (every method of `IDEMPOTENT_METHODS`: `events/donate`,
 *   `tips/displayed`, `tips/invalidate`, `tips/performAction`, `parameters/set`, …), each stored with its
 *   `idempotencyKey` before it is sent, and sent in the order made, one at a time, whenever the client is connected.
 *   A change leaves the outbox once the node answered it; one whose answer was lost (the connection dropped, the app
 *   was killed, the node restarted) is sent again with the same key, and the node applies it once.
 *
 * Eligibility is never computed here: offline, a tip's state is the last one the node gave (marked stale). When a
 * queued change reaches the node and changes a tip, observers hear it then, as a notification.
 *
 * No platform API: the app passes its storage — React Native's AsyncStorage and a browser's `localStorage` fit
 * {@link StorageAdapter} as they are; `fileStorage` (in `@tipsd/client/node`) keeps the state in files.
 */
import { ConnectionError, TipsdError } from "./errors.js";
import { ErrorCode, Reason, Status, TipContent } from "./protocol.js";
import type { CallResult } from "./calls.js";
import type { Logger } from "./options.js";
import { logAt } from "./options.js";

/**
 * Where the client keeps its offline state: string values by key. Each method may answer at once (a browser's
 * `localStorage`, `memoryStorage`, `fileStorage`) or with a promise (React Native's `AsyncStorage`). With a
 * synchronous `getItem`, the stored state is there as soon as the client is created; with an asynchronous one, once
 * `client.restored` resolves.
 */
export interface StorageAdapter {
  getItem(key: string): string | null | undefined | Promise<string | null | undefined>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem?(key: string): void | Promise<void>;
}

/** An in-memory {@link StorageAdapter} (tests, or a session that need not outlive the process). */
export function memoryStorage(initial: { [key: string]: string } = {}): StorageAdapter & { readonly items: Map<string, string> } {
  const items = new Map<string, string>(Object.entries(initial));
  return {
    items,
    getItem: (key) => (items.has(key) ? (items.get(key) as string) : null),
    setItem: (key, value) => {
      items.set(key, String(value));
    },
    removeItem: (key) => {
      items.delete(key);
    },
  };
}

/** The last state the node gave for a tip, as stored. */
export interface StoredTip {
  id: string;
  shouldDisplay: boolean;
  status: Status;
  reason?: Reason;
  /** The display copy: title, message, image, actions… as the node last sent them. */
  tip: TipContent;
  /** When the node said so (milliseconds since the epoch, the client's clock). */
  at: number;
}

/** A change waiting in the outbox. */
export interface QueuedChange {
  method: string;
  /** The params as sent, with their `idempotencyKey` (and `account` for an admin's `forAccount` view). */
  params: { idempotencyKey: string; [name: string]: unknown };
  /** The account the client was last signed in as when the change was made (hosted mode), if known. */
  account?: string;
  /** When it was made (milliseconds since the epoch, the client's clock). */
  queuedAt: number;
}

export interface OfflineOptions {
  /** The app's storage (see {@link StorageAdapter}). */
  storage: StorageAdapter;
  /**
   * Prefix of the keys the client writes (default `"tipsd"`: `tipsd:tips` and `tipsd:outbox`). Give each signed-in
   * user of a device their own (e.g. `tipsd:<uid>`).
   */
  storageKey?: string;
  /** Changes the outbox holds at most (default 10 000); a change made beyond that is refused with a warning. */
  maxQueuedChanges?: number;
}

interface StoredTips {
  version: 1;
  account?: string;
  tips: StoredTip[];
}

interface StoredOutbox {
  version: 1;
  changes: QueuedChange[];
}

function isPromise<T>(value: unknown): value is Promise<T> {
  return !!value && typeof (value as { then?: unknown }).then === "function";
}

function parse<T>(text: string | null | undefined, logger: Logger, what: string): T | undefined {
  if (typeof text !== "string" || !text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    logger.warn(`the stored ${what} is not JSON; starting without it`, e);
    return undefined;
  }
}

/**
 * The stored snapshot and outbox of one client. Every write goes through one chain, in order; a write that fails is
 * logged (and the in-memory state stays: it is written again with the next change).
 */
export class OfflineState {
  readonly tips = new Map<string, StoredTip>();
  readonly outbox: QueuedChange[] = [];
  /** The account of the last session (hosted mode), as stored with the snapshot. */
  account: string | undefined;
  /** Resolves once the stored state is loaded (at once for a synchronous storage). */
  readonly restored: Promise<void>;
  isRestored = false;
  readonly maxQueuedChanges: number;
  private readonly storage: StorageAdapter;
  private readonly tipsKey: string;
  private readonly outboxKey: string;
  private tail: Promise<void> = Promise.resolve();
  private tipsDirty = false;
  private readonly restoredListeners = new Set<() => void>();

  constructor(options: OfflineOptions, private readonly logger: Logger) {
    if (!options.storage || typeof options.storage.getItem !== "function" || typeof options.storage.setItem !== "function") {
      throw new TypeError("storage must have getItem and setItem (AsyncStorage, localStorage, memoryStorage(), fileStorage(dir))");
    }
    this.storage = options.storage;
    const prefix = options.storageKey ?? "tipsd";
    this.tipsKey = `${prefix}:tips`;
    this.outboxKey = `${prefix}:outbox`;
    this.maxQueuedChanges = options.maxQueuedChanges ?? 10_000;
    let tipsText: unknown;
    let outboxText: unknown;
    try {
      tipsText = this.storage.getItem(this.tipsKey);
      outboxText = this.storage.getItem(this.outboxKey);
    } catch (e) {
      logger.warn("could not read the stored tips and changes; starting without them", e);
      tipsText = outboxText = null;
    }
    if (!isPromise(tipsText) && !isPromise(outboxText)) {
      this.load(tipsText as string | null, outboxText as string | null);
      this.restored = Promise.resolve();
    } else {
      this.restored = Promise.all([tipsText, outboxText]).then(
        ([t, o]) => this.load(t as string | null, o as string | null),
        (e) => {
          logger.warn("could not read the stored tips and changes; starting without them", e);
          this.load(null, null);
        },
      );
    }
  }

  /** Calls `listener` once the stored state is loaded (at once, synchronously, when it already is). */
  whenRestored(listener: () => void): () => void {
    if (this.isRestored) {
      listener();
      return () => {};
    }
    this.restoredListeners.add(listener);
    return () => {
      this.restoredListeners.delete(listener);
    };
  }

  private load(tipsText: string | null | undefined, outboxText: string | null | undefined): void {
    const stored = parse<StoredTips>(tipsText, this.logger, "tips");
    if (stored && stored.version === 1 && Array.isArray(stored.tips)) {
      if (this.account === undefined) this.account = typeof stored.account === "string" ? stored.account : undefined;
      for (const tip of stored.tips) {
        // What the node said since the client was created is newer than what was stored.
        if (tip && typeof tip.id === "string" && !this.tips.has(tip.id)) this.tips.set(tip.id, tip);
      }
    }
    const queued = parse<StoredOutbox>(outboxText, this.logger, "changes");
    if (queued && queued.version === 1 && Array.isArray(queued.changes)) {
      const made = this.outbox.splice(0, this.outbox.length);
      const valid = queued.changes.filter((c) => c && typeof c.method === "string" && c.params && typeof c.params.idempotencyKey === "string");
      // The stored changes were made before those made since the client was created.
      this.outbox.push(...valid, ...made);
      if (made.length > 0) void this.writeOutbox();
    }
    this.isRestored = true;
    const listeners = [...this.restoredListeners];
    this.restoredListeners.clear();
    for (const listener of listeners) {
      try {
        listener();
      } catch (e) {
        logAt(this.logger, "debug", "a restore listener threw", e);
      }
    }
  }

  // ─── The snapshot ───────────────────────────────────────────────────────────────────────────────────────────

  /** Records what the node says about a tip (written to storage once the current burst of changes is over). */
  recordTip(tip: Omit<StoredTip, "at">, now: number): void {
    const previous = this.tips.get(tip.id);
    const next: StoredTip = { id: tip.id, shouldDisplay: tip.shouldDisplay, status: tip.status, tip: tip.tip, at: now };
    if (tip.reason !== undefined) next.reason = tip.reason;
    this.tips.set(tip.id, next);
    if (
      previous &&
      previous.shouldDisplay === next.shouldDisplay &&
      previous.status === next.status &&
      previous.reason === next.reason &&
      JSON.stringify(previous.tip) === JSON.stringify(next.tip)
    ) {
      return;
    }
    this.scheduleTipsWrite();
  }

  /**
   * A session signed in as `account` (undefined: a daemon serving one user). The snapshot of another account is
   * forgotten: its tips are not this user's.
   */
  signedIn(account: string | undefined): void {
    if (account === this.account) return;
    if (this.account !== undefined && account !== undefined) this.tips.clear();
    this.account = account;
    this.scheduleTipsWrite();
  }

  private scheduleTipsWrite(): void {
    if (this.tipsDirty) return;
    this.tipsDirty = true;
    // One write for a burst of changes (an observe result with every tip, a resync).
    void Promise.resolve().then(() => {
      this.tipsDirty = false;
      const value: StoredTips = { version: 1, tips: [...this.tips.values()] };
      if (this.account !== undefined) value.account = this.account;
      return this.write(this.tipsKey, JSON.stringify(value));
    });
  }

  // ─── The outbox ─────────────────────────────────────────────────────────────────────────────────────────────

  /** Adds a change; resolves once it is stored (false: the outbox is full, the change is refused). */
  enqueue(change: QueuedChange): Promise<boolean> {
    if (this.outbox.length >= this.maxQueuedChanges) return Promise.resolve(false);
    this.outbox.push(change);
    return this.writeOutbox().then(() => true);
  }

  /** Removes a change the node answered; resolves once that is stored. */
  remove(change: QueuedChange): Promise<void> {
    const index = this.outbox.indexOf(change);
    if (index < 0) return Promise.resolve();
    this.outbox.splice(index, 1);
    return this.writeOutbox();
  }

  private writeOutbox(): Promise<void> {
    // Written only once loaded: the stored changes come first, and must not be overwritten by the new ones alone.
    if (!this.isRestored) return this.restored.then(() => this.writeOutbox());
    return this.write(this.outboxKey, () => (this.outbox.length === 0 ? null : JSON.stringify({ version: 1, changes: this.outbox } as StoredOutbox)));
  }

  /** Queues a write (a value, or a function computing it when its turn comes: the newest state then). */
  private write(key: string, value: string | null | (() => string | null)): Promise<void> {
    const run = (): void | Promise<void> => {
      const text = typeof value === "function" ? value() : value;
      if (text === null) {
        if (this.storage.removeItem) return this.storage.removeItem(key);
        return this.storage.setItem(key, "");
      }
      return this.storage.setItem(key, text);
    };
    const next = this.tail.then(run).then(
      () => undefined,
      (e) => this.logger.warn(`could not write ${key} to the storage`, e),
    );
    this.tail = next;
    return next;
  }
}

// ─── Sending the outbox ───────────────────────────────────────────────────────────────────────────────────────

/**
 * Errors saying a change can never be applied (sending it again would be refused again): it leaves the outbox. Any
 * other error (-32016 not acknowledged, a datastore failure, a quota, a node shutting down…) keeps it first in line.
 */
export const REFUSED_FOR_GOOD: ReadonlySet<number> = new Set([
  ErrorCode.ParseError,
  ErrorCode.InvalidRequest,
  ErrorCode.MethodNotFound,
  ErrorCode.InvalidParams,
  ErrorCode.UnknownTip,
  ErrorCode.UnknownGroup,
  ErrorCode.UnknownAction,
  ErrorCode.InvalidRule,
  ErrorCode.Forbidden,
  ErrorCode.TestingDisabled,
  ErrorCode.VirtualClockDisabled,
]);

/** What the sender needs from the client. */
export interface OutboxLink {
  readonly state: "connecting" | "connected" | "disconnected" | "closed";
  /** The account the live session is signed in as (hosted mode), if any. */
  readonly sessionAccount: string | undefined;
  /** Sends one request on the live connection (never throws). */
  send(method: string, params: unknown): Promise<CallResult>;
  sleep(ms: number): Promise<void>;
  /** The node's answer to a change that changed a tip (a `TipState`): the snapshot records it. */
  answered(method: string, result: unknown): void;
}

/**
 * Sends the outbox in order, one change at a time, while connected: a change leaves the outbox when the node
 * answered it (its result, or an error saying it can never be applied: {@link REFUSED_FOR_GOOD}); one whose outcome
 * is unknown (the connection dropped, no answer in time, -32016) or that failed for now (a quota, a datastore
 * failure) stays first in line and is sent again, with its key, after a backoff or on the next connection.
 */
export class OutboxSender {
  private running = false;
  private again = false;
  private readonly waiters = new Map<string, Set<(result: CallResult) => void>>();
  private readonly drainedListeners = new Set<() => void>();

  constructor(private readonly offline: OfflineState, private readonly link: OutboxLink, private readonly logger: Logger) {}

  /** Resolves with the node's answer to the change with this key (if this client lives to hear it). */
  answer(key: string): Promise<CallResult> {
    return new Promise((resolve) => {
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(resolve);
    });
  }

  /** Stops waiting for the answer to the change with this key (it was never queued). */
  forget(key: string): void {
    this.waiters.delete(key);
  }

  /** Calls `listener` whenever the outbox becomes empty. */
  onDrained(listener: () => void): () => void {
    this.drainedListeners.add(listener);
    return () => {
      this.drainedListeners.delete(listener);
    };
  }

  /** Starts sending, if connected and not already sending. */
  kick(): void {
    this.again = true;
    if (this.running) return;
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.again && this.link.state === "connected" && this.offline.outbox.length > 0) this.kick();
    });
  }

  private settle(key: string, result: CallResult): void {
    const set = this.waiters.get(key);
    this.waiters.delete(key);
    if (set) for (const resolve of set) resolve(result);
  }

  private async run(): Promise<void> {
    await this.offline.restored;
    let attempt = 0;
    while (this.link.state === "connected") {
      this.again = false;
      const change = this.offline.outbox[0];
      if (!change) {
        for (const listener of [...this.drainedListeners]) listener();
        return;
      }
      const session = this.link.sessionAccount;
      if (change.account !== undefined && session !== undefined && change.account !== session) {
        this.logger.warn(`dropped a queued ${change.method} made as ${change.account}: this session is signed in as ${session}`);
        await this.offline.remove(change);
        this.settle(change.params.idempotencyKey, { ok: false, error: new ConnectionError("EUNAUTHORIZED", "made by another account", change.method) });
        continue;
      }
      const result = await this.link.send(change.method, change.params);
      if (result.ok) {
        attempt = 0;
        this.link.answered(change.method, result.value);
        await this.offline.remove(change);
        this.settle(change.params.idempotencyKey, result);
        continue;
      }
      const e = result.error;
      if (e instanceof TipsdError && REFUSED_FOR_GOOD.has(e.code)) {
        // The node refused it (an unknown tip, invalid params…): sending it again would be refused again.
        this.logger.warn(`a queued change was refused and is dropped: ${e.message}`);
        await this.offline.remove(change);
        this.settle(change.params.idempotencyKey, result);
        continue;
      }
      // Unknown outcome: the change stays first in line.
      if (e instanceof ConnectionError && e.code !== "ETIMEDOUT") return; // sent again once connected
      if (e instanceof TipsdError && e.code === ErrorCode.Unauthorized) return; // the session is being replaced
      const retryAfter = e instanceof TipsdError ? Number((e.data as { retryAfter?: unknown } | undefined)?.retryAfter) : NaN;
      await this.link.sleep(Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : Math.min(2_000, 100 * 2 ** attempt));
      attempt++;
    }
  }
}
