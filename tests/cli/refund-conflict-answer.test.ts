// Rule: a refund refused REFUSED:conflicting_payload (its request id was used before for another payload) answers the
// refusal on top and the effect recorded under that request id under `recorded`, never the two mixed (README, The
// command line; the API answers 409 conflicting_payload). The CLI printed the recorded effect's JSON with only outcome,
// sentence and reason replaced: `state: "settled"`, its journal and `finalMoney: returned` beside a refusal, read as
// this request's.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainOutcome } from '../../src/interlock.js';
import { runCli } from './run-cli.js';
import { paymentWithApproval, refundsAt, startMoneyRig, type MoneyRig } from './money-rig.js';

let rig: MoneyRig;
beforeAll(async () => {
  rig = await startMoneyRig('conflict-answer');
}, 90_000);
afterAll(async () => {
  await rig?.stop();
});

describe('refund under a request id recorded with another payload', { timeout: 120_000 }, () => {
  it('exit 3: the refusal and the request id on top, the recorded effect (state, outcome, payload) under `recorded`', async () => {
    const { pi, approval } = await paymentWithApproval(rig);
    const request = `conflict-${randomBytes(3).toString('hex')}`;
    const refund = (amount: number) => runCli(['refund', '--request', request, '--payment-intent', pi, '--amount', String(amount), '--approval', approval, '--wait', '30'], rig.env);
    const first = await refund(1500);
    expect(first.code, first.stderr).toBe(0);
    const committed = JSON.parse(first.stdout) as { effectId: string };
    const other = await refund(1200);
    expect(other.code, other.stderr).toBe(3);
    const answer = JSON.parse(other.stdout) as Record<string, unknown>;
    expect(Object.keys(answer).sort()).toEqual(['outcome', 'reason', 'recorded', 'requestId', 'sentence']);
    expect(answer).toMatchObject({ outcome: 'REFUSED:conflicting_payload', sentence: explainOutcome('REFUSED:conflicting_payload'), reason: expect.stringContaining('another payload'), requestId: request });
    expect(answer.recorded).toMatchObject({ effectId: committed.effectId, state: 'settled', outcome: 'COMMITTED', payload: { kind: 'refund', paymentIntent: pi, amount: 1500 }, finalMoney: { status: 'returned' }, verification: { valid: true } });
    expect(await refundsAt(rig, pi)).toEqual([1500]);
  });
});
