// The worker of the send-watchdog test: a gate with the watchdog on, whose target freezes the event loop
// (a synchronous busy loop, like a runaway computation or a long GC pause) for STALL_MS during the send.
import { randomBytes } from 'node:crypto';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey } from './harness.js';

async function main(): Promise<void> {
  const stallMs = Number(process.env.STALL_MS ?? '0');
  const config = testConfig({ sendWatchdog: true, sendTimeoutMs: 300, settleMarginMs: 400, claimTtlMs: 2_000, keyPrefix: process.env.STALL_PREFIX ?? `stall${randomBytes(4).toString('hex')}` });
  const memory = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const target = {
    ...memory,
    async apply(...args: Parameters<typeof memory.apply>) {
      process.stdout.write('sending\n');
      const until = Date.now() + stallMs;
      while (Date.now() < until) {
        // A frozen event loop: no timer, no abort signal and no I/O can run until this ends.
      }
      return memory.apply(...args);
    },
  };
  memory.world.set('payment:pi_stall', { chargebacks: [], refunded_by_others: 0 });
  const node = await startNode({ config, target, key: testKey().key });
  const terms = approvalTerms({ scope: 'payment:pi_stall' });
  await node.approvals.grant(terms);
  const answer = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_stall' }));
  process.stdout.write(`answer ${answer.outcome}\n`);
  await node.close();
}

main().catch((error: unknown) => {
  process.stderr.write(`stall worker failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
