// Rule (gate/send.ts sendOnce): a send none of whose requests passed its last check (beforeWrite) sent nothing, and is
// answered so (fenced: "nothing was sent"), never as a send whose outcome is unknown. A Redis error on the claim check
// right before the request leaves (a dropped connection, a failover) fences the send, keeping the error as its cause;
// a claim check still unanswered at the send deadline fences it too. Neither writes `unknowns` (mark-unknown-1: "a
// request of the open dispatch left and the target gave no definite answer"), which spaces recovery's resends and
// counts toward the send_unanswered alert; recovery's resend meeting the same is UNRESOLVED:fenced, and the effect
// stays open and is sent once Redis answers.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterEach, expect, it, vi } from 'vitest';
import type { Journal } from '../../src/redis/journal.js';
import { createKeys } from '../../src/redis/keys.js';
import { refundProposal, type World } from '../support/harness.js';
import { crashedBeforeSend, gateWorld, grant, recoverUntilSettled, untilRedisTime } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await world?.close();
  world = undefined;
});

/**
 * The next claim check of `journal` meets Redis failing: `error`, a dropped connection (as in a failover), or
 * `delayMs`, answered that late (a failover's stall: Redis judged the claim in time, and its answer came that much
 * later; one judged after the send deadline is refused by Redis itself). Returns whether it was met yet, and the late
 * answer once given.
 */
function failNextClaimCheck(journal: Journal, how: { error: string } | { delayMs: number }): { met: () => boolean; answers: ReturnType<Journal['holdsClaim']>[] } {
  let met = false;
  const answers: ReturnType<Journal['holdsClaim']>[] = [];
  const real = journal.holdsClaim.bind(journal);
  vi.spyOn(journal, 'holdsClaim').mockImplementationOnce(async (...args) => {
    met = true;
    if ('error' in how) throw new Error(how.error);
    const answer = real(...args).then(async (check) => {
      await sleep(how.delayMs);
      return check;
    });
    answers.push(answer);
    return answer;
  });
  return { met: () => met, answers };
}

/** The effect's `unknowns` count in its state hash (null: never marked). */
async function unknownsOf(effectId: string): Promise<string | null> {
  const redis = new Redis(world!.config.redisUrl);
  try {
    const keys = createKeys(world!.config.keyPrefix);
    const partition = await redis.hget(keys.effectPartitions, effectId);
    return await redis.hget(keys.state(String(partition), effectId), 'unknowns');
  } finally {
    await redis.quit();
  }
}

function sendsOf(effectId: string): number {
  return world!.target.sendStarts.filter((one) => one.effectId === effectId).length;
}

it('a Redis error on the claim check right before the send: nothing was sent, said so, and nothing is marked unknown', async () => {
  world = await gateWorld({ target: { tier: 1 } });
  const a = await world.node('a');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);
  const { met } = failNextClaimCheck(a.journal, { error: 'Connection is closed.' });
  const answer = await a.gate.submit(proposal);
  expect(met()).toBe(true);
  expect(sendsOf(effectId)).toBe(0);
  expect({ outcome: answer.outcome, reason: answer.reason, unknowns: await unknownsOf(effectId) }).toEqual({
    outcome: 'IN_FLIGHT',
    reason: expect.stringContaining('nothing was sent: could not ask Redis whether this worker still holds the claim before the request left (Connection is closed.)'),
    unknowns: null,
  });
});

it('a claim check answered after the send deadline (Redis stalled): nothing was sent, said so, nothing is marked, and nothing leaves later', async () => {
  world = await gateWorld({ target: { tier: 1 } });
  const a = await world.node('a');
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);
  // The send deadline is 600 ms here (FAST).
  const { met, answers } = failNextClaimCheck(a.journal, { delayMs: 1_000 });
  const answer = await a.gate.submit(proposal);
  expect(met()).toBe(true);
  // The late answer (the claim is still held) reaches the send, which then stops: its request never leaves.
  expect(await answers[0]).toBe(true);
  await new Promise((resolve) => setImmediate(resolve));
  expect(sendsOf(effectId)).toBe(0);
  expect({ outcome: answer.outcome, reason: answer.reason, unknowns: await unknownsOf(effectId) }).toEqual({
    outcome: 'IN_FLIGHT',
    reason: expect.stringContaining('nothing was sent'),
    unknowns: null,
  });
});

it("recovery's resend meeting a Redis error on the claim check is UNRESOLVED:fenced, marks nothing, and the effect is sent later", async () => {
  world = await gateWorld({ target: { tier: 1 } });
  const { b, effectId } = await crashedBeforeSend(world);
  const { met } = failNextClaimCheck(b.journal, { error: 'Connection is closed.' });
  let failed;
  for (let pass = 0; pass < 5 && !met(); pass += 1) {
    failed = await b.gate.recover({ only: [effectId] });
    if (!met() && failed.nextAt !== null) await untilRedisTime(b, failed.nextAt);
  }
  expect(met()).toBe(true);
  expect(sendsOf(effectId)).toBe(0);
  expect(failed?.unresolved).toEqual([expect.objectContaining({ effectId, outcome: 'UNRESOLVED:fenced', error: expect.stringContaining('could not ask Redis whether this worker still holds the claim') })]);
  expect(await unknownsOf(effectId)).toBeNull();
  vi.restoreAllMocks();
  expect((await recoverUntilSettled(b, effectId)).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
  expect(sendsOf(effectId)).toBe(1);
});
