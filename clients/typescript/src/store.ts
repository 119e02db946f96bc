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
  /** Whether the tip should display now. False until the daemon says otherwise, and while disconnected (by default). */
  getSnapshot(): boolean;
  /** For server rendering: always false. */
  getServerSnapshot(): boolean;
  /** The last change seen for the tip (status, reason, content), if any. */
  getState(): TipChange | undefined;
}

export interface TipVisibilityStoreOptions {
  /**
   * Report `false` while the client is not connected (default true): a tip whose daemon is gone cannot be
   * recorded as displayed or invalidated, so it is safer to hide it. The last known value returns on reconnection.
   */
  hideWhileDisconnected?: boolean;
}

// Anything with `observe`, `onConnectionChange` and `connected` works (a TipsClient, or a test double).
type ObservableClient = Pick<TipsClient<boolean>, "observe" | "onConnectionChange" | "connected">;

const cache = new WeakMap<object, Map<string, TipVisibilityStore>>();

/**
 * The visibility store of `tipId` on `client`. Calls with the same client, tip and options return the same store,
 * so it is safe to call during render.
 */
export function tipVisibilityStore(client: ObservableClient, tipId: string, options: TipVisibilityStoreOptions = {}): TipVisibilityStore {
  const hide = options.hideWhileDisconnected ?? true;
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
  let last: TipChange | undefined;
  let snapshot = false;
  let stopObserving: Unsubscribe | undefined;
  let stopWatchingConnection: Unsubscribe | undefined;

  const compute = () => (last ? last.shouldDisplay : false) && (!hideWhileDisconnected || client.connected);
  const update = () => {
    const next = compute();
    if (next === snapshot) return;
    snapshot = next;
    for (const listener of [...listeners]) {
      if (listeners.has(listener)) listener();
    }
  };

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
    getSnapshot: () => snapshot,
    getServerSnapshot: () => false,
    getState: () => last,
  };
}
