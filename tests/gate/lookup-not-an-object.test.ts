// Rule: a target's lookup (`query`) finds a landing only when it answers a plain object. Null or undefined is "nothing
// landed" (a lookup written as `refunds.find(...)` answers undefined); anything else (a list page's `data`, `[]`, a
// number) says neither, and is a failed lookup: UNRESOLVED:lookup_failed, the claim released, never a commit. Every
// lookup site goes through one helper (src/gate/reads.ts lookUp): the look after a definite refusal at submit
// (settle.ts settleRejected), recovery's lookup, and the look after a refusal met in recovery.
// Before: anything but null was a landing, so `undefined` or `[]` was signed COMMITTED_ON_QUERY (answer "returned")
// with nothing landed and the effect never sent; in recovery `undefined` crashed in objectId.
import { afterEach, expect, it } from 'vitest';
import { Rejected } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { entryKinds, gateWorld, grant, openState, unknownSend } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('a definite refusal followed by a lookup answering undefined is not committed as a landing', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.apply = async (_effectId, _effect, context) => {
    await context.beforeWrite();
    throw new Rejected('card declined', { code: 'charge_declined', status: 402 });
  };
  // `Array.prototype.find` over the refunds at the target: nothing carries this effect id.
  world.target.query = async () => [].find(() => true) as never;
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(world.target.landings).toHaveLength(0);
  // Undefined is "nothing landed": the refusal stands.
  expect(answer.outcome).toBe('REFUSED:target_error');
  expect(await entryKinds(a, answer.effectId)).not.toContain('COMMITTED');
  const receipt = verify(JSON.parse(JSON.stringify(await a.gate.receipt(answer.effectId))), { publicKeys: world.key.publicKeys });
  expect(receipt.happened).not.toBe(true);
});

it('a definite refusal followed by a lookup answering a list is a failed lookup, not a landing', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.apply = async (_effectId, _effect, context) => {
    await context.beforeWrite();
    throw new Rejected('card declined', { code: 'charge_declined', status: 402 });
  };
  world.target.query = async () => [] as never;
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('UNRESOLVED:lookup_failed');
  expect(await entryKinds(a, answer.effectId)).not.toContain('COMMITTED');
  expect((await openState(a, answer.effectId)).state.open).toBe(true);
});

it('a recovery lookup answering an empty list is not committed as a landing', async () => {
  // The connection drops before the request is written: nothing lands, the outcome is unknown to the gate.
  const sent = await unknownSend();
  world = sent.world;
  const { node: a, effectId } = sent;
  // A lookup that returns a list page's `data`: empty, nothing carries the effect id.
  world.target.query = async () => [] as never;
  await sleep(900);
  const report = await a.gate.recover({ only: [effectId] });
  expect(world.target.landings).toHaveLength(0);
  expect(report.settled).toEqual([]);
  expect(report.unresolved).toEqual([expect.objectContaining({ effectId, outcome: 'UNRESOLVED:lookup_failed' })]);
  expect(await entryKinds(a, effectId)).not.toContain('COMMITTED');
});

it('a recovery lookup answering undefined is "nothing landed": after the quiet period the effect is reapplied once', async () => {
  const sent = await unknownSend();
  world = sent.world;
  const { node: a, effectId } = sent;
  const query = world.target.query.bind(world.target);
  world.target.query = async (...args) => (await query(...args)) ?? (undefined as never);
  await sleep(900);
  const report = await a.gate.recover({ only: [effectId] });
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(world.target.landedCount(effectId)).toBe(1);
});
