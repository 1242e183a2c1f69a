// Shape of a receipt as read from untrusted JSON. verify() reports a shape problem instead of throwing.
import { z } from 'zod';
import type { Receipt } from './receipt.js';

const json: z.ZodType<unknown> = z.lazy(() => z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(json), z.record(z.string(), json)]));
const jsonObject = z.record(z.string(), json);

const approvalSnapshot = z.object({
  id: z.string(),
  approver: z.string(),
  capCents: z.number(),
  expiresAt: z.number(),
  maxUses: z.number(),
  scope: z.string(),
  revoked: z.boolean(),
  revokedAt: z.number().nullable(),
  reservedCents: z.number().nullable(),
  uses: z.number().nullable(),
});
const change = z.object({ field: z.string(), was: json, now: json });
const checks = z.object({ approvalLive: z.boolean(), approval: approvalSnapshot.nullable(), approvalProblems: z.array(z.string()), violations: z.array(z.string()), changes: z.array(change) });

const envelope = {
  v: z.union([z.literal(1), z.literal(2)]),
  effectId: z.string(),
  at: z.number(),
  prev: z.string().nullable(),
  kid: z.string().optional(),
  hash: z.string(),
  sig: z.string().nullable(),
  covers: z.number().int().min(0).optional(),
};

const entry = z.discriminatedUnion('kind', [
  z.object({ ...envelope, kind: z.literal('PROPOSED'), agent: z.string(), approval: z.string().nullable(), premises: jsonObject, effect: jsonObject, request: json, decision: z.object({ model: z.string(), text: z.string() }).nullable() }),
  z.object({ ...envelope, kind: z.literal('AUTHORIZED'), approval: approvalSnapshot }),
  z.object({ ...envelope, kind: z.literal('DISPATCHED'), effect: jsonObject.optional(), subject: z.string().optional(), approval: z.string(), premises: jsonObject, checks, owner: z.string(), epoch: z.number(), sendDeadline: z.number() }),
  z.object({ ...envelope, kind: z.literal('COMMITTED'), via: z.enum(['send', 'retry-idempotent', 'recovery-query', 'recovery-reapply', 'failed-but-landed', 'late-result']), result: json, found: z.string().nullable(), rechecked: checks.nullable(), epoch: z.number() }),
  z.object({ ...envelope, kind: z.literal('REFUSED'), code: z.string(), reason: z.string(), checks: checks.nullable(), rechecked: checks.nullable(), changes: z.array(change), resolves: z.boolean(), proposal: json.optional() }),
  z.object({ ...envelope, kind: z.literal('AMBIGUOUS'), reason: z.string(), rechecked: checks.nullable(), epoch: z.number() }),
  z.object({ ...envelope, kind: z.literal('LATE_RESULT'), owner: z.string(), epoch: z.number(), outcome: z.enum(['landed', 'rejected', 'unknown']), result: json, error: z.string().nullable() }),
  z.object({
    ...envelope,
    kind: z.literal('OBSERVED'),
    source: z.enum(['webhook', 'reread']),
    eventId: z.string().nullable(),
    eventType: z.string(),
    objectType: z.enum(['refund', 'dispute', 'charge', 'customer_balance_transaction', 'credit_note']),
    objectId: z.string(),
    status: z.string().nullable(),
    failureReason: z.string().nullable(),
    amount: z.number().nullable(),
    charge: z.string().nullable(),
    disputeStatus: z.string().nullable(),
    disputeReason: z.string().nullable(),
    created: z.number().nullable(),
  }),
]);

// The head and the bundle take no fields beyond these: a field the signature does not cover would read as part of a
// signed receipt while nobody signed it.
const head = z.strictObject({ format: z.literal('interlock.receipt-head/v1'), effectId: z.string(), count: z.number(), lastHash: z.string().nullable(), signedAt: z.number(), kid: z.string(), sig: z.string() });

export const receiptSchema = z.strictObject({ format: z.enum(['interlock.receipt/v1', 'interlock.receipt/v2']), effectId: z.string(), entries: z.array(entry), head });

export function parseReceipt(input: unknown): { ok: true; receipt: Receipt } | { ok: false; problems: string[] } {
  let parsed: ReturnType<typeof receiptSchema.safeParse>;
  try {
    parsed = receiptSchema.safeParse(input);
  } catch (error) {
    // safeParse reports bad shapes but throws on nesting deeper than the stack; untrusted input must not crash verify().
    return { ok: false, problems: [`receipt cannot be read: ${error instanceof Error ? error.message : String(error)}`] };
  }
  if (parsed.success) return { ok: true, receipt: parsed.data as unknown as Receipt };
  return { ok: false, problems: parsed.error.issues.slice(0, 10).map((issue) => `receipt is malformed at ${issue.path.join('.') || '(root)'}: ${issue.message}`) };
}
