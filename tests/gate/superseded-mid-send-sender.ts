// The child of superseded-mid-send.test.ts: a sender with the send watchdog on (heartbeat TTL 2 s, beating every
// 200 ms) and a tier-1 memory target (it has abortSends) whose send takes 6 s with the event loop free. Prints
// "ready <nonce>", "sending" once the send is in progress (the test then writes another process's nonce into its
// heartbeat key), the gate's answer with how many sends the target was asked to close, and "survived" 1 s later.
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey } from '../support/harness.js';

async function main(): Promise<void> {
  const config = testConfig({ sendWatchdog: true, keyPrefix: process.env.SUP_PREFIX ?? '', sendTimeoutMs: 20_000, claimTtlMs: 25_000, settleMarginMs: 300, dedupMarginMs: 60_000, heartbeatMs: 200, heartbeatTtlMs: 2_000 });
  const memory = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const target = {
    ...memory,
    async apply(...args: Parameters<typeof memory.apply>) {
      process.stdout.write('sending\n');
      await sleep(6_000);
      return memory.apply(...args);
    },
  };
  memory.world.set('payment:pi_sup', { chargebacks: [], refunded_by_others: 0 });
  const node = await startNode({ config, target, key: testKey().key, workerId: process.env.SUP_WORKER_ID ?? 'sup' });
  const terms = approvalTerms({ scope: 'payment:pi_sup' });
  await node.approvals.grant(terms);
  process.stdout.write(`ready ${node.heartbeat.nonce}\n`);
  const answered = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_sup' }));
  process.stdout.write(`answer ${answered.outcome} aborts ${memory.sendAborts.length}\n`);
  await sleep(1_000);
  process.stdout.write('survived\n');
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`superseded sender failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
