// Rule: a credit request id moves the money it was first decided as, whoever hands it to the gate: decided again with
// another `currency` premise it is refused as another payload (REFUSED:conflicting_payload) and nothing is sent. The
// recorder behind POST /v1/credits refuses it (credit-currency tests); this is the gate's own submit, as a service that
// embeds the library (createInterlock, startSender) calls it with no recorder in front.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { latestProposal } from '../../src/interlock.js';
import { bearer, TOKENS } from './rig.js';
import { grantOn, refusedYenCredit, yenCreditSuite } from './yen-credits.js';

const { rig, make } = yenCreditSuite();

describe('the gate handed a credit first decided in jpy, decided again in usd under the same request id', () => {
  it('refuses it as another payload and sends nothing', async () => {
    const { customer, effectId } = await refusedYenCredit(rig, make, { currency: 'usd' });
    const first = await latestProposal(rig.stores, effectId);
    if (first === null) throw new Error('the refused credit has no proposal');
    expect(first.premises.currency).toBe('jpy');
    const again = { ...first, approval: await grantOn(rig, customer), premises: { ...first.premises, currency: 'usd' } };
    const journalKinds = async () => {
      const view = await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor));
      return (view.body.journal as { kind: string }[]).map((entry) => entry.kind);
    };
    const before = await journalKinds();

    const answer = await make.sender.gate.submit(again);

    expect(answer.outcome).toBe('REFUSED:conflicting_payload');
    expect(answer.reason).toMatch(/first decided in JPY, and this decision is in USD/);
    // Nothing was sent: the refusal kept as evidence (a REFUSED entry) is all the journal gained, no dispatch or commit.
    expect(await journalKinds()).toEqual([...before, 'REFUSED']);
    expect(rig.target.landedCount(effectId)).toBe(0);
  });

  it('still answers the same currency decided again as before: judged on the facts, not refused as another payload', async () => {
    const { customer, effectId } = await refusedYenCredit(rig, make, { currency: 'usd' });
    const first = await latestProposal(rig.stores, effectId);
    if (first === null) throw new Error('the refused credit has no proposal');
    const answer = await make.sender.gate.submit({ ...first, approval: await grantOn(rig, customer) });
    expect(answer.outcome).not.toBe('REFUSED:conflicting_payload');
  });
});
