// Rule: the gate's own submit (an embedded gate: createInterlock, startSender, and their callers' retry loops) keeps
// the same limit the recorder keeps (record.ts MAX_DECISIONS): one effect takes at most MAX_DECISIONS decisions in all.
// A new decision past it (a refused request reworded once more) throws too_many_decisions naming the effect, and
// nothing is written: not a PROPOSED, not a refusal, and no entry of the submit is left in the open index. The latest
// decision sent again is still answered from the journal.
import { afterEach, expect, it } from 'vitest';
import { MAX_DECISIONS } from '../../src/gate/record.js';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

it('gate.submit refuses a reworded decision past MAX_DECISIONS with too_many_decisions, and writes nothing', async () => {
  world = await gateWorld();
  const node = await world.node('a');
  // The approval's cap (100 cents) is below the 2,000 asked: every decision is refused REFUSED:lease in the answer.
  const { id } = await grant(node, { capCents: 100 });
  const base = refundProposal({ approval: id, requestId: `case-decision-cap-submit-${Date.now()}` });
  const effectId = node.gate.effectIdOf(base);
  const reworded = (n: number) => ({ ...base, decision: { model: 'agent-model', text: `Attempt ${n}: refund it.` } });

  for (let n = 0; n < MAX_DECISIONS; n += 1) expect((await node.gate.submit(reworded(n))).outcome).toBe('REFUSED:lease');
  const before = await node.journal.entries(PAYMENT, effectId);
  expect(before.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(MAX_DECISIONS);

  for (const n of [MAX_DECISIONS, MAX_DECISIONS + 1]) {
    const refused = await node.gate.submit(reworded(n)).then(
      () => null,
      (error: unknown) => error as { code?: string; message?: string },
    );
    expect(refused?.code).toBe('too_many_decisions');
    expect(refused?.message).toContain(`Effect ${effectId} holds ${MAX_DECISIONS} decisions already`);
    expect(refused?.message).toContain('Its latest decision was refused (REFUSED:lease)');
  }
  expect((await node.journal.entries(PAYMENT, effectId)).map((entry) => entry.hash)).toEqual(before.map((entry) => entry.hash));
  await node.journal.flushIndex();
  expect((await node.journal.openEffects()).map((open) => open.effectId)).not.toContain(effectId);

  // The latest decision, sent again exactly, is the one recorded: judged again as it stands, no decision added.
  expect((await node.gate.submit(reworded(MAX_DECISIONS - 1))).outcome).toBe('REFUSED:lease');
  expect((await node.journal.entries(PAYMENT, effectId)).filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(MAX_DECISIONS);
});
