// A tier-1 resend leans on the target remembering the idempotency key. The re-check before it takes time, so the
// resend script judges the key's age again on the Redis clock, at the last moment, and hands a late one to lookup.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { approvalTerms, createWorld, kill, refundProposal, sleep, startNode, type TestNode, type World } from '../support/harness.js';

describe('the idempotency window at resend time', () => {
  let world: World;
  let slowReads = 0;
  beforeAll(async () => {
    // The key is trusted for 1.5 s after the dispatch (window minus margin); the read budget (the send timeout, 2 s: the
    // gate cuts a read there) leaves room for the slow re-read below, and the margin exceeds it plus the settle margin.
    world = await createWorld({ target: { dedupWindowMs: 4_000 }, config: { dedupMarginMs: 2_500, sendTimeoutMs: 2_000 } });
  });
  afterAll(async () => {
    await world.close();
  });

  it('does not resend under a key the target may have forgotten when the re-check ran past the window; it looks up and reapplies instead', async () => {
    const subject = 'payment:pi_window';
    world.target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: subject });
    const first = await world.node();
    await first.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id, paymentIntent: 'pi_window' });
    world.target.inject({ kind: 'crash-before-send' });
    await expect(first.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
    await kill(first);

    // The recovering worker's premise read hangs past dispatch + window - margin (1.5 s).
    const slowTarget: Target = {
      ...world.target,
      async readFacts(effectId, effect, names, context) {
        if (slowReads === 0) {
          slowReads += 1;
          await sleep(1_700);
        }
        return world.target.readFacts(effectId, effect, names, context);
      },
    };
    const recoverer: TestNode = await startNode({ config: world.config, target: slowTarget, key: world.key.key });
    world.nodes.push(recoverer);
    const effectId = recoverer.gate.effectIdOf(proposal);

    const late = await recoverer.gate.recover({ only: [effectId] });
    expect(late.settled).toEqual([]);
    expect(late.skipped[0]?.reason).toMatch(/past the idempotency window/);
    expect(world.target.landedCount(effectId)).toBe(0);

    const next = await recoverer.gate.recover({ only: [effectId] });
    expect(next.settled.map((item) => item.outcome)).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await recoverer.journal.receipt(effectId);
    expect(verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys })).toMatchObject({ valid: true, happened: true, outcome: 'REAPPLIED_AFTER_QUERY' });
  });
});
