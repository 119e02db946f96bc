/**
 * TipsClient: JSON-RPC 2.0 over any {@link Transport}, with typed methods for every tipsd method, listener-based
 * subscriptions, and resilience: when the daemon is absent or the connection drops, calls resolve to
 * `undefined` with one logged warning per outage (unless `strict`), and the client reconnects with exponential
 * backoff, re-registers what it registered and re-establishes its subscriptions.
 *
 * This module is the public face; the work is done by internal modules:
 * `./connection` (state, transport lifecycle, backoff, no-op mode), `./calls` (request/response bookkeeping,
 * timeouts, strict/lenient outcomes), `./subscriptions` (observe/onAction listeners and notification dispatch),
 * `./registrations` (what is re-sent after a reconnection) and `./options` (options and defaults).
 */
import { ConnectionError } from "./errors.js";
import {
  AnalyticsEvent,
  AnalyticsReadParams,
  AnalyticsReadResult,
  ClientNotificationMap,
  ClockNowResult,
  ClockResult,
  ConfigureParams,
  ConfigureResult,
  DisplayFrequency,
  DonateResult,
  EventConfigureResult,
  Explanation,
  GroupDefinition,
  GroupRegisterResult,
  InitializeResult,
  InspectStateResult,
  JSONObject,
  Method,
  MetricsGetParams,
  MetricsResult,
  ParameterDefinition,
  ParametersDefineResult,
  ParametersSetResult,
  ParameterValue,
  ParamsOf,
  Reason,
  RegisterResult,
  ResultOf,
  StatusResult,
  SuppressParams,
  SuppressionResult,
  SyncStatusResult,
  SignIn,
  AccountsListParams,
  AccountPage,
  AuditPage,
  WebhookEndpoint,
  WebhooksCreateParams,
  WebhooksCreateResult,
  CatalogDiffResult,
  CatalogHistoryResult,
  CatalogPublishResult,
  SyncPullParams,
  SyncPullResult,
  SyncPushParams,
  SyncPushResult,
  AccountExport,
  AccountsImportResult,
  AccountsDeleteResult,
  TipDefinition,
  TipState,
  CatalogReloadResult,
  UnregisterResult,
} from "./protocol.js";
import type { Transport } from "./transport.js";
import { CallResult, Calls, newIdempotencyKey, Outcome } from "./calls.js";
import { ConnectionManager, ConnectionState } from "./connection.js";
import { ClientOptions, Logger, logAt, resolveOptions, Timers } from "./options.js";
import { Registrations } from "./registrations.js";
import { ActionEvent, GroupChange, ObserveTarget, Subscriptions, TipChange, TipMemory, Unsubscribe } from "./subscriptions.js";
import { OfflineState, OutboxSender, StoredTip } from "./offline.js";

// The public types and values defined by the internal modules.
export { ClientOptions, consoleLogger, Logger, ReconnectOptions } from "./options.js";
export { ConnectionState } from "./connection.js";
export { Outcome } from "./calls.js";
export { ActionEvent, ChangeCause, GroupChange, ObserveTarget, TipChange, Unsubscribe } from "./subscriptions.js";

/**
 * Methods that act on no account (hosted mode): `forAccount` and the `account` option never add `params.account`
 * to them. Every other method acts on an account.
 */
/**
 * Methods that change state: each call is sent with a fresh `idempotencyKey`, and retried with it when its outcome
 * is unknown (-32016, a timeout, the connection lost with it in flight), so the daemon applies it once.
 */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([
  "events/donate",
  "tips/displayed",
  "tips/invalidate",
  "tips/performAction",
  "tips/resetEligibility",
  "parameters/set",
  "tips/setVariant",
  "datastore/reset",
]);

const ACCOUNT_FREE: ReadonlySet<string> = new Set([
  "initialize",
  "shutdown",
  "rpc.discover",
  "auth/refresh",
  "accounts/list",
  "accounts/export",
  "accounts/import",
  "accounts/delete",
  "webhooks/create",
  "webhooks/delete",
  "webhooks/list",
  "webhooks/replay",
  "webhooks/test",
  "catalog/reload",
  "catalogs/publish",
  "catalogs/diff",
  "catalogs/rollback",
  "catalogs/schedule",
  "catalogs/history",
  "audit/list",
  "sync/status",
]);

/**
 * A tipsd client. Create one with {@link connect} (waits for the first connection attempt) or
 * {@link createClient} (returns at once — handy for a module-level singleton in an app).
 */
export class TipsClient<S extends boolean = false> {
  private readonly logger: Logger;
  private readonly strict: boolean;
  private readonly connection: ConnectionManager;
  private readonly calls: Calls;
  private readonly subscriptions: Subscriptions;
  private readonly registrations: Registrations;
  private readonly call: (method: string, params: unknown) => Promise<CallResult>;
  private readonly offlineState: OfflineState | undefined;
  private readonly outbox: OutboxSender | undefined;
  private readonly timers: Timers;

  /**
   * Offline-first (`storage`): resolves once the stored tips and changes are loaded — at once with a synchronous
   * storage (`localStorage`, `fileStorage`, `memoryStorage`), after a read with AsyncStorage. Without storage, resolved.
   */
  readonly restored: Promise<void>;

  /** The daemon's `initialize` result for the current (or last) connection. */
  initializeResult: InitializeResult | undefined;

  /** The error of the last failed connection attempt (or of the session the daemon ended). */
  lastError: ConnectionError | undefined;

  /**
   * Hosted mode: who the current (or last) session is signed in as — the account, whether it is the admin, and
   * when its token expires (updated by each refresh). Undefined on a daemon that serves one user's state.
   */
  auth: SignIn | undefined;

  /**
   * Hosted mode, admin token: the account this client's account-scoped requests and subscriptions act on
   * (`params.account`), from the `account` option or {@link forAccount}.
   */
  readonly account: string | undefined;

  constructor(options: ClientOptions<S>) {
    if (!options || typeof options.transport !== "function") throw new TypeError("TipsClient: options.transport must be a function");
    const settings = resolveOptions(options);
    this.logger = settings.logger;
    this.strict = settings.strict;
    this.timers = settings.timers;
    this.offlineState = settings.storage
      ? new OfflineState({ storage: settings.storage, storageKey: settings.storageKey, maxQueuedChanges: settings.maxQueuedChanges }, settings.logger)
      : undefined;
    this.restored = this.offlineState ? this.offlineState.restored : Promise.resolve();
    this.connection = new ConnectionManager(settings, this, {
      connected: (conn, reconnection) => {
        this.registrations.replay(conn, reconnection);
        this.subscriptions.attach(conn);
        if (this.offlineState) this.offlineState.signedIn(this.auth?.account ?? undefined);
      },
      lost: (conn) => this.subscriptions.detach(conn),
      closing: () => this.subscriptions.clear(),
      notification: (conn, method, params) => this.subscriptions.dispatch(conn, method, params),
    });
    this.calls = new Calls(this.connection, settings.logger, settings.strict, settings.timers);
    this.call = (method, params) => this.calls.call(method, params);
    const offline = this.offlineState;
    let memory: TipMemory | undefined;
    if (offline) {
      memory = {
        record: (change) => offline.recordTip(change, this.now()),
        stored: () => [...offline.tips.values()].map(storedChange),
        whenRestored: (listener) => offline.whenRestored(listener),
      };
      const client = this;
      this.outbox = new OutboxSender(
        offline,
        {
          get state() {
            return client.connection.state;
          },
          get sessionAccount() {
            return client.auth?.account ?? undefined;
          },
          send: (method, params) => this.calls.call(method, params),
          sleep: (ms) => new Promise<void>((resolve) => this.timers.setTimeout(resolve, ms)),
          answered: (_method, result) => {
            const r = result as { id?: unknown; shouldDisplay?: unknown; status?: unknown; tip?: unknown; reason?: Reason } | null;
            // A TipState (tips/invalidate, tips/displayed, …) of a tip this client keeps: the snapshot follows it.
            if (r && typeof r.id === "string" && typeof r.shouldDisplay === "boolean" && offline.tips.has(r.id) && r.tip && typeof r.tip === "object") {
              const state = { id: r.id, shouldDisplay: r.shouldDisplay, status: r.status as StoredTip["status"], tip: r.tip as StoredTip["tip"], reason: r.reason };
              offline.recordTip(state, this.now());
            }
          },
        },
        settings.logger,
      );
    }
    this.subscriptions = new Subscriptions(this.connection, settings.logger, memory);
    this.registrations = new Registrations(settings.restoreRegistrations, settings.logger);
    this.account = settings.account;
    if (this.outbox) {
      const outbox = this.outbox;
      this.connection.onChange((state) => {
        if (state === "connected") outbox.kick();
      });
    }
    this.connection.startAttempt();
  }

  private now(): number {
    return this.timers.now ? this.timers.now() : Date.now();
  }

  // ─── Offline first (the `storage` option) ───────────────────────────────────────────────────────────────────

  /** Whether this client keeps its state in a storage (the `storage` option). */
  get offline(): boolean {
    return this.offlineState !== undefined;
  }

  /**
   * With `storage`: true while the tips this client knows are the last ones stored or heard, not the node's now —
   * whenever it is not connected. Always false without storage.
   */
  get stale(): boolean {
    return this.offlineState !== undefined && this.connection.state !== "connected";
  }

  /**
   * With `storage`: the last state the node gave for a tip — `shouldDisplay`, status, reason and display copy
   * (`tip`) — from any `observe` of this client or of an earlier run, with `cause: "stored"`; undefined when unknown
   * (or before `restored` resolves, with an asynchronous storage).
   */
  storedTip(id: string): TipChange | undefined {
    const stored = this.offlineState?.tips.get(id);
    return stored ? storedChange(stored) : undefined;
  }

  /** With `storage`: every tip state kept (see {@link storedTip}). */
  storedTips(): TipChange[] {
    return this.offlineState ? [...this.offlineState.tips.values()].map(storedChange) : [];
  }

  /** With `storage`: the changes waiting to be sent (and those sent whose answer has not arrived yet). */
  get queuedChanges(): number {
    return this.offlineState ? this.offlineState.outbox.length : 0;
  }

  /**
   * With `storage`: resolves true once every queued change has been answered by the node, false if that has not
   * happened within `timeoutMs` (default: no limit) or the client is closed first. True at once without storage.
   */
  flush(timeoutMs?: number): Promise<boolean> {
    const offline = this.offlineState;
    const outbox = this.outbox;
    if (!offline || !outbox) return Promise.resolve(true);
    return offline.restored.then(
      () =>
        new Promise<boolean>((resolve) => {
          if (offline.outbox.length === 0) return resolve(true);
          let timer: unknown;
          const finish = (value: boolean) => {
            offDrained();
            offState();
            if (timer !== undefined) this.timers.clearTimeout(timer);
            resolve(value);
          };
          const offDrained = outbox.onDrained(() => finish(true));
          const offState = this.connection.onChange((state) => {
            if (state === "closed") finish(false);
          });
          if (timeoutMs !== undefined) timer = this.timers.setTimeout(() => finish(false), timeoutMs);
          if (this.connection.state === "connected") outbox.kick();
        }),
    );
  }

  /**
   * A change with `storage`: stored first (with its idempotency key), then sent in order with the others. Resolves
   * with the node's answer when connected; when not (or when the connection drops before the answer), as soon as it
   * is stored — to undefined, or, strict, rejecting with `ENOTCONNECTED` (the change stays queued either way).
   */
  private async queuedChange(method: string, params: unknown): Promise<unknown> {
    const offline = this.offlineState as OfflineState;
    const outbox = this.outbox as OutboxSender;
    const keyed = { ...((params as object | undefined) ?? {}) } as { idempotencyKey: string; account?: string; [name: string]: unknown };
    if (typeof keyed.idempotencyKey !== "string") keyed.idempotencyKey = newIdempotencyKey();
    if (this.connection.state === "closed") return this.calls.settle({ ok: false, error: new ConnectionError("ECLOSED", "the client is closed", method) });
    // Waited for before it is stored: once in the outbox it may be sent, and answered, at any moment.
    const answer = outbox.answer(keyed.idempotencyKey);
    const account = this.auth?.account ?? offline.account;
    const change = { method, params: keyed, queuedAt: this.now(), ...(account ? { account } : {}) };
    if (!(await offline.enqueue(change))) {
      outbox.forget(keyed.idempotencyKey);
      return this.calls.settle({ ok: false, error: new ConnectionError("ENOTCONNECTED", `the outbox is full (${offline.maxQueuedChanges} changes); this change is dropped`, method) });
    }
    if (this.connection.state === "connected") outbox.kick();
    const result = await new Promise<CallResult>((resolve) => {
      const queued = () => resolve({ ok: false, error: new ConnectionError("ENOTCONNECTED", "tipsd is not connected: the change is stored and will be sent when it is back", method) });
      const off = this.connection.onChange((state) => {
        if (state === "disconnected" || state === "closed") queued();
      });
      answer.then((r) => {
        off();
        resolve(r);
      });
      if (this.connection.state === "disconnected" || this.connection.state === "closed") {
        off();
        queued();
      }
    });
    if (!result.ok && result.error instanceof ConnectionError && result.error.code === "ENOTCONNECTED" && !this.strict) {
      logAt(this.logger, "debug", result.error.message);
      return undefined;
    }
    return this.calls.settle(result);
  }

  /**
   * Hosted mode, admin token: a view of this client whose account-scoped requests and subscriptions act on
   * `account` — `admin.forAccount("alice").status()`, `.donate(…)`, `.observe(…)` — over the same connection (its
   * state, `close()` and every other member are this client's). A user's session acts on its own account only.
   */
  forAccount(account: string): TipsClient<S> {
    if (typeof account !== "string" || !account) throw new TypeError("forAccount: the account must be a non-empty string");
    const view = Object.create(this) as TipsClient<S>;
    Object.defineProperty(view, "account", { value: account, enumerable: true });
    return view;
  }

  // ─── Connection state ─────────────────────────────────────────────────────────────────────────────────────

  get state(): ConnectionState {
    return this.connection.state;
  }

  get connected(): boolean {
    return this.connection.state === "connected";
  }

  get isStrict(): S {
    return this.strict as S;
  }

  /** Listens to connection state changes. */
  onConnectionChange(listener: (state: ConnectionState) => void): Unsubscribe {
    return this.connection.onChange(listener);
  }

  /**
   * Resolves once the client is connected (true), or false when the current attempt fails or the timeout
   * passes. Never rejects.
   */
  waitUntilConnected(timeoutMs?: number): Promise<boolean> {
    return this.connection.waitUntilConnected(timeoutMs);
  }

  /** Waits for the connection attempt in progress, if any; true when connected afterwards. */
  ready(): Promise<boolean> {
    return this.connection.ready();
  }

  /** Skips the backoff wait and tries to connect now (no-op when connected, connecting or closed). */
  reconnectNow(): Promise<boolean> {
    return this.connection.reconnectNow();
  }

  /**
   * Closes the client for good: no more reconnection; pending and later calls become no-ops (or reject with
   * `ECLOSED` when strict). With `{shutdown: true}` it first sends `shutdown` and `exit`, which makes a stdio
   * daemon exit with status 0.
   */
  async close(options: { shutdown?: boolean } = {}): Promise<void> {
    return this.connection.close(!!options.shutdown);
  }

  // ─── Typed methods (calls) ────────────────────────────────────────────────────────────────────────────────

  /** `events/donate`: records an event; resolves to the stored donation count. */
  donate(id: string, info?: JSONObject): Promise<Outcome<S, DonateResult>> {
    return this.request("events/donate", info === undefined ? { id } : { id, info });
  }

  /** `events/configure`: caps the stored donations of an event. */
  configureEvent(id: string, maxDonations: number): Promise<Outcome<S, EventConfigureResult>> {
    this.registrations.configureEvent(id, maxDonations);
    return this.request("events/configure", { id, maxDonations });
  }

  /** `tips/invalidate` (reason defaults to `tipClosed` on the daemon). */
  invalidate(id: string, reason?: Reason): Promise<Outcome<S, TipState>> {
    return this.request("tips/invalidate", reason === undefined ? { id } : { id, reason });
  }

  /** `tips/resetEligibility`. */
  resetEligibility(id: string): Promise<Outcome<S, TipState>> {
    return this.request("tips/resetEligibility", { id });
  }

  /** `tips/configure`. */
  configure(options: ConfigureParams | DisplayFrequency): Promise<Outcome<S, ConfigureResult>> {
    const params = typeof options === "string" ? { displayFrequency: options } : options;
    this.registrations.configure(params.displayFrequency);
    return this.request("tips/configure", params);
  }

  /** `tips/register`: registers (or re-registers) tip definitions. */
  async register(tips: TipDefinition[]): Promise<Outcome<S, RegisterResult>> {
    const result = await this.registrations.register(tips, this.call);
    if (result.ok) this.subscriptions.resubscribePending();
    return this.calls.settle(result) as Outcome<S, RegisterResult>;
  }

  /** `tips/unregister`: resolves to the ids that were registered. */
  unregister(ids: string[]): Promise<Outcome<S, UnregisterResult>> {
    this.registrations.unregister(ids);
    return this.request("tips/unregister", { ids });
  }

  /** `groups/register`. */
  async registerGroup(group: GroupDefinition): Promise<Outcome<S, GroupRegisterResult>> {
    const result = await this.registrations.registerGroup(group, this.call);
    if (result.ok) this.subscriptions.resubscribePending();
    return this.calls.settle(result) as Outcome<S, GroupRegisterResult>;
  }

  /** `groups/unregister`. */
  unregisterGroup(id: string): Promise<Outcome<S, null>> {
    this.registrations.unregisterGroup(id);
    return this.request("groups/unregister", { id });
  }

  /** `parameters/define`. */
  async defineParameters(parameters: ParameterDefinition[]): Promise<Outcome<S, ParametersDefineResult>> {
    return this.calls.settle(await this.registrations.defineParameters(parameters, this.call)) as Outcome<S, ParametersDefineResult>;
  }

  /** `parameters/set`. Values of transient parameters this client defined are re-set after a reconnection. */
  setParameter(id: string, value: ParameterValue): Promise<Outcome<S, ParametersSetResult>> {
    this.registrations.setParameter(id, value);
    return this.request("parameters/set", { id, value });
  }

  /** `tips/displayed`: an impression from a self-drawn UI (`duration` in seconds). */
  displayed(id: string, duration?: number): Promise<Outcome<S, TipState>> {
    return this.request("tips/displayed", duration === undefined ? { id } : { id, duration });
  }

  /** `tips/status`: every tip, or the given ones. */
  status(ids?: string[]): Promise<Outcome<S, StatusResult>> {
    return this.request("tips/status", ids === undefined ? {} : { ids });
  }

  /** `tips/explain`: why is this tip (not) showing? */
  explain(id: string): Promise<Outcome<S, Explanation>> {
    return this.request("tips/explain", { id });
  }

  /** `tips/instantiate`: makes and registers a content tip from a catalog template (stable id per values). */
  instantiate(template: string, values: { [placeholder: string]: string | number | boolean }): Promise<Outcome<S, TipState>> {
    return this.request("tips/instantiate", { template, values });
  }

  /** `catalog/reload`: reloads the daemon's catalog file and applies what changed. */
  reloadCatalog(): Promise<Outcome<S, CatalogReloadResult>> {
    return this.request("catalog/reload", undefined);
  }

  /** `tips/setVariant`: forces the A/B variant a tip shows (null: back to the one the install id picks). */
  setVariant(id: string, variant: string | null): Promise<Outcome<S, TipState>> {
    return this.request("tips/setVariant", { id, variant });
  }

  /** `tips/suppress`: no tip is displayable for `seconds` (or until `resume()`); statuses do not change. Refused by a hosted daemon. */
  suppress(options: SuppressParams = {}): Promise<Outcome<S, SuppressionResult>> {
    return this.request("tips/suppress", options);
  }

  /** `tips/resume`: ends `suppress()`; tips that are displayable show again. */
  resume(): Promise<Outcome<S, SuppressionResult>> {
    return this.request("tips/resume", undefined);
  }

  /** `tips/performAction`: records the action; invalidates the tip (`actionPerformed`) unless `invalidate: false` (here or on the action's definition). */
  performAction(id: string, actionId: string, options: { invalidate?: boolean } = {}): Promise<Outcome<S, TipState>> {
    return this.request(
      "tips/performAction",
      options.invalidate === undefined ? { id, actionId } : { id, actionId, invalidate: options.invalidate },
    );
  }

  /** `testing/showAllTips`. */
  showAllTipsForTesting(): Promise<Outcome<S, null>> {
    return this.request("testing/showAllTips", undefined);
  }

  /** `testing/hideAllTips`. */
  hideAllTipsForTesting(): Promise<Outcome<S, null>> {
    return this.request("testing/hideAllTips", undefined);
  }

  /** `testing/showTips`. */
  showTipsForTesting(ids: string[]): Promise<Outcome<S, null>> {
    return this.request("testing/showTips", { ids });
  }

  /** `testing/hideTips`. */
  hideTipsForTesting(ids: string[]): Promise<Outcome<S, null>> {
    return this.request("testing/hideTips", { ids });
  }

  /** `testing/clear`: removes every testing override. */
  clearTestingOverrides(): Promise<Outcome<S, null>> {
    return this.request("testing/clear", undefined);
  }

  /** `datastore/reset`. */
  datastoreReset(): Promise<Outcome<S, null>> {
    return this.request("datastore/reset", undefined);
  }

  /** `clock/now`. */
  clockNow(): Promise<Outcome<S, ClockNowResult>> {
    return this.request("clock/now", undefined);
  }

  /** `clock/advance` (virtual clock only). */
  clockAdvance(seconds: number): Promise<Outcome<S, ClockResult>> {
    return this.request("clock/advance", { seconds });
  }

  /** `clock/set` (virtual clock only; seconds since the epoch). */
  clockSet(now: number): Promise<Outcome<S, ClockResult>> {
    return this.request("clock/set", { now });
  }

  /** `sync/status`: sync across devices — connection state, outbox, lag, last push and pull. */
  syncStatus(): Promise<Outcome<S, SyncStatusResult>> {
    return this.request("sync/status", undefined);
  }

  /** `sync/push` (hosted mode): a device's operations into the session's account, answered once committed. */
  syncPush(device: string, ops: SyncPushParams["ops"]): Promise<Outcome<S, SyncPushResult>> {
    return this.request("sync/push", { device, ops });
  }

  /** `sync/pull` (hosted mode): the account's operations after a cursor; subscribes the session to `sync/changed`. */
  syncPull(params: SyncPullParams): Promise<Outcome<S, SyncPullResult>> {
    return this.request("sync/pull", params);
  }

  /**
   * `auth/refresh` (hosted mode): replaces the session's token with a newer one for the same account, keeping its
   * subscriptions; `auth` then holds the new expiry. The client does this by itself when it has a token provider.
   */
  async authRefresh(token: string): Promise<Outcome<S, SignIn>> {
    const signIn = await this.request("auth/refresh", { token });
    if (signIn) this.connection.refreshed(signIn);
    return signIn;
  }

  /** `accounts/list` (hosted mode, admin): the accounts PostgreSQL holds, a page at a time. */
  accountsList(params: AccountsListParams = {}): Promise<Outcome<S, AccountPage>> {
    return this.request("accounts/list", params);
  }

  /** `accounts/export` (hosted mode, admin): everything tipsd holds about one account. */
  accountsExport(account: string): Promise<Outcome<S, AccountExport>> {
    return this.request("accounts/export", { account });
  }

  /** `accounts/import` (hosted mode, admin): makes an account from an `accounts/export` result. */
  accountsImport(account: string, exported: AccountExport): Promise<Outcome<S, AccountsImportResult>> {
    return this.request("accounts/import", { account, export: exported });
  }

  /** `accounts/delete` (hosted mode, admin): erases an account everywhere and closes its sessions. */
  accountsDelete(account: string): Promise<Outcome<S, AccountsDeleteResult>> {
    return this.request("accounts/delete", { account });
  }

  /** `catalogs/publish` (hosted mode, admin): lints a catalog and publishes it as the app's next version. */
  catalogsPublish(
    app: string, catalog: Record<string, unknown>, options: { note?: string; dryRun?: boolean } = {},
  ): Promise<Outcome<S, CatalogPublishResult>> {
    return this.request("catalogs/publish", { app, catalog, ...options });
  }

  /** `catalogs/diff` (hosted mode, admin): what changed between two published versions. */
  catalogsDiff(app: string, from: number, to: number): Promise<Outcome<S, CatalogDiffResult>> {
    return this.request("catalogs/diff", { app, from, to });
  }

  /** `catalogs/rollback` (hosted mode, admin): makes a published version current again. */
  catalogsRollback(app: string, version: number): Promise<Outcome<S, { version: number }>> {
    return this.request("catalogs/rollback", { app, version });
  }

  /** `catalogs/schedule` (hosted mode, admin): publishes a stored version at `at` (seconds since the epoch). */
  catalogsSchedule(
    app: string, version: number, at: number,
  ): Promise<Outcome<S, { schedule: number; version: number; at: number }>> {
    return this.request("catalogs/schedule", { app, version, at });
  }

  /** `catalogs/history` (hosted mode, admin): the app's published versions, newest first. */
  catalogsHistory(app: string): Promise<Outcome<S, CatalogHistoryResult>> {
    return this.request("catalogs/history", { app });
  }

  /** `audit/list` (hosted mode, admin): the audit log, oldest first, a page at a time. */
  auditList(params: { app?: string; after?: number; limit?: number } = {}): Promise<Outcome<S, AuditPage>> {
    return this.request("audit/list", params);
  }

  /** `webhooks/create` (hosted mode, admin): an endpoint for some of an app's events; answers its signing secret once. */
  webhooksCreate(params: WebhooksCreateParams): Promise<Outcome<S, WebhooksCreateResult>> {
    return this.request("webhooks/create", params);
  }

  /** `webhooks/list` (hosted mode, admin): the endpoints (of one app, or all), with their delivery state. */
  webhooksList(app?: string): Promise<Outcome<S, { webhooks: WebhookEndpoint[] }>> {
    return this.request("webhooks/list", app === undefined ? {} : { app });
  }

  /** `webhooks/delete` (hosted mode, admin): removes an endpoint and what it had left to deliver. */
  webhooksDelete(app: string, id: number): Promise<Outcome<S, { id: number; deleted: boolean }>> {
    return this.request("webhooks/delete", { app, id });
  }

  /** `webhooks/test` (hosted mode, admin): enqueues a `webhook.test` event for one endpoint. */
  webhooksTest(app: string, id: number): Promise<Outcome<S, { event: number }>> {
    return this.request("webhooks/test", { app, id });
  }

  /** `webhooks/replay` (hosted mode, admin): delivers the app's events after `after` again, under their own ids. */
  webhooksReplay(app: string, after: number): Promise<Outcome<S, { queued: number }>> {
    return this.request("webhooks/replay", { app, after });
  }

  /** `metrics/get`: seed 000's metrics per tip and variant, with their sample sizes (all tips and all history by default). */
  metrics(params: MetricsGetParams = {}): Promise<Outcome<S, MetricsResult>> {
    return this.request("metrics/get", params);
  }

  /** `inspect/state`: everything an inspector shows — tips with their explanations, events, parameters, groups. */
  inspectState(): Promise<Outcome<S, InspectStateResult>> {
    return this.request("inspect/state", {});
  }

  /** `analytics/read`: pulls committed lifecycle events after a cursor (`next` is the cursor to pass next time). */
  analyticsRead(params: AnalyticsReadParams = {}): Promise<Outcome<S, AnalyticsReadResult>> {
    return this.request("analytics/read", params);
  }

  /** `rpc.discover`: the daemon's OpenRPC document. */
  discover(): Promise<Outcome<S, JSONObject>> {
    return this.request("rpc.discover", undefined);
  }

  /** `shutdown`: afterwards the daemon refuses every request on this connection except `exit`. */
  shutdown(): Promise<Outcome<S, null>> {
    return this.request("shutdown", undefined);
  }

  /** `exit` (a notification): over stdio the daemon exits; over a socket this connection closes. */
  exit(): void {
    const conn = this.connection.current;
    if (conn && conn.open) conn.notify("exit", undefined);
  }

  /** Sends a client→server notification (`exit`, `$/cancelRequest`); dropped when not connected. */
  notify<M extends keyof ClientNotificationMap>(method: M, params: ClientNotificationMap[M]): void {
    const conn = this.connection.current;
    if (conn && conn.open && this.connection.state === "connected") conn.notify(method, params);
    else logAt(this.logger, "debug", `${method} not sent: not connected`);
  }

  /** Any request by name, typed through the protocol's method table. */
  request<M extends Method>(method: M, params: ParamsOf<M>): Promise<Outcome<S, ResultOf<M>>> {
    const scoped = this.account === undefined || ACCOUNT_FREE.has(method) ? params : { ...(params ?? {}), account: this.account };
    if (IDEMPOTENT_METHODS.has(method) && this.offlineState) {
      return this.queuedChange(method, scoped) as Promise<Outcome<S, ResultOf<M>>>;
    }
    if (IDEMPOTENT_METHODS.has(method) && (scoped as { idempotencyKey?: unknown } | undefined)?.idempotencyKey === undefined) {
      return this.calls.change(method, scoped).then((r) => this.calls.settle(r)) as Promise<Outcome<S, ResultOf<M>>>;
    }
    return this.calls.request(method, scoped) as Promise<Outcome<S, ResultOf<M>>>;
  }

  // ─── Subscriptions ────────────────────────────────────────────────────────────────────────────────────────

  /**
   * Observes one tip (`observe("filter.tip", listener)`), or tips and groups (`observe({ids, groups}, …)`;
   * `{}` observes every tip, including tips registered later). The listener first receives the current state
   * (`cause: "initial"`), then every change. It is never called twice in a row with the same value for a tip
   * (or group), never called after unsubscribing — even if a notification is already in flight — and after a
   * reconnection it receives `cause: "resync"` changes for whatever differs from what it last saw.
   *
   * Works while disconnected: the subscription is made as soon as a connection is up.
   */
  observe(tipId: string, listener: (change: TipChange) => void): Unsubscribe;
  observe(target: { ids?: string[]; groups?: string[] }, listener: (change: TipChange | GroupChange) => void): Unsubscribe;
  observe(target: ObserveTarget, listener: ((change: TipChange) => void) | ((change: TipChange | GroupChange) => void)): Unsubscribe {
    return this.subscriptions.observe(target, listener as (change: TipChange | GroupChange) => void, this.account);
  }

  /**
   * Listens to performed actions (`tips/actionPerformed`), for every tip or the given ones. Returns an
   * unsubscribe function; the listener is never called after it.
   */
  onAction(listener: (event: ActionEvent) => void, options: { tipIds?: string[] } = {}): Unsubscribe {
    return this.subscriptions.onAction(listener, options, this.account);
  }

  /**
   * Forwards the lifecycle stream (`analytics/subscribe`, then `analytics/event`): impressions, eligibility
   * changes, invalidations, actions and variant assignments, in cursor order. With `after`, the events after that
   * cursor are replayed first (store each `event.cursor` once handled and pass the last one here on the next run:
   * every event arrives at least once); without it, new events only. After a reconnection the subscription resumes
   * after the last event this listener was given, so none is lost or repeated while the client lives. Returns an
   * unsubscribe function (`analytics/unsubscribe`); the listener is never called after it.
   */
  onAnalyticsEvent(listener: (event: AnalyticsEvent) => void, options: { after?: number } = {}): Unsubscribe {
    return this.subscriptions.onAnalyticsEvent(listener, options, this.account);
  }
}

/** A stored tip state as an `observe` change. */
function storedChange(stored: StoredTip): TipChange {
  const change: TipChange = { type: "tip", id: stored.id, shouldDisplay: stored.shouldDisplay, status: stored.status, tip: stored.tip, cause: "stored" };
  if (stored.reason !== undefined) change.reason = stored.reason;
  return change;
}

/** Creates a client and starts connecting in the background (calls made meanwhile wait for the attempt). */
export function createClient<S extends boolean = false>(options: ClientOptions<S>): TipsClient<S> {
  return new TipsClient<S>(options);
}

/**
 * Creates a client and waits for its first connection attempt. Not strict: always resolves (a missing daemon
 * means a client in no-op mode that keeps trying). Strict: rejects (and closes the client) when the first
 * attempt fails. With `storage` (offline first), resolves once the stored state is loaded, without waiting for the
 * connection (`waitUntilConnected()` does), strict or not.
 */
export async function connect<S extends boolean = false>(options: ClientOptions<S>): Promise<TipsClient<S>> {
  const client = new TipsClient<S>(options);
  // Offline first: the app starts with what was stored, without waiting for the network (strict or not).
  if (options.storage) {
    await client.restored;
    return client;
  }
  const ok = await client.ready();
  if (!ok && options.strict === true) {
    const error = client.lastError ?? new ConnectionError("ENOTCONNECTED", "cannot reach tipsd");
    await client.close();
    throw error;
  }
  return client;
}
