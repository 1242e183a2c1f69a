// Pieces the decisions worker's tests share: a refund case on a payment of its own under an approval of its own, and
// a wait for what a case's status (or a job's state) comes to.
import { randomBytes } from 'node:crypto';
import type { CaseSubmission, Stores } from '../../src/interlock.js';

/** A refund case on a new payment, under a new approval of 2,000 cents for that payment alone. */
export async function refundCase(stores: Stores): Promise<CaseSubmission> {
  const id = randomBytes(5).toString('hex');
  const paymentIntent = `pi_${id}`;
  await stores.approvals.grant({ id: `ap_${id}`, approver: 'support-lead', capCents: 2_000, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
  return { caseId: `case-${id}`, kind: 'refund', subject: paymentIntent, incident: null, story: 'The jar arrived cracked.', approval: `ap_${id}`, agent: 'support-bot' };
}

/** `read` until `done` says so, every 20 ms; throws naming `what` and the last value read after `ms`. */
export async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
