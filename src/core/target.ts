// The target port: what the gate needs from whatever moves the money (Stripe, or an in-memory fake in tests).
import type { Tier } from './decisions.js';
import type { PremiseChange } from './entries.js';
import type { JsonObject } from './json.js';

export type PremiseReport = { violations: string[]; changes: PremiseChange[] };

export interface Target {
  readonly name: string;
  readonly tier: Tier;
  /** Whether `query` can find an effect by its id (Stripe: a refund whose metadata carries the effect id). */
  readonly queryable: boolean;
  /** How long the target remembers an idempotency key (Stripe: 24 h). */
  readonly dedupWindowMs: number;
  /** Every send is aborted after this long; the claim outlives it. */
  readonly sendTimeoutMs: number;
  /** The payment or customer the money moves on; it names the effect's partition and must match the approval's scope. */
  subjectOf(effect: JsonObject): string;
  /** Cents the effect moves, reserved against the approval and subject caps. */
  amountOf(effect: JsonObject): number;
  /** Sends. Throws `Rejected` for a definite no; any other error means the outcome is unknown. */
  apply(effectId: string, effect: JsonObject, options: { signal: AbortSignal }): Promise<JsonObject>;
  /** The landed object for this effect id, or null when there is none. Throws when it cannot tell. */
  query(effectId: string, effect: JsonObject): Promise<JsonObject | null>;
  /** Re-reads the facts the decision stood on. Throws when it cannot read them; a failed read is never "fine". */
  readPremises(effectId: string, effect: JsonObject, premises: JsonObject): Promise<PremiseReport>;
}

/** A definite refusal from the target (for Stripe, a 4xx that is not a rate limit or a conflict). Never resent. */
export class Rejected extends Error {
  readonly retryable = false;
  constructor(message: string, readonly details: { code: string | null; status: number | null; raw?: JsonObject } = { code: null, status: null }) {
    super(message);
    this.name = 'Rejected';
  }
}

/** The id of a landed object, for evidence. */
export function objectId(found: JsonObject): string | null {
  return typeof found.id === 'string' ? found.id : null;
}

/**
 * Fault injection only: "the process died at this point". The gate writes nothing more and rethrows it, exactly
 * as a SIGKILLed worker would leave the journal; a new gate instance then recovers.
 */
export class ProcessCrash extends Error {
  constructor(where: string) {
    super(`simulated crash ${where}`);
    this.name = 'ProcessCrash';
  }
}
