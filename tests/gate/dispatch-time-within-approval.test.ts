// Rule (I4: the approval is checked at dispatch, and a receipt says which checks ran): a receipt's DISPATCHED falls
// inside the life of the approval its AUTHORIZED entry quotes. The dispatch script judged expiry at Redis's time, but
// its entries are recorded at the worker's estimate of it (`at`, an upper bound, taken up to a second ahead), so a
// dispatch judged live could be recorded at or after the approval's expiry, and the signed receipt read as a send
// under an expired approval. Expiry is judged at the later of the two now (lib.lua propose_effect).
import { afterEach, expect, it } from 'vitest';
import { approvalTerms, refundProposal, type World } from '../support/harness.js';
import { PAYMENT, gateWorld } from './gate-support.js';
import type { Entry } from '../../src/core/entries.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

it('no receipt records a dispatch at or after the expiry of the approval it quotes', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const late: { effectId: string; dispatchedAt: number; expiresAt: number }[] = [];
  // A few short-lived approvals, each hammered with refunds until it has expired.
  for (let round = 0; round < 5 && late.length === 0; round += 1) {
    const now = await a.journal.serverTime();
    const terms = approvalTerms({ scope: PAYMENT, capCents: 90_000_000, maxUses: 100_000, expiresAt: now + 300 });
    await a.approvals.grant(terms);
    const answers = [];
    while ((await a.journal.serverTime()) < terms.expiresAt + 50) answers.push(await a.gate.submit(refundProposal({ approval: terms.id, amount: 100 })));
    for (const answer of answers.filter((x) => x.outcome === 'COMMITTED')) {
      const entries: Entry[] = await a.journal.entries(PAYMENT, answer.effectId);
      const authorized = entries.find((e) => e.kind === 'AUTHORIZED') as Extract<Entry, { kind: 'AUTHORIZED' }>;
      const dispatched = entries.find((e) => e.kind === 'DISPATCHED')!;
      if (dispatched.at >= authorized.approval.expiresAt) late.push({ effectId: answer.effectId, dispatchedAt: dispatched.at, expiresAt: authorized.approval.expiresAt });
    }
  }
  expect(late).toEqual([]);
});
