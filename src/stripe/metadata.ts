// What the adapter writes into the metadata of the objects it creates, so that anyone (the lookup, the facts
// worker, a person in the dashboard) can tell which effect made an object and why.
import type Stripe from 'stripe';
import { isEffectId } from '../core/effect-id.js';
import type { SendContext } from '../core/target.js';

/** The effect id (also the Idempotency-Key): how the lookup finds what a send made. */
export const EFFECT_ID_KEY = 'interlock_effect_id';
/** The request the effect answers (the support case), when the sender knows it. */
export const REQUEST_KEY = 'interlock_request';
/** The incident a credit compensates. */
export const INCIDENT_KEY = 'interlock_incident';

/**
 * The request the effect answers, as the gate passes it (recovery reads it from the first PROPOSED). It is fixed by
 * the effect id (the id is derived from it), so every send of one effect carries the same metadata and Stripe's
 * idempotency check sees the same parameters.
 */
export function requestIdOf(context: SendContext): string | null {
  const requestId = context.requestId;
  return typeof requestId === 'string' && requestId !== '' ? requestId : null;
}

/** The caller's metadata with the adapter's keys added (the effect schema reserves the `interlock_` prefix). */
export function effectMetadata(effectId: string, context: SendContext, own: Readonly<Record<string, string>> | undefined, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  const requestId = requestIdOf(context);
  return { ...own, ...extra, [EFFECT_ID_KEY]: effectId, ...(requestId === null ? {} : { [REQUEST_KEY]: requestId }) };
}

type Tagged = { id: string; created: number; metadata?: Stripe.Metadata | null };

/**
 * What the lookup found: of the objects whose metadata carries the effect id, the one this effect made (the oldest
 * that `matches` it, i.e. has its amount: a send makes exactly one), and the ids of the others that carry the id too,
 * newest first (a second deployment on the same account, an object copied by hand). `items` are newest first, as
 * Stripe lists them. No object that matches: null, whatever else carries the id, since none of them is this
 * effect's send.
 */
export function findOwn<T extends Tagged>(items: readonly T[], effectId: string, matches: (item: T) => boolean): { own: T; others: string[] } | null {
  const carrying = items.filter((item) => item.metadata?.[EFFECT_ID_KEY] === effectId);
  let own: T | null = null;
  for (const item of carrying) if (matches(item) && (own === null || item.created <= own.created)) own = item;
  if (own === null) return null;
  const found = own;
  return { own: found, others: carrying.filter((item) => item !== found).map((item) => item.id) };
}

/**
 * The effect an object's interlock_effect_id names: its value when that is a well-formed effect id (64 lowercase hex,
 * isEffectId), which only a send writes (or a person copies from one); null when it is missing, empty, or anything
 * else (a ticket number a person wrote over it in the Dashboard).
 */
export function labelledEffect(metadata: Stripe.Metadata | null | undefined): string | null {
  const label = metadata?.[EFFECT_ID_KEY];
  return label !== undefined && isEffectId(label) ? label : null;
}

/**
 * Whether an object's interlock_effect_id leaves it possibly the effect's own with its label edited: it names no effect
 * (missing, empty, or not a well-formed effect id), whatever other keys it carries. The Dashboard and the API edit
 * metadata freely: a person may clear the id, write a ticket number over it, or add a note. A well-formed effect id is
 * what some effect's send wrote: the refund lookup takes a refund carrying one for that effect's (unlabelledRefund),
 * while the credit lookup, whose credits carry their incident too, still takes one for this incident for a possible
 * lookalike (credit-target.ts unlabelledLookalike says why).
 */
export function namesNoEffect(metadata: Stripe.Metadata | null | undefined): boolean {
  return labelledEffect(metadata) === null;
}

/**
 * What an object's interlock_effect_id says, as the words of a lookup_blind message: "carries no interlock_effect_id",
 * "carries interlock_effect_id = "T-1234", which is no effect id", or, for a well-formed one (another effect's: the
 * lookup asks only once no object carries the effect's own), "carries interlock_effect_id = "…", another effect's id".
 */
export function labelWords(metadata: Stripe.Metadata | null | undefined): string {
  const label = metadata?.[EFFECT_ID_KEY] ?? '';
  if (label === '') return `carries no ${EFFECT_ID_KEY}`;
  return `carries ${EFFECT_ID_KEY} = ${JSON.stringify(label)}, ${namesNoEffect(metadata) ? 'which is no effect id' : "another effect's id"}`;
}
