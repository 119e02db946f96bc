/**
 * Registration replay: what this client configured, defined and registered — the display frequency, parameter
 * definitions and the last value of each transient parameter it set, tips, groups, event limits — recorded as the
 * calls are made and re-sent, in that order, on a new connection (unless `restoreRegistrations: false`).
 * A definition the daemon rejects is forgotten again.
 */
import { TipsdError } from "./errors.js";
import { DisplayFrequency, GroupDefinition, ParameterDefinition, ParameterValue, TipDefinition } from "./protocol.js";
import { asError, CallResult, RpcConnection } from "./calls.js";
import type { Logger } from "./options.js";

type Call = (method: string, params: unknown) => Promise<CallResult>;

export class Registrations {
  private displayFrequency: DisplayFrequency | undefined;
  private readonly parameters = new Map<string, ParameterDefinition>();
  private readonly transientValues = new Map<string, ParameterValue>();
  private readonly tips = new Map<string, TipDefinition>();
  private readonly groups = new Map<string, GroupDefinition>();
  private readonly eventLimits = new Map<string, number>();

  constructor(private readonly restore: boolean, private readonly logger: Logger) {}

  // ─── Recording (the typed methods call these as they send) ───────────────────────────────────────────────

  configure(displayFrequency: DisplayFrequency): void {
    this.displayFrequency = displayFrequency;
  }

  configureEvent(id: string, maxDonations: number): void {
    this.eventLimits.set(id, maxDonations);
  }

  /** Records the tips, sends `tips/register`, forgets them again when the daemon rejects them. */
  register(tips: TipDefinition[], call: Call): Promise<CallResult> {
    return this.sendRecorded(this.tips, tips.map((t) => [t.id, t]), () => call("tips/register", { tips }));
  }

  unregister(ids: string[]): void {
    for (const id of ids) this.tips.delete(id);
  }

  registerGroup(group: GroupDefinition, call: Call): Promise<CallResult> {
    return this.sendRecorded(this.groups, [[group.id, group]], () => call("groups/register", group));
  }

  unregisterGroup(id: string): void {
    this.groups.delete(id);
  }

  defineParameters(parameters: ParameterDefinition[], call: Call): Promise<CallResult> {
    return this.sendRecorded(this.parameters, parameters.map((p) => [p.id, p]), () => call("parameters/define", { parameters }));
  }

  /** Only the values of transient parameters this client defined are replayed (the daemon persists the others). */
  setParameter(id: string, value: ParameterValue): void {
    if (this.parameters.get(id)?.transient) this.transientValues.set(id, value);
  }

  /**
   * Records the entries, then sends (synchronously, when connected); removes them again if the daemon rejects
   * them (a {@link TipsdError}), unless they were replaced meanwhile. Connection failures keep them: they are
   * sent again on the next connection.
   */
  private async sendRecorded<T>(map: Map<string, T>, entries: [string, T][], send: () => Promise<CallResult>): Promise<CallResult> {
    for (const [id, value] of entries) map.set(id, value);
    const result = await send();
    if (!result.ok && result.error instanceof TipsdError) for (const [id, value] of entries) if (map.get(id) === value) map.delete(id);
    return result;
  }

  // ─── Replay ───────────────────────────────────────────────────────────────────────────────────────────────

  /** Re-sends everything recorded (after a reconnection, or on a first connection made after recording). */
  replay(conn: RpcConnection, reconnection: boolean): void {
    if (!this.restore || !(reconnection || this.hasAny())) return;
    const warn = (what: string) => (e: unknown) => {
      if (conn.open) this.logger.warn(`restoring ${what} failed: ${asError(e).message}`);
    };
    if (this.displayFrequency) conn.request("tips/configure", { displayFrequency: this.displayFrequency }).catch(warn("display frequency"));
    if (this.parameters.size > 0) conn.request("parameters/define", { parameters: [...this.parameters.values()] }).catch(warn("parameters"));
    for (const [id, value] of this.transientValues) conn.request("parameters/set", { id, value }).catch(warn(`parameter ${id}`));
    if (this.tips.size > 0) conn.request("tips/register", { tips: [...this.tips.values()] }).catch(warn("tips"));
    for (const group of this.groups.values()) conn.request("groups/register", group).catch(warn(`group ${group.id}`));
    for (const [id, maxDonations] of this.eventLimits) conn.request("events/configure", { id, maxDonations }).catch(warn(`event ${id}`));
  }

  private hasAny(): boolean {
    return (
      this.displayFrequency !== undefined ||
      this.parameters.size > 0 ||
      this.tips.size > 0 ||
      this.groups.size > 0 ||
      this.eventLimits.size > 0
    );
  }
}
