// modules/rork-tipkit/index.ts
import { requireOptionalNativeModule } from "expo-modules-core";
 
type TipActionPayload = {
  tipId: string;
  actionId: string;
};
 
// Since SDK 52 the module's JS object is a NativeModule that already
// extends EventEmitter. The old new EventEmitter(module) form is gone.
const RorkTipKit = requireOptionalNativeModule("RorkTipKit");
 
export const tipKit = {
  /**
   * Records an event that may trigger a registered tip to display.
   * Safe to call repeatedly — TipKit handles frequency control.
   */
  async donate(eventId: string): Promise<void> {
    if (!RorkTipKit) return; // No-op on iOS < 17 and Android
    try {
      await RorkTipKit.donateEvent(eventId);
    } catch (e) {
      console.warn("[tipKit.donate] failed", e);
    }
  },
 
  /**
   * Marks a tip as dismissed.
   * Always call this when the user explicitly closes a tip.
   */
  async invalidate(tipId: string): Promise<void> {
    if (!RorkTipKit) return;
    try {
      await RorkTipKit.invalidateTip(tipId);
    } catch (e) {
      console.warn("[tipKit.invalidate] failed", e);
    }
  },
 
  /**
   * Subscribes to action button taps.
   * Returns an unsubscribe function.
   */
  onAction(listener: (payload: TipActionPayload) => void): () => void {
    if (!RorkTipKit) return () => {};
    const subscription = RorkTipKit.addListener("onTipAction", listener);
    return () => subscription.remove();
  }
};
