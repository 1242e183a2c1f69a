// Rule: premises are compared only by the names decided on, on the facts exactly as the target read them, before
// anything is quoted (src/gate/reads.ts judgeFacts): a premise holds when the fact is the same plain JSON value. What
// the target answers besides the names asked for is ignored. A fact that changed is recorded quoted within the limits
// a proposal's premises are accepted under (PROPOSAL_LIMITS: 16,000 characters of JSON, 8 levels), so a change that
// fits a proposal is recorded whole; quoting never turns an unchanged fact into a change. An answer that is not an
// object of facts is unreadable: premise_read_failed, nothing sent.
// Before: the facts read back were quoted with the smaller QUOTE_LIMITS (strings 2,000, lists 100, the whole object
// 16,000) and then compared, so an unchanged 150-item list, a 3,000-character string or a large extra fact was refused
// REFUSED:stale_premise with a signed change that never happened.
import { afterEach, expect, it } from 'vitest';
import { parseProposal } from '../../src/core/proposal.js';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

it('a list premise of 150 items that has not changed is not refused as stale', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  const items = Array.from({ length: 150 }, (_, index) => `li_${index}`);
  world.target.world.set(PAYMENT, { items });
  const proposal = refundProposal({ approval: id, premises: { items } });
  expect(() => parseProposal(proposal)).not.toThrow();
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('COMMITTED');
});

it('a 3,000-character string premise that has not changed is not refused as stale', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  const note = 'n'.repeat(3_000);
  world.target.world.set(PAYMENT, { note });
  const proposal = refundProposal({ approval: id, premises: { note } });
  expect(() => parseProposal(proposal)).not.toThrow();
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('COMMITTED');
});

it('an extra, unrequested large fact does not make the requested premises read as missing', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  const readFacts = world.target.readFacts.bind(world.target);
  world.target.readFacts = async (effectId, effect, names, context) => ({
    ...(await readFacts(effectId, effect, names, context)),
    history: Array.from({ length: 90 }, (_, index) => `event ${index}: ${'h'.repeat(200)}`),
  });
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('COMMITTED');
});

it('a list premise of 150 items that gained one is refused, the change recorded whole', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  const items = Array.from({ length: 150 }, (_, index) => `li_${index}`);
  world.target.world.set(PAYMENT, { items: [...items, 'li_new'] });
  const answer = await a.gate.submit(refundProposal({ approval: id, premises: { items } }));
  expect(answer.outcome).toBe('REFUSED:stale_premise');
  expect(answer.changes).toEqual([{ field: 'items', was: items, now: [...items, 'li_new'] }]);
  expect(world.target.sendStarts).toHaveLength(0);
});

it('a fact that grew past what a proposal may hold is refused as changed, recorded cut and bounded', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.world.set(PAYMENT, { note: 'm'.repeat(100_000) });
  const answer = await a.gate.submit(refundProposal({ approval: id, premises: { note: 'm'.repeat(3_000) } }));
  expect(answer.outcome).toBe('REFUSED:stale_premise');
  const [change] = answer.changes ?? [];
  expect(change?.field).toBe('note');
  expect(JSON.stringify(change?.now).length).toBeLessThanOrEqual(16_100);
});

it('facts answered as something other than an object are unreadable, not a change', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = async () => [] as never;
  await expect(a.gate.submit(refundProposal({ approval: id }))).rejects.toMatchObject({ code: 'premise_read_failed' });
  expect(world.target.sendStarts).toHaveLength(0);
});

it('a fact that only its quoted form would make equal to what was decided (NaN for null) is unreadable, not a pass', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.world.set(PAYMENT, { dispute: Number.NaN });
  await expect(a.gate.submit(refundProposal({ approval: id, premises: { dispute: null } }))).rejects.toMatchObject({ code: 'premise_read_failed' });
  expect(world.target.sendStarts).toHaveLength(0);
});
