// Rule: an amount an operator reads is stated in its money's currency (src/core/money-text.ts), so a refusal for an
// amount over its approval's cap states the cap and the amount in the currency the effect was decided in (its
// `currency` premise), as the over-cap refusal of a shared cap does: a ¥2,000 refund under a ¥1,000 approval is "covers
// at most 1000 JPY, not 2000 JPY", never "1000 cents". Whether the submit's check before any read or the dispatch step
// finds it, the journal records the sentence the caller is answered with. Decided without the premise, the currency is
// said to be unknown, never cents or dollars.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { refundProposal, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

/** The REFUSED entry the refusal of `effectId` was recorded with: its reason and the approval problems it checked. */
async function recordedRefusal(node: TestNode, effectId: string) {
  const refused = (await node.journal.receipt(effectId))?.entries.find((entry) => entry.kind === 'REFUSED');
  if (refused?.kind !== 'REFUSED') throw new Error('no refusal was recorded');
  return { reason: refused.reason, problems: refused.checks?.approvalProblems ?? [] };
}

async function refusedOver(currency: string | null): Promise<{ reason: string | undefined; recorded: { reason: string; problems: string[] } }> {
  world = await gateWorld();
  const premises = currency === null ? FACTS : { ...FACTS, currency };
  world.target.world.set(PAYMENT, premises);
  const node = await world.node('a');
  const { id } = await grant(node, { id: 'ap_cap_1000', capCents: 1_000 });
  const answer = await node.gate.submit(refundProposal({ approval: id, amount: 2_000, premises }));
  expect(answer.outcome).toBe('REFUSED:lease');
  return { reason: answer.reason, recorded: await recordedRefusal(node, answer.effectId) };
}

describe('a refund over its approval', () => {
  it('states the cap and the amount of a yen refund in JPY, and the journal records that sentence', async () => {
    const { reason, recorded } = await refusedOver('jpy');
    expect(reason).toBe('approval ap_cap_1000 covers at most 1000 JPY, not 2000 JPY');
    expect(recorded).toEqual({ reason, problems: [reason] });
  });

  it('states a dollar refund in dollars', async () => {
    const { reason } = await refusedOver('usd');
    expect(reason).toBe('approval ap_cap_1000 covers at most $10.00, not $20.00');
  });

  it('says the currency is unknown when the refund was decided without its currency premise, never cents or dollars', async () => {
    const { reason } = await refusedOver(null);
    expect(reason).toBe('approval ap_cap_1000 covers at most 1000 (minor units, currency unknown), not 2000 (minor units, currency unknown)');
  });

  it('states the cap the dispatch step read in the effect\'s currency too, and records what it answers', async () => {
    world = await gateWorld();
    const premises = { ...FACTS, currency: 'jpy' };
    world.target.world.set(PAYMENT, premises);
    const node = await world.node('a');
    const { id } = await grant(node, { id: 'ap_cap_held', capCents: 5_000 });
    // The cap as Redis holds it is below the terms the worker read (a hash an older version or an operator wrote):
    // only the dispatch step sees it, and refuses.
    const redis = new Redis(world.config.redisUrl);
    try {
      await redis.hset(node.journal.keys.approval(PAYMENT, id), 'capCents', '1000');
    } finally {
      redis.disconnect();
    }
    const answer = await node.gate.submit(refundProposal({ approval: id, amount: 2_000, premises }));
    expect(answer).toMatchObject({ outcome: 'REFUSED:lease', reason: 'approval ap_cap_held covers at most 1000 JPY, not 2000 JPY' });
    expect(await recordedRefusal(node, answer.effectId)).toEqual({ reason: answer.reason, problems: [answer.reason] });
  });
});
