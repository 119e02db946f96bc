// hooks.ts — the signed-in user's client, and a tip's visibility over useSyncExternalStore.
import { useEffect, useState, useSyncExternalStore } from "react";
import auth from "@react-native-firebase/auth";
import { TipsClient, tipVisibilityStore } from "@tipsd/client";
import { tipsClientFor } from "./tips";

/** The signed-in user's client, null while nobody is signed in. A sign-out (or another user) closes it. */
export function useTipsClient(): TipsClient | null {
  const [client, setClient] = useState<TipsClient | null>(null);
  useEffect(() => {
    let current: TipsClient | null = null;
    const replace = (next: TipsClient | null) => {
      if (current) void current.close();
      current = next;
      setClient(next);
    };
    const stop = auth().onAuthStateChanged((user) => replace(user ? tipsClientFor(user) : null));
    return () => {
      stop();
      replace(null);
    };
  }, []);
  return client;
}

/** Nobody signed in: every tip hidden. */
const hidden = { subscribe: () => () => {}, getSnapshot: () => false, getServerSnapshot: () => false };

/**
 * Whether the tip should show now: false until tipsd says otherwise, and while it is unreachable. One store per
 * client and tip (`tipVisibilityStore` caches it), shared by every component showing the tip.
 */
export function useTipVisibility(client: TipsClient | null, tipId: string): boolean {
  const store = client ? tipVisibilityStore(client, tipId) : hidden;
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
}
