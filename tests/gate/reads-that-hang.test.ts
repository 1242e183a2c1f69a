// Rule: the gate bounds its own reads of a target, as it bounds sends (send.ts): a premise read or a lookup races the
// read timeout (the target's send timeout, 600 ms here), and a target whose read never answers cannot hang a submit
// or a recovery pass (which walks open effects one after another). A facts read that times out is premise_read_failed
// (nothing sent, retried); a lookup that times out is UNRESOLVED:lookup_failed. A late answer or rejection of the
// abandoned read is absorbed (an unhandled rejection would fail this file).
// Before: readFacts and query were awaited with no bound of the gate's own; a read that never answered hung both.
import { afterEach, expect, it } from 'vitest';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, unknownSend } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

const within = <T>(work: Promise<T>, ms: number) => Promise.race([work.then((value) => ({ value }), (error: unknown) => ({ error })), sleep(ms).then(() => 'hung' as const)]);

it('a fact read that never answers fails the submit within the read timeout instead of hanging it', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = () => new Promise(() => undefined);
  const settled = await within(a.gate.submit(refundProposal({ approval: id })), 5_000);
  expect(settled).not.toBe('hung');
  expect(settled).toMatchObject({ error: { code: 'premise_read_failed' } });
  expect(world.target.sendStarts).toHaveLength(0);
});

it('a fact read that rejects after the read timeout has failed the submit is absorbed', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = () => new Promise((_, reject) => setTimeout(() => reject(new Error('late failure')), 1_000));
  const settled = await within(a.gate.submit(refundProposal({ approval: id })), 5_000);
  expect(settled).toMatchObject({ error: { code: 'premise_read_failed' } });
  // The abandoned read rejects now, with nobody awaiting it.
  await sleep(1_200);
});

it('a recovery lookup that never answers does not hang the recovery pass: it is unresolved, lookup_failed', async () => {
  const sent = await unknownSend();
  world = sent.world;
  const { node: a, effectId } = sent;
  world.target.query = () => new Promise(() => undefined);
  const pass = await within(a.gate.recover({ only: [effectId] }), 5_000);
  expect(pass).not.toBe('hung');
  expect(pass).toMatchObject({ value: { unresolved: [expect.objectContaining({ effectId, outcome: 'UNRESOLVED:lookup_failed' })] } });
  expect(world.target.landings).toHaveLength(0);
});

it('a recovery lookup that answers after the read timeout is absorbed, and the next pass settles the effect', async () => {
  const sent = await unknownSend();
  world = sent.world;
  const { node: a, effectId } = sent;
  const query = world.target.query.bind(world.target);
  world.target.query = () => new Promise((_, reject) => setTimeout(() => reject(new Error('late failure')), 1_000));
  await sleep(900);
  const first = await a.gate.recover({ only: [effectId] });
  expect(first.unresolved).toEqual([expect.objectContaining({ outcome: 'UNRESOLVED:lookup_failed' })]);
  await sleep(1_200);
  world.target.query = query;
  const second = await a.gate.recover({ only: [effectId] });
  expect(second.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(world.target.landedCount(effectId)).toBe(1);
});
