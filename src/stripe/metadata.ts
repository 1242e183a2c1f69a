// What the adapter writes into the metadata of the objects it creates, so that anyone (the lookup, the facts
// worker, a person in the dashboard) can tell which effect made an object and why.
import type Stripe from 'stripe';
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
