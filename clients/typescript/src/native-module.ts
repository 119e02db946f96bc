/**
 * Seed 000's bridge on Android and the web. The seed's app code talks to TipKit through an Expo native module,
 * `RorkTipKit`, found with `requireOptionalNativeModule("RorkTipKit")`; {@link tipsdNativeModule} returns an object
 * with that module's surface, backed by a {@link TipsClient}, so the seed's wrapper, callers and hooks run
 * unchanged where there is no TipKit:
 *
 * ```ts
 * const RorkTipKit = requireOptionalNativeModule("RorkTipKit") ?? tipsdNativeModule({ url, token });
 * ```
 *
 * The surface, as Expo (SDK 52+) gives the seed's `ModuleDefinition` to JavaScript:
 * - `donateEvent(eventId)` and `invalidateTip(tipId)` — the two `AsyncFunction`s (`invalidateTip` invalidates with
 *   `tipClosed`, the reason seed 000's pitfalls ask a close handler for; an optional second argument picks another);
 * - the `EventEmitter` of `Events("onTipAction")` and of the `onTipDisplayChange` events the seed's observer sends:
 *   `addListener(eventName, listener) → { remove() }`, `removeListener`, `removeAllListeners`, `emit`,
 *   `listenerCount`.
 *
 * Events: `onTipAction` `{ tipId, actionId, actions }` for every action performed on any tip, by any client of the
 * daemon (`actions` is always an array, `actionId` its first element's id); `onTipDisplayChange`
 * `{ tipId, shouldDisplay }` for every tip, first its current value, then each change (and, with
 * `hideWhileDisconnected`, false while the daemon is unreachable). The daemon is subscribed to while an event has
 * listeners, as a native module starts observing on its first listener and stops after its last.
 *
 * Never thrown at the app: the calls resolve to `undefined` whatever happens. A call made while the first
 * connection attempt is under way waits for it and is sent when it succeeds; a call made while the daemon is
 * unreachable is dropped (logged once per outage), as every non-strict client call is — unless the module has a
 * `storage` (issue #37: AsyncStorage on Android, `localStorage` on the web): then `donateEvent` and `invalidateTip`
 * are stored and sent in order once the daemon is back (through airplane mode and app restarts, each applied once),
 * and `onTipDisplayChange` starts with the stored state of every tip, before any connection. The client reconnects
 * with backoff and re-establishes the event subscriptions by itself.
 */
import { ClientOptions, consoleLogger, createClient, Logger, TipsClient, Unsubscribe } from "./client.js";
import type { Action, Reason } from "./protocol.js";
import type { TransportFactory } from "./transport.js";
import type { TokenSource } from "./auth.js";
import { webSocketTransport, WebSocketTransportOptions } from "./websocket.js";

/** `onTipAction`: the tip, the first action's id (the seed's payload) and every action performed (an array). */
export interface TipActionEvent {
  tipId: string;
  actionId: string;
  actions: Action[];
}

/** `onTipDisplayChange`: whether the tip may be shown now (the seed's `shouldDisplayUpdates` bridge). */
export interface TipDisplayChangeEvent {
  tipId: string;
  shouldDisplay: boolean;
}

/** The module's events and their listeners. */
export interface TipKitEvents {
  onTipAction: (event: TipActionEvent) => void;
  onTipDisplayChange: (event: TipDisplayChangeEvent) => void;
}

export type TipKitEventName = keyof TipKitEvents;

/** What `addListener` returns (Expo's `EventSubscription`). */
export interface EventSubscription {
  remove(): void;
}

/** The `RorkTipKit` module's surface, as {@link tipsdNativeModule} implements it. */
export interface TipsdNativeModule {
  /** Records an event that may make a tip displayable. */
  donateEvent(eventId: string): Promise<void>;
  /** Invalidates a tip — `tipClosed` unless another reason is given. */
  invalidateTip(tipId: string, reason?: Reason): Promise<void>;
  addListener<E extends TipKitEventName>(eventName: E, listener: TipKitEvents[E]): EventSubscription;
  removeListener<E extends TipKitEventName>(eventName: E, listener: TipKitEvents[E]): void;
  removeAllListeners(eventName: TipKitEventName): void;
  /** Calls the event's listeners with the payload, as Expo's `emit` does (nothing reaches the daemon). */
  emit<E extends TipKitEventName>(eventName: E, ...args: Parameters<TipKitEvents[E]>): void;
  listenerCount(eventName: TipKitEventName): number;
}

type AdapterClientOptions = Omit<ClientOptions<false>, "transport" | "strict">;

interface AdapterOptions {
  /**
   * Report `shouldDisplay: false` for every tip while the daemon is unreachable (default true without `storage`: a
   * tip whose daemon is gone cannot be recorded as displayed or invalidated; default false with `storage`, whose
   * changes are queued and sent later, and whose stored tips are shown from the start). The daemon's value comes back
   * on reconnection.
   */
  hideWhileDisconnected?: boolean;
}

/** {@link tipsdNativeModule}'s options: where the daemon is (a WebSocket URL and token, a transport, or a client). */
export type TipsdNativeModuleOptions = AdapterOptions &
  (
    | (Omit<AdapterClientOptions, "token"> &
        Omit<WebSocketTransportOptions, "token"> & {
          /** `tipsd serve --listen`'s address, e.g. `ws://127.0.0.1:8787/`. */
          url: string;
          /**
           * The daemon's token (`tipsd token`), a hosted node's JWT (the signed-in user's), or a (possibly async)
           * provider asked before each connection attempt and, in hosted mode, before the session's token expires.
           */
          token: TokenSource;
        })
    | (AdapterClientOptions & { transport: TransportFactory })
    | {
        /** A client of your own (not strict), shared with the rest of the app. */
        client: TipsClient<false>;
      }
  );

const clients = new WeakMap<object, TipsClient<false>>();

/**
 * The client behind a module made by {@link tipsdNativeModule} (undefined for any other object): for what the
 * native surface does not offer — `close()`, `waitUntilConnected()`, `explain()`, the connection state.
 */
export function tipsdClientOf(module: unknown): TipsClient<false> | undefined {
  return module !== null && typeof module === "object" ? clients.get(module) : undefined;
}

/**
 * An object with the `RorkTipKit` native module's surface, backed by tipsd. Returns at once (the connection is
 * made in the background), so it fits the seed's module-level `const RorkTipKit = …`.
 */
export function tipsdNativeModule(options: TipsdNativeModuleOptions): TipsdNativeModule {
  let client: TipsClient<false>;
  let logger: Logger = consoleLogger;
  if ("client" in options) {
    client = options.client;
  } else {
    const { hideWhileDisconnected: _hide, ...rest } = options;
    if (rest.logger !== undefined) logger = rest.logger ?? { warn: () => {} };
    if ("url" in rest) {
      const { url, token, openTimeoutMs, trafficTap, protocols, headers, authorizationHeader, WebSocket, ...clientOptions } = rest;
      const transport = webSocketTransport(url, { token, openTimeoutMs, trafficTap, protocols, headers, authorizationHeader, WebSocket });
      client = createClient<false>({ ...clientOptions, transport });
    } else {
      client = createClient<false>(rest);
    }
  }
  // Offline first: a client with storage keeps showing the last known state while offline.
  const hideWhileDisconnected = options.hideWhileDisconnected ?? !client.offline;

  const listeners = new Map<string, Set<(payload: never) => void>>();
  const listenersOf = (eventName: string) => {
    let set = listeners.get(eventName);
    if (!set) listeners.set(eventName, (set = new Set()));
    return set;
  };
  const emit = (eventName: string, payload: unknown) => {
    const set = listeners.get(eventName);
    if (!set) return;
    for (const listener of [...set]) {
      if (!set.has(listener)) continue;
      try {
        (listener as (payload: unknown) => void)(payload);
      } catch (e) {
        (logger.error ?? logger.warn).call(logger, `an ${eventName} listener threw`, e);
      }
    }
  };
  /** Resolves to undefined, whatever the call comes to (a client given by the app might be strict after all). */
  const quietly = (call: () => Promise<unknown>): Promise<void> =>
    call().then(
      () => undefined,
      (e) => logger.warn(`tipsd call failed: ${e instanceof Error ? e.message : String(e)}`),
    );

  // ─── onTipAction: one actions/subscribe while the event has listeners ──────────────────────────────────────
  let stopActions: Unsubscribe | undefined;
  const startActions = () => {
    stopActions = client.onAction(({ tipId, actions }) => {
      const event: TipActionEvent = { tipId, actionId: actions.length > 0 ? actions[0].id : "", actions };
      emit("onTipAction", event);
    });
  };

  // ─── onTipDisplayChange: one tips/observe of every tip while the event has listeners ──────────────────────
  const known = new Map<string, boolean>(); // the daemon's shouldDisplay per tip
  const shown = new Map<string, boolean>(); // what the listeners were last told
  let stopDisplay: Unsubscribe | undefined;
  const publish = (tipId: string) => {
    const value = (known.get(tipId) ?? false) && (!hideWhileDisconnected || client.connected);
    if (shown.get(tipId) === value) return;
    shown.set(tipId, value);
    const event: TipDisplayChangeEvent = { tipId, shouldDisplay: value };
    emit("onTipDisplayChange", event);
  };
  const startDisplay = () => {
    const stopObserving = client.observe({}, (change) => {
      if (change.type !== "tip") return;
      known.set(change.id, change.shouldDisplay);
      publish(change.id);
    });
    const stopWatching = client.onConnectionChange(() => {
      for (const tipId of known.keys()) publish(tipId);
    });
    stopDisplay = () => {
      stopObserving();
      stopWatching();
      known.clear();
      shown.clear();
    };
  };
  /** A listener added while the tips are already observed is told their current values, as the first one was. */
  const catchUp = (listener: (event: TipDisplayChangeEvent) => void) => {
    const values = [...shown];
    Promise.resolve().then(() => {
      for (const [tipId, shouldDisplay] of values) {
        if (!listeners.get("onTipDisplayChange")?.has(listener as (payload: never) => void)) return;
        if (shown.get(tipId) !== shouldDisplay) continue; // a newer value was emitted meanwhile, to this listener too
        try {
          listener({ tipId, shouldDisplay });
        } catch (e) {
          (logger.error ?? logger.warn).call(logger, "an onTipDisplayChange listener threw", e);
        }
      }
    });
  };

  const stopIfUnused = (eventName: string) => {
    if ((listeners.get(eventName)?.size ?? 0) > 0) return;
    if (eventName === "onTipAction" && stopActions) {
      stopActions();
      stopActions = undefined;
    } else if (eventName === "onTipDisplayChange" && stopDisplay) {
      stopDisplay();
      stopDisplay = undefined;
    }
  };

  const module: TipsdNativeModule = {
    donateEvent(eventId: string): Promise<void> {
      return quietly(() => client.donate(eventId));
    },
    invalidateTip(tipId: string, reason: Reason = "tipClosed"): Promise<void> {
      return quietly(() => client.invalidate(tipId, reason));
    },
    addListener<E extends TipKitEventName>(eventName: E, listener: TipKitEvents[E]): EventSubscription {
      const set = listenersOf(eventName);
      const first = set.size === 0;
      set.add(listener as (payload: never) => void);
      if (eventName === "onTipAction" && first) startActions();
      if (eventName === "onTipDisplayChange") {
        if (first) startDisplay();
        else catchUp(listener as TipKitEvents["onTipDisplayChange"]);
      }
      return { remove: () => module.removeListener(eventName, listener) };
    },
    removeListener<E extends TipKitEventName>(eventName: E, listener: TipKitEvents[E]): void {
      listeners.get(eventName)?.delete(listener as (payload: never) => void);
      stopIfUnused(eventName);
    },
    removeAllListeners(eventName: TipKitEventName): void {
      listeners.get(eventName)?.clear();
      stopIfUnused(eventName);
    },
    emit<E extends TipKitEventName>(eventName: E, ...args: Parameters<TipKitEvents[E]>): void {
      emit(eventName, args[0]);
    },
    listenerCount(eventName: TipKitEventName): number {
      return listeners.get(eventName)?.size ?? 0;
    },
  };
  clients.set(module, client);
  return module;
}

// ─── The visibility hook's store ────────────────────────────────────────────────────────────────────────────

/** Anything with the module's `addListener` for `onTipDisplayChange`: a {@link tipsdNativeModule}, or the iOS module. */
export interface TipDisplayChangeSource {
  addListener(eventName: "onTipDisplayChange", listener: (event: TipDisplayChangeEvent) => void): EventSubscription;
}

/** What React's `useSyncExternalStore` consumes: `subscribe(onStoreChange) → unsubscribe` and the snapshots. */
export interface TipKitVisibilityStore {
  readonly tipId: string;
  subscribe(onStoreChange: () => void): () => void;
  /** Whether the tip should display now: false until the module says otherwise. */
  getSnapshot(): boolean;
  /** For server rendering: always false. */
  getServerSnapshot(): boolean;
}

const moduleStores = new WeakMap<object, Map<string, TipKitVisibilityStore>>();
const absentStores = new Map<string, TipKitVisibilityStore>();

/**
 * The visibility store of `tipId` over a module's `onTipDisplayChange` events — the seed's `useTipVisibility` hook
 * as a `useSyncExternalStore` store, for the same component on iOS (the native module), Android and the web
 * (`tipsdNativeModule`). A missing module (`null`: `requireOptionalNativeModule` found none) gives a store that
 * is always false. The same module and tip give the same store, so it is safe to call during render:
 *
 * ```ts
 * export function useTipVisibility(tipId: string): boolean {
 *   const store = tipKitVisibilityStore(RorkTipKit, tipId);
 *   return useSyncExternalStore(store.subscribe, store.getSnapshot, store.getServerSnapshot);
 * }
 * ```
 */
export function tipKitVisibilityStore(module: TipDisplayChangeSource | null | undefined, tipId: string): TipKitVisibilityStore {
  const cache = module ? moduleStores.get(module) ?? new Map<string, TipKitVisibilityStore>() : absentStores;
  if (module && !moduleStores.has(module)) moduleStores.set(module, cache);
  let store = cache.get(tipId);
  if (!store) cache.set(tipId, (store = module ? createStore(module, tipId) : constantStore(tipId)));
  return store;
}

function constantStore(tipId: string): TipKitVisibilityStore {
  return { tipId, subscribe: () => () => {}, getSnapshot: () => false, getServerSnapshot: () => false };
}

function createStore(module: TipDisplayChangeSource, tipId: string): TipKitVisibilityStore {
  const listeners = new Set<() => void>();
  let snapshot = false;
  let subscription: EventSubscription | undefined;
  return {
    tipId,
    subscribe(onStoreChange: () => void): () => void {
      listeners.add(onStoreChange);
      if (!subscription) {
        subscription = module.addListener("onTipDisplayChange", (event) => {
          if (event.tipId !== tipId || event.shouldDisplay === snapshot) return;
          snapshot = event.shouldDisplay;
          for (const listener of [...listeners]) if (listeners.has(listener)) listener();
        });
      }
      let subscribed = true;
      return () => {
        if (!subscribed) return;
        subscribed = false;
        listeners.delete(onStoreChange);
        if (listeners.size === 0 && subscription) {
          subscription.remove();
          subscription = undefined;
          snapshot = false; // unobserved: unknown again (the next subscription is told the current value)
        }
      };
    },
    getSnapshot: () => snapshot,
    getServerSnapshot: () => false,
  };
}
