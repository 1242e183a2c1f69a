// The kinds of effect the gate moves money with, and what each one means: the subject the money moves on (it
// names the effect's partition and must equal its approval's scope) and the cents it moves (reserved against
// the caps). Bad input is refused here with the field that is wrong, before anything is written or queued.
import { z } from 'zod';
import { InterlockError, zodFieldProblems, type FieldProblem } from './errors.js';
import type { JsonObject } from './json.js';
import { freeText, identifier, recordedIdentifier } from './text.js';

export const EFFECT_KINDS = ['refund', 'credit'] as const;
export type EffectKind = (typeof EFFECT_KINDS)[number];

/** Stripe's own limit for amounts is eight digits; no support refund or credit is bigger. */
export const MAX_AMOUNT_CENTS = 99_999_999;

const id = (prefix: string, what: string) =>
  z.string().regex(new RegExp(`^${prefix}_[A-Za-z0-9_]{1,200}$`), `must be a ${what} id (${prefix}_ followed by letters, digits or _)`);
// The range is checked first and ends the checks when it fails: zod's int() also refuses a number past 2^53 as not
// whole, and 1e20 is whole, only too large. A fraction inside the range is told it is not whole.
const cents = z
  .number({ error: 'must be a number of cents' })
  .positive({ error: 'must be more than zero cents', abort: true })
  .max(MAX_AMOUNT_CENTS, { error: `must be at most ${MAX_AMOUNT_CENTS} cents`, abort: true })
  .int('must be a whole number of cents');
// Stripe's metadata limits: 50 keys, key names up to 40 characters, values up to 500. The gate writes its own keys
// into the same metadata (`own`: the effect id and the request, and a credit's incident), so the caller gets what is
// left of the 50: more would be accepted here and refused by Stripe only at the send (REFUSED:target_error).
const STRIPE_METADATA_KEYS = 50;
// Stripe reads an empty value as "unset this key": the object would not carry what the effect records. (Recorded
// effects keep what they were proposed with.)
const metadataValue = freeText(500).refine((value) => value !== '', "may not be empty (Stripe reads an empty value as 'no such key' and would not keep it): leave the key out");
// `recorded`: the keys of an effect read back from the journal are taken as recorded (recordedIdentifier says why).
const metadata = (own: readonly string[], recorded = false) => {
  const most = STRIPE_METADATA_KEYS - own.length;
  const theirs = `${own.slice(0, -1).join(', ')} and ${own.at(-1) ?? ''}`;
  return z
    .record((recorded ? recordedIdentifier(40) : identifier(40)).refine((key) => !/[[\]]/.test(key), 'may not hold brackets (Stripe reads a bracket as a nested key)'), recorded ? freeText(500) : metadataValue)
    .refine((value) => Object.keys(value).length <= most, `at most ${most} metadata keys (Stripe allows ${STRIPE_METADATA_KEYS}, and the gate adds ${own.length} of its own: ${theirs})`)
    .refine((value) => Object.keys(value).every((key) => !key.startsWith('interlock_')), 'metadata keys starting with interlock_ are reserved for the gate')
    .optional();
};

export const refundEffectSchema = z.strictObject({
  kind: z.literal('refund'),
  paymentIntent: id('pi', 'PaymentIntent'),
  amount: cents,
  reason: z.enum(['duplicate', 'fraudulent', 'requested_by_customer']).optional(),
  metadata: metadata(['the effect id', 'the request']),
});

export const creditEffectSchema = z.strictObject({
  kind: z.literal('credit'),
  customer: id('cus', 'Customer'),
  amount: cents,
  /** The incident this credit compensates; two credits for one incident are what the credit premise guards against. */
  incident: z.string().regex(/^[A-Za-z0-9_.:#-]{1,200}$/, 'must be 1-200 letters, digits or _ . : # -'),
  description: freeText(350).optional(),
  metadata: metadata(['the effect id', 'the incident', 'the request']),
});

const recordedSchemas = {
  refund: refundEffectSchema.extend({ metadata: metadata(['the effect id', 'the request'], true) }),
  credit: creditEffectSchema.extend({ metadata: metadata(['the effect id', 'the incident', 'the request'], true) }),
};

export type RefundEffect = z.infer<typeof refundEffectSchema>;
export type CreditEffect = z.infer<typeof creditEffectSchema>;
export type Effect = RefundEffect | CreditEffect;

export type EffectFacts = { kind: EffectKind; subject: string; amount: number };

export class EffectError extends InterlockError {
  constructor(message: string, fields: readonly FieldProblem[]) {
    super('invalid_effect', message, { fields });
    this.name = 'EffectError';
  }
}

function problemsOf(error: z.ZodError, prefix: string): FieldProblem[] {
  return zodFieldProblems(error.issues, [prefix], prefix);
}

/**
 * Parses an effect of a known kind; throws EffectError naming every bad field. `recorded`: the effect was read back
 * from the journal, and its metadata keys are taken as they were recorded.
 */
export function parseEffect(effect: unknown, path = 'effect', options: { recorded?: boolean } = {}): Effect {
  const kind = typeof effect === 'object' && effect !== null ? (effect as { kind?: unknown }).kind : undefined;
  const schemas = options.recorded === true ? recordedSchemas : { refund: refundEffectSchema, credit: creditEffectSchema };
  const schema = kind === 'refund' ? schemas.refund : kind === 'credit' ? schemas.credit : null;
  if (schema === null) {
    throw new EffectError(`The effect is invalid (${path}.kind: must be one of ${EFFECT_KINDS.join(', ')}).`, [{ path: `${path}.kind`, message: `must be one of ${EFFECT_KINDS.join(', ')}` }]);
  }
  const parsed = schema.safeParse(effect);
  if (!parsed.success) {
    const fields = problemsOf(parsed.error, path);
    throw new EffectError(`The effect is invalid (${fields.map((field) => `${field.path}: ${field.message}`).join('; ')}).`, fields);
  }
  return parsed.data;
}

/** Subject and amount of an effect the gate has already accepted (so it parses as recorded); throws EffectError otherwise. */
export function describeEffect(effect: JsonObject | Effect): EffectFacts {
  return factsOfEffect(parseEffect(effect, 'effect', { recorded: true }));
}

/**
 * What a credit may be sent for only once on its subject, held by the dispatch step (lib.lua propose_effect): its
 * incident (`incident:<id>`).
 */
export function incidentHold(incident: string): string {
  return `incident:${incident}`;
}

/**
 * What a refund decided on its payment's other refunds holds (lib.lua propose_effect): one such refund out on a
 * payment at a time. The target's premise read sees only what has landed at Stripe, so two refunds decided on "nobody
 * else refunded" and sent close together would both pass their reads; the second waits for the first to settle and
 * reads again, and sees it.
 */
export const REFUNDS_HOLD = 'refunds';

/**
 * What an effect holds on its subject from its dispatch: a credit's incident; for a refund whose premises (`premises`,
 * as decided on) name a fact the target's refunds change (`movedBySends`, Target.movedBySends), REFUNDS_HOLD; '' for
 * nothing.
 */
export function holdOf(effect: Effect, premises: Readonly<Record<string, unknown>> = {}, movedBySends: readonly string[] = []): string {
  if (effect.kind === 'credit') return incidentHold(effect.incident);
  return movedBySends.some((name) => Object.hasOwn(premises, name)) ? REFUNDS_HOLD : '';
}

/** The kind of effect that moves money on a subject: a payment's refunds, a customer's credits; null for anything else. */
export function kindOfSubject(subject: string): EffectKind | null {
  return subject.startsWith('payment:') ? 'refund' : subject.startsWith('customer:') ? 'credit' : null;
}

/** Subject and amount of a parsed effect. */
export function factsOfEffect(parsed: Effect): EffectFacts {
  switch (parsed.kind) {
    case 'refund':
      return { kind: 'refund', subject: `payment:${parsed.paymentIntent}`, amount: parsed.amount };
    case 'credit':
      return { kind: 'credit', subject: `customer:${parsed.customer}`, amount: parsed.amount };
    default: {
      const never: never = parsed;
      return never;
    }
  }
}

const SUBJECT_ID = /^[A-Za-z0-9_]{1,200}$/;

/**
 * Subject and amount of an effect in untrusted input such as a receipt, or null. Only what verify() judges is
 * read (the payload's whole shape was checked when it was proposed, and its hash binds it since).
 */
export function effectFactsOrNull(effect: unknown): EffectFacts | null {
  if (typeof effect !== 'object' || effect === null) return null;
  const { kind, amount, paymentIntent, customer } = effect as Record<string, unknown>;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0 || amount > MAX_AMOUNT_CENTS) return null;
  if (kind === 'refund' && typeof paymentIntent === 'string' && paymentIntent.startsWith('pi_') && SUBJECT_ID.test(paymentIntent)) return { kind, subject: `payment:${paymentIntent}`, amount };
  if (kind === 'credit' && typeof customer === 'string' && customer.startsWith('cus_') && SUBJECT_ID.test(customer)) return { kind, subject: `customer:${customer}`, amount };
  return null;
}
