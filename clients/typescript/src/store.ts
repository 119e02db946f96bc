/**
 * A framework-free visibility store for one tip: `subscribe(listener) → unsubscribe` and
 * `getSnapshot() → boolean`, exactly what React's `useSyncExternalStore` consumes — without importing React.
 *
 * ```tsx
 * // useTipVisibility.ts — in the app, where React is installed
 * import { useSyncExternalStore } from "react";
 * import { tipVisibilityStore } from "@tipsd/client";
 * import { tips } from "./tips"; // export const tips = createClient({ transport: webSocketTransport(URL) })
 *
 * export function useTipVisibility(tipId: string): boolean {
 *   const store = tipVisibilityStore(tips, tipId); // cached: the same store for the same client and tip
 *   return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
 * }
 * ```
 */
import type { TipChange, TipsClient, Unsubscribe } from "./client.js";

export interface TipVisibilityStore {
  readonly tipId: string;
  /** Registers a change listener; the tip is observed while at least one listener is registered. */
  subscribe(onStoreChange: () => void): Unsubscribe;
  /**
   * Whether the tip should display now. Without `storage`: false until the daemon says otherwise, and while
   * disconnected (by default). With `storage` (offline first): the last state the node gave — stored by an earlier
   * run, so right from the start, before any connection — and kept while offline (see {@link isStale}).
   */
  getSnapshot(): boolean;
  /** For server rendering: always false. */
  getServerSnapshot(): boolean;
  /** The last change seen for the tip (status, reason, content — `tip.title`, `tip.message`…), if any. */
  getState(): TipChange | undefined;
  /**
   * True while the value is not the node's current one: the client (with `storage`) is offline, and the snapshot is
   * the last state stored or heard. Listeners are called when it changes, too (`useSyncExternalStore(store.subscribe,
   * store.isStale)` re-renders on it).
   */
  isStale(): boolean;
}

export interface TipVisibilityStoreOptions {
  /**
   * Report `false` while the client is not connected (default true, but false for a client with `storage`, whose
   * changes made offline are queued and sent later): a tip whose daemon is gone cannot be recorded as displayed or
   * invalidated, so without storage it is safer to hide it. The last known value returns on reconnection.
   */
  hideWhileDisconnected?: boolean;
}

// Anything with `observe`, `onConnectionChange` and `connected` works (a TipsClient, or a test double); the offline
// members are optional.
type ObservableClient = Pick<TipsClient<boolean>, "observe" | "onConnectionChange" | "connected"> &
  Partial<Pick<TipsClient<boolean>, "offline" | "stale" | "storedTip" | "restored">>;

const cache = new WeakMap<object, Map<string, TipVisibilityStore>>();

/**
 * The visibility store of `tipId` on `client`. Calls with the same client, tip and options return the same store,
 * so it is safe to call during render.
 */
export function tipVisibilityStore(client: ObservableClient, tipId: string, options: TipVisibilityStoreOptions = {}): TipVisibilityStore {
  const hide = options.hideWhileDisconnected ?? client.offline !== true;
  let perClient = cache.get(client);
  if (!perClient) {
    perClient = new Map();
    cache.set(client, perClient);
  }
  const key = `${hide ? "h" : "k"}:${tipId}`;
  const existing = perClient.get(key);
  if (existing) return existing;
  const store = createTipVisibilityStore(client, tipId, hide);
  perClient.set(key, store);
  return store;
}

function createTipVisibilityStore(client: ObservableClient, tipId: string, hideWhileDisconnected: boolean): TipVisibilityStore {
  const listeners = new Set<() => void>();
  // Offline first: the stored state, until the node says otherwise.
  let last: TipChange | undefined = client.storedTip ? client.storedTip(tipId) : undefined;
  let stopObserving: Unsubscribe | undefined;
  let stopWatchingConnection: Unsubscribe | undefined;
  const staleNow = () => client.stale === true;

  const compute = () => (last ? last.shouldDisplay : false) && (!hideWhileDisconnected || client.connected);
  let snapshot = compute();
  let stale = staleNow();
  const update = () => {
    const next = compute();
    const nextStale = staleNow();
    if (next === snapshot && nextStale === stale) return;
    snapshot = next;
    stale = nextStale;
    for (const listener of [...listeners]) {
      if (listeners.has(listener)) listener();
    }
  };
  // An asynchronous storage (AsyncStorage): the stored state arrives a little later.
  if (last === undefined && client.offline === true && client.restored && client.storedTip) {
    const storedTip = client.storedTip.bind(client);
    client.restored.then(() => {
      if (last !== undefined) return;
      last = storedTip(tipId);
      if (listeners.size > 0) update();
      else snapshot = compute();
    });
  }

  return {
    tipId,
    subscribe(onStoreChange: () => void): Unsubscribe {
      listeners.add(onStoreChange);
      if (!stopObserving) {
        stopObserving = client.observe(tipId, (change) => {
          last = change;
          update();
        });
        stopWatchingConnection = client.onConnectionChange(update);
        snapshot = compute();
        stale = staleNow();
      }
      let subscribed = true;
      return () => {
        if (!subscribed) return;
        subscribed = false;
        listeners.delete(onStoreChange);
        if (listeners.size === 0 && stopObserving) {
          stopObserving();
          stopObserving = undefined;
          if (stopWatchingConnection) stopWatchingConnection();
          stopWatchingConnection = undefined;
        }
      };
    },
    // Not subscribed: nothing keeps the snapshot current, so it is computed (the same value while nothing changes).
    getSnapshot: () => (stopObserving ? snapshot : compute()),
    getServerSnapshot: () => false,
    getState: () => last,
    isStale: () => (stopObserving ? stale : staleNow()),
  };
}
