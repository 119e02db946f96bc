// The adapter against the seed's module, checked by tsc --strict (clients/run-tests-typescript.sh builds this
// directory): exactly the same members, each assignable both ways, and the README's one-line change compiles.
// Nothing here runs.
import type { RorkTipKitModule } from "./RorkTipKitModule";
import { requireOptionalNativeModule } from "expo-modules-core";
import { StorageAdapter, tipsdNativeModule, TipsdNativeModule } from "@tipsd/client";

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** No member missing, none added. */
export const sameMembers: Same<keyof TipsdNativeModule, keyof RorkTipKitModule> = true;

/** Each member as the seed's module declares it, both ways. */
export function sameSurface(adapter: TipsdNativeModule, native: RorkTipKitModule): [RorkTipKitModule, TipsdNativeModule] {
  return [adapter, native];
}

/** The one-line change of the README ("Already using seed 000's bridge?"). */
export function oneLineChange(url: string, token: string | (() => Promise<string>)): RorkTipKitModule {
  const RorkTipKit = requireOptionalNativeModule<RorkTipKitModule>("RorkTipKit") ?? tipsdNativeModule({ url, token });
  return RorkTipKit;
}

/** The README's airplane-mode line (issue #37): the same, with AsyncStorage (or localStorage) as its storage. */
export function offlineLineChange(url: string, token: string, storage: StorageAdapter): RorkTipKitModule {
  return requireOptionalNativeModule<RorkTipKitModule>("RorkTipKit") ?? tipsdNativeModule({ url, token, storage });
}
