/**
 * The tipsd wire protocol, as TypeScript types; its version is {@link PROTOCOL_VERSION}, the one place this client
 * states it (a test holds it to `info.version` in protocol/openrpc.json).
 *
 * Written by hand from `protocol/README.md` (the human contract) and the engine's model. Every shape here is
 * what travels on the wire; the client adds nothing to it. Per the versioning policy, a daemon with a newer
 * minor version may add members: the types are open in that direction (unknown members are ignored, never
 * rejected).
 */

/** The protocol version this client speaks (`MAJOR.MINOR`), sent in `initialize`. */
export const PROTOCOL_VERSION = "1.3";

// ─── Core shapes ────────────────────────────────────────────────────────────────────────────────────────────

export type Status = "pending" | "available" | "invalidated";

export type Reason = "actionPerformed" | "tipClosed" | "displayCountExceeded" | "displayDurationExceeded";

export type DisplayFrequency = "immediate" | "hourly" | "daily" | "weekly" | "monthly";

export type GroupPriority = "ordered" | "firstAvailable";

/** A button on a tip. `index` is its position in the tip's actions. */
export interface Action {
  id: string;
  title: string;
  index: number;
}

/** What a frontend needs to draw a tip. */
export interface TipContent {
  id: string;
  title: string;
  message: string | null;
  image: string | null;
  actions: Action[];
  /** The `localizations` key whose copy is shown (chosen by the client's `locale`), or null for the tip's own copy. */
  locale: string | null;
  /** The definition's presentation, when it has one. */
  presentation?: TipPresentation;
  /** The definition's free-form metadata (≤ 4 KiB), untouched, when it has some. */
  metadata?: JSONObject;
}

/** TipKit's popover or inline TipView, and where a popover's arrow points. */
export interface TipPresentation {
  style: "popover" | "inline";
  arrowEdge?: "top" | "bottom" | "leading" | "trailing";
}

/** A tip's current state as the daemon reports it. */
export interface TipState {
  id: string;
  shouldDisplay: boolean;
  status: Status;
  /** Present when `status` is `"invalidated"`. */
  reason?: Reason;
  displayCount: number;
  /** Seconds of recorded display time. */
  displayedDuration: number;
  /** The A/B variant this install sees, for a tip with `variants`. */
  variant?: string;
  tip: TipContent;
}

/** Any JSON value. */
export type JSONValue = null | boolean | number | string | JSONValue[] | { [key: string]: JSONValue };
export type JSONObject = { [key: string]: JSONValue };

// ─── Tip definitions and rules (schemas/tip.json) ───────────────────────────────────────────────────────────

export type ComparisonOperator = "eq" | "ne" | "lt" | "lte" | "gt" | "gte";

/** A count comparison, e.g. `{gte: 3}`. Exactly one operator. */
export type CountComparison = { [op in ComparisonOperator]?: number };

/** A time window: one of `minutes`, `hours`, `days`, `weeks`. */
export type TimeWindow = { minutes?: number; hours?: number; days?: number; weeks?: number };

/**
 * A rule over an event's donations:
 * `{"event": "search.opened", "count": {"gte": 3}}`,
 * `{"event": "search.opened", "within": {"days": 1}, "count": {"gte": 1}}`,
 * `{"event": "trail.visited", "where": {"region": "north"}, "count": {"gt": 3}}`,
 * `{"event": "trail.visited", "largestGroupBy": "region", "count": {"gte": 2}}`.
 */
export interface EventRule {
  event: string;
  count: CountComparison;
  within?: TimeWindow;
  where?: JSONObject;
  largestGroupBy?: string;
}

/** A rule comparing a parameter with a constant, e.g. `{"parameter": "isLoggedIn", "eq": true}`. */
export type ParameterRule = { parameter: string } & { [op in ComparisonOperator]?: JSONValue };

/** A rule on another tip's state (tips that follow tips). */
export type TipRule =
  | { tip: string; status: "invalidated"; for?: Duration }
  | { tip: string; displayed: { [op in "eq" | "ne" | "lt" | "lte" | "gt" | "gte"]?: number } };
export type Rule = EventRule | ParameterRule | TipRule | { allOf: Rule[] } | { anyOf: Rule[] } | { not: Rule };

/** TipKit's `options`. */
export interface TipOptions {
  maxDisplayCount?: number;
  /** Seconds. */
  maxDisplayDuration?: number;
  ignoresDisplayFrequency?: boolean;
}

/** A tip as a frontend registers it (`tips/register`). Rules are AND-evaluated. */
export interface TipDefinition {
  id: string;
  title: string;
  message?: string | null;
  image?: string | null;
  /** `invalidate: false`: performing the action leaves the tip valid (default true). */
  actions?: { id: string; title: string; invalidate?: boolean }[];
  rules?: Rule[];
  options?: TipOptions;
  /** Copy per locale (`"ja"`, `"zh-Hans"`); each client gets the best match for the `locale` it connected with. */
  localizations?: { [locale: string]: TipLocalization };
  /** A/B copy variants keyed by name: one rule tree; each install sees one (sticky). */
  variants?: { [name: string]: TipVariant };
  presentation?: TipPresentation;
  /** Free-form data handed to frontends untouched (≤ 4 KiB of JSON). */
  metadata?: JSONObject;
  /** When and why the tip will be removed (the ship-day checklist). */
  removal?: string;
  /** Whether its state is local to the device or synced. */
  sync?: "local" | "synced";
  /** What the tip is for: the event that shows it helped, within a window after an impression (default 24 h). */
  goal?: TipGoal;
  /** Outside it the tip is pending. */
  schedule?: Schedule;
}

/** A tip's goal, read by `metrics/get`: e.g. `{event: "filter.used", within: {hours: 24}}`. */
export interface TipGoal {
  event: string;
  within?: { minutes: number } | { hours: number } | { days: number } | { weeks: number };
}

/** One A/B copy of a tip, or a holdout (`{holdout: true}`: its installs never see the tip). */
export type TipVariant =
  | {
      title: string;
      message?: string;
      actions?: { id: string; title: string; invalidate?: boolean }[];
      localizations?: { [locale: string]: TipLocalization };
      /** Share of installs relative to the other variants' (default 1). */
      weight?: number;
    }
  | { holdout: true; weight?: number };

/** A tip's copy in one locale; what it leaves out falls back to the tip's own copy. */
export interface TipLocalization {
  title?: string;
  message?: string;
  /** Action titles by action id. */
  actions?: { [actionId: string]: string };
}

export type ParameterValue = boolean | number | string | null;

export interface ParameterDefinition {
  id: string;
  default: ParameterValue;
  /** Back to the default at every daemon start; never persisted. */
  transient?: boolean;
}

export interface GroupDefinition {
  id: string;
  priority: GroupPriority;
  /** Tip ids in declared order. */
  tips: string[];
  /** Outside it the group has no current tip. */
  schedule?: Schedule;
}

// ─── Lifecycle ──────────────────────────────────────────────────────────────────────────────────────────────

export interface ClientInfo {
  name: string;
  version?: string;
}

export interface InitializeParams {
  protocolVersion: string;
  clientInfo: ClientInfo;
  locale?: string;
  /** The app install's id; A/B variants are assigned from a stable hash of it. */
  installId?: string;
  /** Hosted mode: signs the session in with the app's JWT (or the admin token). */
  auth?: { token: string };
  /** Hosted mode with several apps (`--apps`): the app the session signs in to (default: `default`). */
  app?: string;
}

export interface Capabilities {
  framings: ("newline" | "contentLength")[];
  virtualClock: boolean;
  maxMessageSize: number;
  notifications: string[];
  methods: string[];
  [extra: string]: unknown;
}

export interface InitializeResult {
  protocolVersion: string;
  serverInfo: { name: string; version: string };
  capabilities: Capabilities;
  /** Hosted mode: who the session is signed in as. */
  auth?: SignIn;
}

/** Who a hosted session is signed in as (`initialize`'s `auth`, `auth/refresh`). */
export interface SignIn {
  /** The account: the token's `sub`; null for the admin token. */
  account: string | null;
  admin: boolean;
  /** When the token expires (seconds since the epoch); the session ends then unless refreshed. */
  expiresAt: number | null;
}

// ─── Params and results ─────────────────────────────────────────────────────────────────────────────────────

export interface ConfigureParams {
  displayFrequency: DisplayFrequency;
}
export interface ConfigureResult {
  displayFrequency: DisplayFrequency;
}

export interface RegisterParams {
  tips: TipDefinition[];
}
export interface RegisterResult {
  tips: TipState[];
}

export interface UnregisterParams {
  ids: string[];
}
/** The ids that were registered. */
export interface UnregisterResult {
  ids: string[];
}

export type GroupRegisterParams = GroupDefinition;
export interface GroupRegisterResult {
  id: string;
  currentTip: string | null;
}
export interface GroupUnregisterParams {
  id: string;
}

export interface ParametersDefineParams {
  parameters: ParameterDefinition[];
}
export interface ParametersDefineResult {
  ids: string[];
}
export interface ParametersSetParams extends Idempotent {
  id: string;
  value: ParameterValue;
}
export interface ParametersSetResult {
  id: string;
  value: ParameterValue;
}

/**
 * Changes take an optional `idempotencyKey` (1–128 bytes): a repeat of the key within the daemon's
 * `--idempotency-hours` changes nothing and gets the first reply. The client sends one with every change and reuses it
 * when it retries (see `Calls.change`).
 */
export interface Idempotent {
  idempotencyKey?: string;
}

export interface DonateParams extends Idempotent {
  id: string;
  info?: JSONObject;
}
/** `count`: stored donations of that event (the bounded history windows and filters read); `lifetime`: donations
 * ever (what a plain count rule reads). */
export interface DonateResult {
  count: number;
  lifetime: number;
}

/** When a tip (or a group's tips) may show: ISO 8601 instants, `from` inclusive, `until` exclusive. */
export interface Schedule {
  from?: string;
  until?: string;
}
/** A duration in one unit, like a rule's `within`. */
export type Duration = { minutes: number } | { hours: number } | { days: number } | { weeks: number };
/** `events/configure`: at least one of `maxDonations` and `maxAge`. */
export interface EventConfigureParams {
  id: string;
  maxDonations?: number;
  maxAge?: Duration;
}
export interface EventConfigureResult {
  id: string;
  maxDonations: number | null;
  maxAge: Duration | null;
}

/** `tips/suppress`: no tip is displayable for `seconds` (or until `tips/resume`). */
export interface SuppressParams {
  seconds?: number;
  reason?: string;
}
/** The suppression in force after `tips/suppress` or `tips/resume`. */
export interface SuppressionResult {
  suppressed: boolean;
  since: number | null;
  until: number | null;
  reason: string | null;
}

export interface InvalidateParams extends Idempotent {
  id: string;
  /** Default `tipClosed`. */
  reason?: Reason;
}
export interface TipIdParams {
  id: string;
}
export interface DisplayedParams extends Idempotent {
  id: string;
  /** Seconds the tip was on screen. */
  duration?: number;
}
export interface StatusParams {
  ids?: string[];
}
export interface StatusResult {
  tips: TipState[];
}

export interface RuleExplanation {
  rule: Rule;
  holds: boolean;
  detail: string;
  [extra: string]: unknown;
}
export interface Hold {
  kind: string;
  until?: number | null;
  [extra: string]: unknown;
}
/** `tips/explain`: why is my tip (not) showing? */
export interface Explanation {
  id: string;
  status: Status;
  reason?: Reason;
  shouldDisplay: boolean;
  rules: RuleExplanation[];
  heldBy: Hold[];
  displayCount: number;
  displayedDuration: number;
  /** Seconds since the epoch of the next time-caused change, if any. */
  nextChangeAt: number | null;
  lines: string[];
  [extra: string]: unknown;
}

export interface ObserveParams {
  ids?: string[];
  groups?: string[];
}
export interface GroupCurrentTip {
  group: string;
  tipId: string | null;
}
export interface ObserveResult {
  subscription: string | number;
  tips: TipState[];
  groups: GroupCurrentTip[];
  /** Requested ids that name no registered tip (a typo, or a tip registered later: still watched). */
  unknown?: string[];
}
export interface SubscriptionParams {
  subscription: string | number;
}
export interface RemovedResult {
  removed: boolean;
}

export interface PerformActionParams extends Idempotent {
  id: string;
  actionId: string;
  /** Default: the action's `invalidate` (true unless its definition says false): invalidates with `actionPerformed`. */
  invalidate?: boolean;
}

/** A problem found in a catalog or message file (`tipsd lint`'s checks). */
export interface Diagnostic {
  severity: "error" | "warning";
  message: string;
  check?: string;
  file?: string;
  /** JSON path, e.g. `tips[2].rules[0].count`. */
  path?: string;
  line?: number;
  column?: number;
}

/** `catalog/reload`: what changed; `applied: false` (with the errors) leaves the catalog in force serving. */
export interface CatalogReloadResult {
  applied: boolean;
  added: string[];
  removed: string[];
  changed: string[];
  unchanged: string[];
  diagnostics: Diagnostic[];
}

/** `tips/instantiate`: a content tip from a catalog template (one value per placeholder). */
export interface InstantiateParams {
  template: string;
  values: { [placeholder: string]: string | number | boolean };
}

export interface SetVariantParams extends Idempotent {
  id: string;
  /** null or absent: back to the variant the install id picks. */
  variant?: string | null;
}

export interface ActionsSubscribeParams {
  tipIds?: string[];
}
export interface ActionsSubscribeResult {
  subscription: string | number;
}

export interface TipIdsParams {
  ids: string[];
}

export interface ClockNowResult {
  /** Seconds since the Unix epoch. */
  now: number;
  virtual: boolean;
}
export interface ClockAdvanceParams {
  seconds: number;
}
export interface ClockSetParams {
  now: number;
}
export interface ClockResult {
  now: number;
}

/** `sync/push` (hosted mode): a device's operations, as `tipsd serve --sync wss://…` sends them. */
export interface SyncPushParams {
  /** `device:` and the device's id. */
  device: string;
  ops: { seq: number; op: Record<string, unknown> }[];
}
export interface SyncPushResult {
  /** The account's last operation cursor once the push was committed. */
  cursor: number;
}
/** `sync/pull` (hosted mode). */
export interface SyncPullParams {
  device: string;
  after?: number | null;
  limit?: number | null;
}
export interface SyncPullResult {
  operations: { cursor: number; device: string; seq: number; op: Record<string, unknown> }[];
  /** The account's state as of `cursor` when the device was behind the operations kept; null else. */
  snapshot: Record<string, unknown> | null;
  cursor: number;
  more: boolean;
  subscription: string;
}
/** `sync/changed`: the account's operations moved (to sessions that called `sync/pull`). */
export interface SyncChangedParams {
  subscription: string | number;
  seq: number;
  cursor: number;
}

/** `accounts/list` (hosted mode, admin). */
export interface AccountsListParams {
  after?: string | null;
  limit?: number | null;
}
/** One account of an `accounts/list` page. */
export interface AccountSummary {
  account: string;
  /** Operations stored for the account. */
  operations: number;
  /** Whether the answering node holds it in memory. */
  resident: boolean;
}
export interface AccountPage {
  accounts: AccountSummary[];
  /** Pass as `after` for the next page; null on the last. */
  next: string | null;
}
/** `catalogs/publish` (hosted mode, admin). */
export interface CatalogsPublishParams {
  app: string;
  catalog: Record<string, unknown>;
  note?: string | null;
  dryRun?: boolean | null;
}
/** `catalogs/schedule`'s result. */
export interface CatalogScheduleResult {
  schedule: number;
  version: number;
  at: number;
}
/** `catalogs/publish`'s result (hosted mode, admin). */
export interface CatalogPublishResult {
  /** The version stored; null on a dry run. */
  version: number | null;
  digest: string;
  dryRun: boolean;
  /** Dry run: accounts resident on the answering node, and those with a tip whose shouldDisplay would change. */
  residentAccounts?: number;
  changedAccounts?: number;
  diff?: CatalogChanges;
}
/** What changed between two catalogs. */
export interface CatalogChanges {
  added: string[];
  removed: string[];
  changed: { id: string; rules: boolean; copy: boolean; variants: boolean; other: boolean }[];
  others: string[];
  displayFrequency: boolean;
}
/** `catalogs/diff`'s result. */
export interface CatalogDiffResult extends CatalogChanges {
  from: number;
  to: number;
}
/** `catalogs/history`'s result. */
export interface CatalogHistoryResult {
  app: string;
  current: number | null;
  versions: { version: number; digest: string; note: string; actor: string; createdAt: number }[];
}
/** One entry of the audit log (`audit/list`). */
export interface AuditEntry {
  id: number;
  /** Seconds since the epoch. */
  at: number;
  actor: string;
  action: string;
  app: string | null;
  before: string | null;
  after: string | null;
  detail: Record<string, unknown>;
}
/** `audit/list`'s page: pass `next` as `after` for the next page (null on the last). */
export interface AuditPage {
  entries: AuditEntry[];
  next: number | null;
}
/** A goal or app-closed donation the history recorded (`AccountExport.donations`). */
export interface RecordedDonation {
  cursor: number;
  event: string;
  /** Seconds since the epoch. */
  at: number;
}
/** `accounts/export` (hosted mode, admin): everything tipsd holds about one account. */
export interface AccountExport {
  account: string;
  exportedAt: number;
  /**
   * The account's merged state: a snapshot as stored in `tipsd.snapshots` (version, cursor, meta, rows of what each
   * device and node contributed, each event's kept donations).
   */
  state: JSONObject;
  history: AnalyticsEvent[];
  /** The goal and app-closed donations the history recorded, oldest first (the analytics stream does not carry them). */
  donations: RecordedDonation[];
}
export interface AccountsImportResult {
  account: string;
  /** History entries imported. */
  history: number;
}
/** `webhooks/*` (hosted mode, admin): an app's webhook endpoints (docs/webhooks.md). */
export type WebhookEventType =
  | "account.deleted"
  | "catalog.published"
  | "catalog.rolledBack"
  | "experiment.decided"
  | "experiment.srm";
export interface WebhooksCreateParams {
  app: string;
  /** https://, or http:// to the loopback interface only. */
  url: string;
  events: WebhookEventType[];
  /** `whsec_` + base64 of 24 to 64 bytes; generated when absent. */
  secret?: string | null;
}
export interface WebhooksCreateResult {
  id: number;
  app: string;
  url: string;
  events: string[];
  /** The signing secret: answered here only. */
  secret: string;
}
export interface WebhookEndpoint {
  id: number;
  app: string;
  url: string;
  events: string[];
  createdAt: number;
  disabledAt: number | null;
  disabledReason: string | null;
  pending: number;
  lastResult: string | null;
}

export interface AccountsDeleteResult {
  account: string;
  /** Sessions of the account this node closed (other nodes close theirs when PostgreSQL notifies them). */
  closedSessions: number;
}

/** `sync/status` (sync across devices, `tipsd serve --sync`). */
export interface SyncStatusResult {
  enabled: boolean;
  state: "disabled" | "connecting" | "connected" | "disconnected" | "incompatible" | "stopped";
  /** The connection string with its password replaced by `***`. */
  server: string | null;
  account: string | null;
  device: string | null;
  /** Operations waiting for PostgreSQL. */
  outbox: number;
  outboxLimit: number | null;
  /** Seconds since the oldest waiting operation was made (0 when none waits). */
  lagSeconds: number;
  cursor: number;
  lastPushAt: number | null;
  lastPullAt: number | null;
  lastError: string | null;
}

export interface CancelRequestParams {
  id: number | string;
}

// ─── Analytics, metrics and the inspector (issue #13) ──────────────────────────────────────────────────────

/** One lifecycle event (stable names; protocol/README.md, "Analytics stream"). */
export interface AnalyticsEvent {
  /** Increasing, never reused; pass the last one handled as `after` to resume. */
  cursor: number;
  type: "impression" | "eligibility" | "invalidation" | "action" | "variant" | "exposure";
  tipId: string;
  variant: string | null;
  at: number;
  /** impression */
  duration?: number;
  /** eligibility */
  status?: Status;
  shouldDisplay?: boolean;
  /** invalidation, and eligibility when invalidated */
  reason?: Reason;
  /** action */
  actionId?: string;
  actionIndex?: number;
  /** The user the event belongs to: present on a hosted daemon's fleet-wide stream (an admin token without `account`). */
  account?: string;
}

export interface AnalyticsSubscribeParams {
  /** Replay the events after this cursor (0: everything kept), then live; absent: live only. */
  after?: number;
}
export interface AnalyticsSubscribeResult {
  subscription: string;
  head: number;
  oldest: number | null;
}
export interface AnalyticsReadParams {
  after?: number;
  limit?: number;
}
export interface AnalyticsReadResult {
  events: AnalyticsEvent[];
  next: number;
  head: number;
  oldest: number | null;
}

export interface MetricsGetParams {
  since?: number;
  until?: number;
  tips?: string[];
  /** CUPED: `lift` and `comparisons` also adjusted for each account's goal donations before its first trigger. */
  cuped?: boolean;
}
/** An interval's bounds. */
export interface Bounds {
  low: number;
  high: number;
}
/**
 * A rate's statistics across accounts (issue #38, docs/measuring.md): `low`/`high` its fixed-horizon 95% interval
 * (delta method over per-account outcomes), null when `notEnoughData` (fewer accounts than `method.minimumAccounts`).
 */
export interface RateInterval {
  low: number | null;
  high: number | null;
  interval: "fixedHorizon";
  accounts: number;
  notEnoughData: boolean;
}
/** The Bonferroni correction of a difference's intervals over the tip's comparisons (issue #46). */
export interface Correction {
  name: "none" | "bonferroni";
  comparisons: number;
  alpha: number;
}
/** `a / b − 1` as a fraction (0.25 is +25%), by the delta method; null without enough data or when `b` is 0. */
export interface RelativeDifference {
  estimate: number;
  low: number;
  high: number;
  fixedHorizon: Bounds;
  standardError: number;
}
/** The sample-ratio check: triggered accounts per variant against the weights, Pearson's χ²; flagged at p < 0.001. */
export interface SampleRatio {
  observed: Record<string, number>;
  expected: Record<string, number>;
  chiSquare: number;
  degreesOfFreedom: number;
  pValue: number;
  flagged: boolean;
}
/** An arm's primary metric: triggered accounts, and of those the decided, converted and pending ones. */
export interface AccountConversion {
  triggered: number;
  converted: number;
  decided: number;
  pending: number;
  rate: number | null;
}
/**
 * The secondary per-impression difference (the lift before issue #46), each account's counts winsorized at `cap`.
 */
export interface PerImpression {
  metric: "goalConversionPerImpression";
  secondary: true;
  difference: number | null;
  low: number | null;
  high: number | null;
  interval: "alwaysValid";
  fixedHorizon: Bounds | null;
  confidence: number;
  notEnoughData: boolean;
  standardError: number | null;
  correction: Correction;
  relative: RelativeDifference | null;
  cap: { quantile: number; impressions: number; conversions: number } | null;
  [rate: string]: unknown;
}
/**
 * One arm minus another by the primary metric (issue #46: the share of triggered accounts that did the goal within
 * its window after their first trigger), the account being the unit: `low`/`high` the always-valid 95% interval (an
 * asymptotic confidence sequence: safe to look at daily), `fixedHorizon` the interval valid looked at once, both
 * Bonferroni-corrected over the tip's comparisons; both null when `notEnoughData`.
 */
export interface DifferenceEstimate {
  difference: number | null;
  low: number | null;
  high: number | null;
  interval: "alwaysValid";
  fixedHorizon: Bounds | null;
  confidence: number;
  notEnoughData: boolean;
  standardError: number | null;
  /** With `metrics/get {cuped: true}` and enough data. */
  cuped: {
    difference: number;
    low: number;
    high: number;
    fixedHorizon: Bounds;
    standardError: number;
    theta: number;
    varianceReduction: number;
  } | null;
  correction: Correction;
  relative: RelativeDifference | null;
  srm: SampleRatio | null;
  perImpression: PerImpression | null;
}
/** How `metrics/get` computed its intervals. */
export interface MetricsMethod {
  unit: "account";
  trigger: "firstDisplayable";
  metric: "converted";
  rate: "deltaMethod";
  interval: "alwaysValid";
  confidence: number;
  minimumAccounts: number;
  alwaysValid: { name: "asymptoticConfidenceSequence"; plannedAccounts: number; rho: number };
  cuped: { covariate: "goalDonationsBeforeTrigger"; days: number } | null;
  multipleComparisons: { name: "bonferroni"; family: "tip" };
  srm: { test: "pearsonChiSquare"; threshold: number };
  cap: { metric: "perImpression"; quantile: number };
  reference: string;
}
export interface RateWindow {
  from: number;
  to: number;
  days: number;
  count: number;
  perDay: number | null;
}
/** Seed 000's metrics with their sample sizes (protocol/README.md, "Metrics"). */
export interface MetricSet {
  variant?: string;
  impressions: number;
  /** With the rate's interval across accounts (`RateInterval`). */
  goal: ({
    converted: number;
    decided: number;
    pending: number;
    rate: number | null;
  } & RateInterval) | null;
  /** Time to first use: per install, the first goal after the first impression (one sample). */
  timeToGoal: { samples: number; median: number | null; open: number } | null;
  /** The same per exposure (the first impression since the last goal). */
  timeToGoalPerExposure: { samples: number; median: number | null; open: number } | null;
  /** A holdout variant's set, computed from counterfactual impressions. */
  holdout: boolean;
  /** The primary metric for these accounts (null without a goal), with its rate's interval. */
  triggered: (AccountConversion & RateInterval) | null;
  close:
    | { available: false }
    | ({
        available: true;
        closes: number;
        decided: number;
        pending: number;
        rate: number | null;
        alert: boolean;
      } & RateInterval);
  goalRate: {
    firstImpressionAt: number | null;
    before: RateWindow | null;
    after: RateWindow | null;
    change: number | null;
  } | null;
}
export interface MetricsResult {
  now: number;
  since: number | null;
  until: number | null;
  appClosedEvent: string | null;
  closeWindow: number;
  closeRateAlert: number | null;
  baselineDays: number;
  historyStart: number | null;
  tips: {
    tipId: string;
    goal: TipGoal | null;
    overall: MetricSet;
    variants: MetricSet[];
    comparisons: VariantComparison[];
    lift: Lift | null;
  }[];
  /** Hosted mode, an admin's metrics/get without `account`: how many accounts' histories were pooled. */
  accounts?: number;
  method: MetricsMethod;
}
/** A variant's goal rate against the control's (the first variant that is not a holdout), across accounts. */
export interface VariantComparison extends DifferenceEstimate {
  variant: string;
  against: string;
  /** The two variants' primary rates. */
  variantRate: { converted: number; decided: number; rate: number | null };
  againstRate: { converted: number; decided: number; rate: number | null };
  sample: { variant: number; against: number; minimum: number };
}
/** The triggered accounts of the tip's variants against the held-out ones (protocol/README.md, "Metrics"). */
export interface Lift extends DifferenceEstimate {
  metric: "converted";
  exposed: AccountConversion;
  holdout: AccountConversion;
  sample: { exposed: number; holdout: number; minimum: number };
}

export interface InspectStateParams {
  /** Arm one `inspect/changed` for the next change. */
  watch?: boolean;
}
/** Everything an inspector shows (`inspect/state`). */
export interface InspectStateResult {
  now: number;
  virtualClock: boolean;
  testing: boolean;
  displayFrequency: DisplayFrequency;
  tips: (TipState & {
    rules: RuleExplanation[];
    heldBy: Hold[];
    nextChangeAt: number | null;
    override?: "show" | "showAll" | "hide" | "hideAll";
    lines: string[];
    firstDisplayedAt: number | null;
    lastDisplayedAt: number | null;
    variants: string[];
    /** This install is held out of the tip (its variant is a holdout). */
    holdout: boolean;
    schedule: Schedule | null;
    goal: TipGoal | null;
  })[];
  events: {
    id: string;
    count: number;
    lifetime: number;
    lastDonation: { at: number; info?: JSONObject } | null;
    maxDonations: number | null;
    maxAge: Duration | null;
    goalOf: string[];
    appClosed: boolean;
  }[];
  parameters: { id: string; value: ParameterValue; default: ParameterValue; transient: boolean }[];
  groups: { id: string; priority: GroupPriority; tips: string[]; currentTip: string | null; schedule: Schedule | null }[];
  suppression: SuppressionResult;
  overrides: { showAll: boolean; hideAll: boolean; show: string[]; hide: string[] };
  history: { enabled: boolean; days: number; head: number; oldest: number | null; appClosedEvent: string | null };
  subscription?: string;
}

// ─── Notifications (server → client) ────────────────────────────────────────────────────────────────────────

export interface ShouldDisplayChangedParams {
  subscription: string | number;
  seq: number;
  id: string;
  shouldDisplay: boolean;
  status: Status;
  reason?: Reason;
  variant?: string;
  tip: TipContent;
}

export interface CurrentTipChangedParams {
  subscription: string | number;
  seq: number;
  group: string;
  tipId: string | null;
}

export interface ActionPerformedParams {
  subscription: string | number;
  seq: number;
  tipId: string;
  /** Always an array, even for one action. */
  actions: Action[];
}

export type AnalyticsEventParams = AnalyticsEvent & { subscription: string | number; seq: number };

export interface InspectChangedParams {
  subscription: string | number;
  seq: number;
}

export interface NotificationMap {
  "tips/shouldDisplayChanged": ShouldDisplayChangedParams;
  "groups/currentTipChanged": CurrentTipChangedParams;
  "tips/actionPerformed": ActionPerformedParams;
  "analytics/event": AnalyticsEventParams;
  "inspect/changed": InspectChangedParams;
  "sync/changed": SyncChangedParams;
}
export type NotificationMethod = keyof NotificationMap;

// ─── The method table ───────────────────────────────────────────────────────────────────────────────────────

/** Every request method: its params (`void` when it takes none) and its result. */
export interface MethodMap {
  initialize: { params: InitializeParams; result: InitializeResult };
  shutdown: { params: void; result: null };
  "rpc.discover": { params: void; result: JSONObject };
  "tips/configure": { params: ConfigureParams; result: ConfigureResult };
  "tips/register": { params: RegisterParams; result: RegisterResult };
  "tips/unregister": { params: UnregisterParams; result: UnregisterResult };
  "groups/register": { params: GroupRegisterParams; result: GroupRegisterResult };
  "groups/unregister": { params: GroupUnregisterParams; result: null };
  "parameters/define": { params: ParametersDefineParams; result: ParametersDefineResult };
  "parameters/set": { params: ParametersSetParams; result: ParametersSetResult };
  "events/donate": { params: DonateParams; result: DonateResult };
  "events/configure": { params: EventConfigureParams; result: EventConfigureResult };
  "tips/invalidate": { params: InvalidateParams; result: TipState };
  "tips/resetEligibility": { params: TipIdParams & Idempotent; result: TipState };
  "tips/displayed": { params: DisplayedParams; result: TipState };
  "tips/status": { params: StatusParams; result: StatusResult };
  "tips/explain": { params: TipIdParams; result: Explanation };
  "tips/observe": { params: ObserveParams; result: ObserveResult };
  "tips/unobserve": { params: SubscriptionParams; result: RemovedResult };
  "tips/performAction": { params: PerformActionParams; result: TipState };
  "tips/setVariant": { params: SetVariantParams; result: TipState };
  "tips/suppress": { params: SuppressParams; result: SuppressionResult };
  "tips/resume": { params: void; result: SuppressionResult };
  "catalog/reload": { params: void; result: CatalogReloadResult };
  "tips/instantiate": { params: InstantiateParams; result: TipState };
  "actions/subscribe": { params: ActionsSubscribeParams; result: ActionsSubscribeResult };
  "actions/unsubscribe": { params: SubscriptionParams; result: RemovedResult };
  "analytics/subscribe": { params: AnalyticsSubscribeParams; result: AnalyticsSubscribeResult };
  "analytics/unsubscribe": { params: SubscriptionParams; result: RemovedResult };
  "analytics/read": { params: AnalyticsReadParams; result: AnalyticsReadResult };
  "metrics/get": { params: MetricsGetParams; result: MetricsResult };
  "inspect/state": { params: InspectStateParams; result: InspectStateResult };
  "sync/status": { params: void; result: SyncStatusResult };
  "sync/push": { params: SyncPushParams; result: SyncPushResult };
  "sync/pull": { params: SyncPullParams; result: SyncPullResult };
  "auth/refresh": { params: { token: string }; result: SignIn };
  "accounts/list": { params: AccountsListParams; result: AccountPage };
  "accounts/export": { params: { account: string }; result: AccountExport };
  "accounts/import": { params: { account: string; export: AccountExport }; result: AccountsImportResult };
  "accounts/delete": { params: { account: string }; result: AccountsDeleteResult };
  "catalogs/publish": { params: CatalogsPublishParams; result: CatalogPublishResult };
  "catalogs/diff": { params: { app: string; from: number; to: number }; result: CatalogDiffResult };
  "catalogs/rollback": { params: { app: string; version: number }; result: { version: number } };
  "catalogs/schedule": { params: { app: string; version: number; at: number }; result: CatalogScheduleResult };
  "catalogs/history": { params: { app: string }; result: CatalogHistoryResult };
  "audit/list": { params: { app?: string | null; after?: number | null; limit?: number | null }; result: AuditPage };
  "webhooks/create": { params: WebhooksCreateParams; result: WebhooksCreateResult };
  "webhooks/list": { params: { app?: string | null } | void; result: { webhooks: WebhookEndpoint[] } };
  "webhooks/delete": { params: { app: string; id: number }; result: { id: number; deleted: boolean } };
  "webhooks/test": { params: { app: string; id: number }; result: { event: number } };
  "webhooks/replay": { params: { app: string; after: number }; result: { queued: number } };
  "testing/showAllTips": { params: void; result: null };
  "testing/hideAllTips": { params: void; result: null };
  "testing/clear": { params: void; result: null };
  "testing/showTips": { params: TipIdsParams; result: null };
  "testing/hideTips": { params: TipIdsParams; result: null };
  "datastore/reset": { params: void | Idempotent; result: null };
  "clock/now": { params: void; result: ClockNowResult };
  "clock/advance": { params: ClockAdvanceParams; result: ClockResult };
  "clock/set": { params: ClockSetParams; result: ClockResult };
}
export type Method = keyof MethodMap;
export type ParamsOf<M extends Method> = MethodMap[M]["params"];
export type ResultOf<M extends Method> = MethodMap[M]["result"];

/** Client → server notifications. */
export interface ClientNotificationMap {
  /** Accepted and ignored, as in LSP (the client does not send it by itself). */
  initialized: void;
  exit: void;
  "$/cancelRequest": CancelRequestParams;
}

// ─── Errors ─────────────────────────────────────────────────────────────────────────────────────────────────

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  UnknownTip: -32001,
  ServerNotInitialized: -32002,
  UnknownSubscription: -32003,
  VirtualClockDisabled: -32004,
  DatastoreFailure: -32005,
  ShuttingDown: -32006,
  UnknownGroup: -32007,
  UnknownAction: -32008,
  InvalidRule: -32009,
  TooManyConnections: -32010,
  /** A testing-only method on a daemon started without --allow-testing. */
  TestingDisabled: -32011,
  /** A synced change refused while the sync outbox is full (`--sync-outbox-limit`). */
  SyncOutboxFull: -32012,
  /** Hosted mode: no valid sign-in (`data.reason`); also sent, with id null, when a session's token expires. */
  Unauthorized: -32013,
  /** Hosted mode: signed in, but not allowed (an admin method, a definition method). */
  Forbidden: -32014,
  /** Hosted mode: the account's quota is used up (`data.quota`, `data.retryAfter`). */
  QuotaExceeded: -32015,
  /** Hosted mode: PostgreSQL did not commit the change; retry after `data.retryAfter` seconds. */
  Unavailable: -32016,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

// ─── JSON-RPC 2.0 envelopes ─────────────────────────────────────────────────────────────────────────────────

export type RequestId = number | string;

export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: RequestId;
  method: string;
  params?: unknown;
}
export interface JsonRpcNotification {
  jsonrpc: "2.0";
  method: string;
  params?: unknown;
}
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface JsonRpcSuccess {
  jsonrpc: "2.0";
  id: RequestId;
  result: unknown;
}
export interface JsonRpcFailure {
  jsonrpc: "2.0";
  id: RequestId | null;
  error: JsonRpcErrorObject;
}
export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;
