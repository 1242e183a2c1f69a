// Bad input gets a clear error and loses nothing: no entry, no index, no claim.
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import { ProposalError } from '../../src/core/proposal.js';
import { keysWrittenUnder, refundProposal, worldWithNode, type TestNode, type World } from '../support/harness.js';

describe('bad input', () => {
  let world: World;
  let node: TestNode;
  let redis: Redis;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ world, node, redis, close } = await worldWithNode());
  });
  afterAll(() => close());

  it('refuses a proposal without an approval with an error naming the field, writing nothing', async () => {
    const proposal: Record<string, unknown> = { ...refundProposal({ approval: 'ap_x' }) };
    delete proposal.approval;
    await expect(node.gate.submit(proposal)).rejects.toThrow(/approval/);
    const written = (await keysWrittenUnder(redis, world.config.keyPrefix));
    expect(written).toEqual([]);
  });

  it('refuses an effect whose amount is not whole cents before anything is written', async () => {
    const proposal = refundProposal({ approval: 'ap_x', amount: 12.5 });
    const error = await node.gate.submit(proposal).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProposalError);
    expect((error as Error).message).toMatch(/effect\.amount: must be a whole number of cents/);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    expect(await node.journal.partitionOf(effectId)).toBeNull();
  });

  it('refuses a payload that has no canonical JSON form, naming the path', async () => {
    const proposal = { ...refundProposal({ approval: 'ap_x' }), premises: { seen: Number.NaN } };
    await expect(node.gate.submit(proposal)).rejects.toThrow(/premises\.seen: .*NaN/);
  });
});
