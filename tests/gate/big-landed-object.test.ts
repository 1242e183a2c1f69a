// Rule: a landed object is recorded bounded, but what its receipt reads of it is taken before it is quoted and kept
// when quoting cuts the rest: the id (the evidence), and object, status, amount, failure_reason, charge (the final
// money, final-money.ts refundFromResult), with the rest of the Stripe summaries' scalars (settle.ts quoteLanded,
// which a fenced-out sender's LATE_RESULT uses too). Checked for a commit after a send and after a recovery lookup.
// Before: an object past the quote limits (a refund with 40 metadata values of 450 characters) became
// `{ truncated, preview }`: COMMITTED with evidence null, the receipt's final money "unknown" with no refund.
import { afterEach, expect, it } from 'vitest';
import { quoteLanded } from '../../src/gate/settle.js';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

const metadata = Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`key_${index}`, 'v'.repeat(450)]));

it('a landed refund with large metadata keeps its id as evidence and its status for the final money', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.apply = async (_effectId, _effect, context) => {
    await context.beforeWrite();
    return { id: 're_big', object: 'refund', status: 'succeeded', amount: 2000, metadata };
  };
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('COMMITTED');
  expect(answer.evidence).toBe('re_big');
  const verification = await verifiedReceipt(world, a, answer.effectId);
  expect(verification.finalMoney.status).toBe('returned');
  expect(verification.finalMoney.refunds).toEqual([expect.objectContaining({ id: 're_big', status: 'succeeded', amount: 2000 })]);
});

it('a large landed refund a recovery lookup finds keeps its id and a failed status', async () => {
  world = await gateWorld({ target: { tier: 2 } });
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.inject({ kind: 'error-after-send' });
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  world.target.query = async () => ({ id: 're_found', object: 'refund', status: 'failed', failure_reason: 'expired_or_canceled_card', amount: 2000, metadata });
  await sleep(900);
  const report = await a.gate.recover({ only: [answer.effectId] });
  expect(report.settled).toEqual([expect.objectContaining({ outcome: 'COMMITTED_ON_QUERY' })]);
  const verification = await verifiedReceipt(world, a, answer.effectId);
  expect(verification.evidence).toBe('re_found');
  expect(verification.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'expired_or_canceled_card' });
});

it('quoting a landed object keeps the fields the receipt reads, bounded, and leaves a small object as it was', () => {
  const small = { id: 're_1', object: 'refund', status: 'succeeded', amount: 2000, metadata: { a: 'b' } };
  expect(quoteLanded(small)).toEqual(small);
  const big = quoteLanded({ id: 're_2', object: 'refund', status: 'pending', amount: 700, charge: 'ch_1', note: 'x'.repeat(3_000), metadata, id_like: 'y' });
  expect(big).toMatchObject({ truncated: true, id: 're_2', object: 'refund', status: 'pending', amount: 700, charge: 'ch_1' });
  expect(JSON.stringify(big).length).toBeLessThan(16_000);
  // A kept field is quoted too: an id of a megabyte is cut, not copied.
  const huge = quoteLanded({ id: 'r'.repeat(1_000_000), metadata });
  expect(JSON.stringify(huge).length).toBeLessThan(16_000);
});
