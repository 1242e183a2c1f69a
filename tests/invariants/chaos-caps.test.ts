// Rule (DESIGN §3 I2, I4, I6, F): under many concurrent effects from several workers, with slow, failing, refused and
// fenced-out sends and a worker whose heartbeat lapses mid-send, every effect lands at most once, the approval's and
// the subject's running totals equal exactly the money that moved or may have moved (committed + AMBIGUOUS), never
// more than the caps, and every receipt's answer agrees with the target's landings.
import { afterEach, expect, it } from 'vitest';
import { kill, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT } from '../gate/gate-support.js';
import { recoverUntilSettled } from '../../src/gate/recovery-loop.js';
import { outcomeOf, verify } from '../../src/core/verify.js';
import type { Fault } from '../../src/targets/memory-target.js';

let world: World | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

for (const tier of [1, 2, 3] as const) {
  for (const seed of [1, 2, 3]) {
    it(`tier ${tier} seed ${seed}: totals equal what moved, nothing lands twice, receipts agree`, async () => {
      const rand = rng(seed * 7 + tier);
      world = await gateWorld({ target: { tier } });
      const nodes: TestNode[] = [await world.node('a'), await world.node('b'), await world.node('c')];
      const ap = await grant(nodes[0]!, { capCents: 9_000, maxUses: 8 });
      await nodes[0]!.approvals.setSubjectCap(PAYMENT, 8_000);
      const faults: Fault[] = [
        { kind: 'error-after-send' },
        { kind: 'error-before-send' },
        { kind: 'reject' },
        { kind: 'slow-send', delayMs: 300 },
        { kind: 'slow-send', delayMs: 700, landsAfterAbort: true },
        { kind: 'slow-answer', delayMs: 450, answer: 'landed' },
        { kind: 'slow-answer', delayMs: 450, answer: 'rejected' },
      ];
      for (let i = 0; i < 10; i += 1) if (rand() < 0.6) world.target.inject(faults[Math.floor(rand() * faults.length)]!);
      const proposals = Array.from({ length: 14 }, (_, i) => refundProposal({ requestId: `case-chaos-${seed}-${i}`, approval: ap.id, amount: 500 + 100 * Math.floor(rand() * 10) }));
      const answers = proposals.map((p, i) => {
        const node = nodes[i % 3]!;
        return sleep(Math.floor(rand() * 200)).then(() => node.gate.submit(p)).catch((e: unknown) => ({ outcome: `threw ${String(e)}` }));
      });
      // Worker c freezes (its heartbeat lapses) while its sends are under way: its claims are taken over.
      await sleep(150);
      await kill(nodes[2]!);
      const settled = await Promise.all(answers);
      void settled;
      // Whoever is alive recovers until nothing is open.
      await sleep(800);
      await recoverUntilSettled(nodes[0]!.gate, nodes[0]!.journal, { timeoutMs: 20_000 });
      await recoverUntilSettled(nodes[1]!.gate, nodes[1]!.journal, { timeoutMs: 20_000 });
      await sleep(300);
      await recoverUntilSettled(nodes[0]!.gate, nodes[0]!.journal, { timeoutMs: 20_000 });

      const problems: string[] = [];
      let moved = 0;
      let uses = 0;
      let landedCents = 0;
      for (const p of proposals) {
        const effectId = nodes[0]!.gate.effectIdOf(p);
        const partition = await nodes[0]!.journal.partitionOf(effectId);
        const entries = partition === null ? [] : await nodes[0]!.journal.entries(partition, effectId);
        const state = partition === null ? null : (await nodes[0]!.journal.readState(partition, effectId)).state;
        const outcome = outcomeOf(entries);
        const landed = world.target.landedCount(effectId);
        if (landed > 1) problems.push(`${p.requestId} landed ${landed} times`);
        landedCents += landed > 0 ? p.effect.amount : 0;
        if (state?.open) problems.push(`${p.requestId} still open`);
        const receipt = await nodes[0]!.gate.receipt(effectId);
        const v = receipt === null ? null : verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
        const happened = v?.happened ?? false;
        if (v !== null && v.problems.length > 0) problems.push(`${p.requestId}: receipt problems ${v.problems.join('; ')}`);
        if (landed > 0 && happened === false) problems.push(`${p.requestId}: landed but receipt says it did not happen (${outcome})`);
        if (landed === 0 && happened === true) problems.push(`${p.requestId}: receipt says it happened but nothing landed (${outcome})`);
        if (happened === true || happened === 'unknown') {
          moved += p.effect.amount;
          uses += 1;
        }
      }
      const { snapshot } = await nodes[0]!.approvals.describe(ap.id);
      const subject = await nodes[0]!.approvals.subjectCap(PAYMENT);
      if (snapshot?.reservedCents !== moved) problems.push(`approval reserved ${snapshot?.reservedCents} cents, but ${moved} moved or may have`);
      if (snapshot?.uses !== uses) problems.push(`approval counts ${snapshot?.uses} uses, but ${uses} effects moved or may have`);
      if (subject.movedCents !== moved) problems.push(`subject total ${subject.movedCents}, but ${moved} moved or may have`);
      if (landedCents > 8_000) problems.push(`landed ${landedCents} cents past the subject cap of 8000`);
      expect(problems).toEqual([]);
    });
  }
}
