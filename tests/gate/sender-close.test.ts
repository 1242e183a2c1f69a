// Rule: a sender that was closed sends nothing more (DESIGN §7, at most once). Its close clears the heartbeat, which
// tells every other worker it is dead: its claims are taken over at once, and on a target that cannot dedupe an empty
// lookup is trusted a settle margin later. So a call made after close() is refused (not_available), and a submit
// still running when close() was called is refused before its send, its claim given back unsent; close waits for it
// before clearing the heartbeat, and a running worker's recovery sends the effect once, never AMBIGUOUS.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InterlockError } from '../../src/core/errors.js';
import { openStores, settledOutcome, startSender, type Sender } from '../../src/interlock.js';
import { refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { entryKinds, gateWorld, grant } from './gate-support.js';

let world: World | null = null;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  await world?.close();
  world = null;
});

/** How a call ended: its answer, or what it threw. */
const settled = (call: Promise<unknown>) => call.then((answer) => ({ answer }), (error: unknown) => ({ error }));

/** A sender of its own on the world's stores, closed by the test while its stores stay open. */
async function closingSender(world: World): Promise<Sender> {
  const stores = await openStores({ ...world.config, workerId: 'closing-a' }, { logger: pino({ level: 'silent' }), signingKey: world.key.key });
  cleanups.push(() => stores.close());
  const sender = await startSender(stores, world.target);
  cleanups.push(() => sender.close());
  return sender;
}

/** Recovery passes of a running worker, as its loop runs them, until `done` holds (or about 6 s have passed). */
async function recoverWhile(live: TestNode, done: () => Promise<boolean>): Promise<void> {
  for (let pass = 0; pass < 120 && !(await done()); pass += 1) {
    await live.gate.recover().catch(() => undefined);
    await sleep(50);
  }
}

describe('a closed sender', () => {
  it("refuses a submit, an effect job's submitLatest and a recovery pass asked of it after close, records nothing and sends nothing", async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const live = await world.node('live-b');
    const closing = await closingSender(world);
    const { id } = await grant(live);
    await closing.close();
    await closing.close();
    const proposal = refundProposal({ approval: id });
    const effectId = live.gate.effectIdOf(proposal);
    for (const call of [() => closing.gate.submit(proposal), () => closing.gate.submitLatest(effectId, proposal), () => closing.gate.recover()]) {
      const { error } = (await settled(call())) as { error?: unknown };
      expect(error).toBeInstanceOf(InterlockError);
      expect(error).toMatchObject({ code: 'not_available', message: expect.stringMatching(/closed/) });
    }
    expect(world.target.sendStarts).toHaveLength(0);
    expect(await live.journal.partitionOf(effectId)).toBeNull();
  });

  for (const tier of [2, 3] as const) {
    it(`refuses a submit under way when close() was called before its send, and waits for it; a running worker sends the tier-${tier} effect once`, async () => {
      world = await gateWorld({ target: { tier } });
      const live = await world.node('live-b');
      const closing = await closingSender(world);
      const { id } = await grant(live);
      // The submit reads its premises slowly, so close() is called before it has dispatched; its request would then
      // take 450 ms at the target, inside its 600 ms send deadline, while the other worker's recovery runs.
      world.target.inject({ kind: 'slow-read', delayMs: 300 });
      world.target.inject({ kind: 'slow-answer', delayMs: 450, answer: 'landed' });
      const proposal = refundProposal({ approval: id });
      const effectId = live.gate.effectIdOf(proposal);
      let answered = false;
      const submitting = settled(closing.gate.submit(proposal)).finally(() => (answered = true));
      await sleep(50);
      await closing.close();
      const answeredAtClose = answered;
      await recoverWhile(live, async () => answered && (await settledOutcome(live.stores, effectId)) !== null);
      await sleep(300);
      await live.gate.recover();

      expect(world.target.landings.filter((landing) => landing.effectId === effectId)).toHaveLength(1);
      expect(await entryKinds(live, effectId)).not.toContain('AMBIGUOUS');
      expect(answeredAtClose, 'close() returned while a submit begun before it was still running').toBe(true);
      const { error } = (await submitting) as { error?: unknown };
      expect(error).toMatchObject({ code: 'not_available', message: expect.stringMatching(/closed/) });
    });
  }
});
