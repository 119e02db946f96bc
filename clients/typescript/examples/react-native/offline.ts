// offline.ts — the offline-first variant of tips.ts and hooks.ts (issue #37): the signed-in user's client keeps its
// tips and the changes made without a network in AsyncStorage. At start the app draws the tips the node last gave —
// before any connection, even in airplane mode — and marks them stale until the node confirms them; donations,
// impressions and dismissals made offline are stored with their idempotency keys and sent, in order and once each,
// when the network is back (also after the app was killed meanwhile).
import { useEffect, useState, useSyncExternalStore } from "react";
import AsyncStorage from "@react-native-async-storage/async-storage";
import type { FirebaseAuthTypes } from "@react-native-firebase/auth";
import auth from "@react-native-firebase/auth";
import { createClient, TipChange, TipsClient, tipVisibilityStore, webSocketTransport } from "@tipsd/client";
import { idTokenProvider, TIPSD_URL } from "./tips";

/**
 * The user's offline-first client. AsyncStorage fits the client's storage interface as it is; each user of the
 * device gets their own keys, so one user's queued changes are never sent as another's.
 */
export function offlineTipsClientFor(user: FirebaseAuthTypes.User): TipsClient {
  return createClient({
    transport: webSocketTransport(TIPSD_URL, { token: idTokenProvider(user) }),
    storage: AsyncStorage,
    storageKey: `tipsd:${user.uid}`,
  });
}

/**
 * The signed-in user's client, null while nobody is signed in; a sign-out (or another user) closes it. AsyncStorage
 * answers asynchronously: the stored tips arrive a moment after the client is made (no network involved), and the
 * stores update then. To have them in the very first frame, keep the splash screen up until `client.restored`.
 */
export function useOfflineTipsClient(): TipsClient | null {
  const [client, setClient] = useState<TipsClient | null>(null);
  useEffect(() => {
    let current: TipsClient | null = null;
    const replace = (next: TipsClient | null) => {
      if (current) void current.close();
      current = next;
      setClient(next);
    };
    const stop = auth().onAuthStateChanged((user) => replace(user ? offlineTipsClientFor(user) : null));
    return () => {
      stop();
      replace(null);
    };
  }, []);
  return client;
}

const hidden = {
  subscribe: () => () => {},
  getSnapshot: () => false,
  getServerSnapshot: () => false,
  isStale: () => false,
  getState: (): TipChange | undefined => undefined,
};

/**
 * Whether the tip should show, its copy as the node last sent it, and whether that is stale (offline: the last state
 * known, not the node's now). With storage, the store keeps the last value while offline instead of hiding the tip.
 */
export function useOfflineTip(client: TipsClient | null, tipId: string): { visible: boolean; stale: boolean; title: string | null } {
  const store = client ? tipVisibilityStore(client, tipId) : hidden;
  const visible = useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
  const stale = useSyncExternalStore(store.subscribe, store.isStale, () => false);
  const state = store.getState();
  return { visible, stale, title: state ? state.tip.title : null };
}
