// hooks/useTipVisibilityStore.ts — the same hook over useSyncExternalStore (the client README's version): one store
// per tip, shared by every component showing it, over the native module on iOS and tipsdNativeModule elsewhere.
import { useSyncExternalStore } from "react";
import { requireOptionalNativeModule } from "expo-modules-core";
import { tipKitVisibilityStore } from "@tipsd/client";

const RorkTipKit = requireOptionalNativeModule("RorkTipKit");

export function useTipVisibility(tipId: string): boolean {
  const store = tipKitVisibilityStore(RorkTipKit, tipId);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
}
