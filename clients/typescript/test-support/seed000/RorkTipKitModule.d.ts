/**
 * Seed 000's native module as JavaScript sees it, written from its Swift declaration — not from the adapter — so
 * that `tipsdNativeModule` drifting from it fails `tsc --strict` (drift.ts):
 *
 *     Name("RorkTipKit")
 *     AsyncFunction("donateEvent") { (eventId: String) -> Void in … }
 *     AsyncFunction("invalidateTip") { (tipId: String) -> Void in … }
 *     Events("onTipAction")
 *     // RorkTipKitModule+Dispatch.swift
 *     sendEvent("onTipAction", ["tipId": tipId, "actionId": actionId])   // + the actions, as an array ("from day one")
 *     // RorkTipKitModule+Observe.swift
 *     sendEvent("onTipDisplayChange", ["tipId": tipId, "shouldDisplay": shouldDisplay])
 *
 * Expo (SDK 52+) makes each AsyncFunction a method returning a Promise, and the module object an
 * `EventEmitter<Events>` (expo-modules-core's `NativeModule`): `addListener` returning an `EventSubscription`,
 * `removeListener`, `removeAllListeners`, `emit`, `listenerCount`.
 */
export type RorkTipKitEvents = {
  onTipAction: (payload: {
    tipId: string;
    actionId: string;
    actions: { id: string; title: string; index: number }[];
  }) => void;
  onTipDisplayChange: (event: { tipId: string; shouldDisplay: boolean }) => void;
};

export type EventSubscription = { remove(): void };

export interface RorkTipKitModule {
  donateEvent(eventId: string): Promise<void>;
  invalidateTip(tipId: string): Promise<void>;
  addListener<EventName extends keyof RorkTipKitEvents>(
    eventName: EventName,
    listener: RorkTipKitEvents[EventName],
  ): EventSubscription;
  removeListener<EventName extends keyof RorkTipKitEvents>(
    eventName: EventName,
    listener: RorkTipKitEvents[EventName],
  ): void;
  removeAllListeners(eventName: keyof RorkTipKitEvents): void;
  emit<EventName extends keyof RorkTipKitEvents>(
    eventName: EventName,
    ...args: Parameters<RorkTipKitEvents[EventName]>
  ): void;
  listenerCount<EventName extends keyof RorkTipKitEvents>(eventName: EventName): number;
}
