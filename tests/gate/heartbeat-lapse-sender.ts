// The child of send-watchdog-heartbeat-lapse.test.ts: a sender with the send watchdog on, reaching Redis through
// CUT_REDIS_URL (a proxy the test can cut), heartbeat TTL 2 s, beating every 200 ms, send deadline 20 s. As CUT_CASE
// says:
// - mid-send: submits a refund whose request takes 15 s to land (the event loop free all along); prints "sending"
//   when it leaves, "landed" if it ever lands.
// - clean-stop: the same with a request that takes 2.5 s (longer than the TTL, Redis reachable all along), and the
//   sender closed while it is on the wire; prints the answer, "closed", then lives on past every bound.
// - idle: sends nothing; prints "survived" 3 s after "ready" (the test cuts Redis in between).
// - stale-beat: its beats stop reaching Redis (the timer stopped, as when every beat failed while Redis was away), the
//   bound the watchdog was last told passes, then Redis is there again and a refund is submitted (a request of 300 ms);
//   prints the answer, then "survived" 2 s later.
// It prints "ready <nonce>" once its heartbeat beats.
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey } from '../support/harness.js';

const SEND_MS = { 'mid-send': 15_000, 'clean-stop': 2_500, idle: 0, 'stale-beat': 300 } as const;

async function main(): Promise<void> {
  const which = process.env.CUT_CASE;
  if (which !== 'mid-send' && which !== 'clean-stop' && which !== 'idle' && which !== 'stale-beat') throw new Error(`unknown CUT_CASE ${String(which)}`);
  const config = testConfig({
    sendWatchdog: true,
    redisUrl: process.env.CUT_REDIS_URL ?? '',
    keyPrefix: process.env.CUT_PREFIX ?? '',
    sendTimeoutMs: 20_000,
    claimTtlMs: 25_000,
    settleMarginMs: 300,
    dedupMarginMs: 60_000,
    heartbeatMs: 200,
    heartbeatTtlMs: 2_000,
  });
  const memory = createMemoryTarget({ tier: 2, sendTimeoutMs: config.sendTimeoutMs });
  let leftAt: () => void = () => undefined;
  const left = new Promise<void>((resolve) => (leftAt = resolve));
  const target = {
    ...memory,
    async apply(...args: Parameters<typeof memory.apply>) {
      process.stdout.write('sending\n');
      leftAt();
      await sleep(SEND_MS[which]);
      process.stdout.write('landed\n');
      return memory.apply(...args);
    },
  };
  memory.world.set('payment:pi_cut', { chargebacks: [], refunded_by_others: 0 });
  const node = await startNode({ config, target, key: testKey().key, workerId: process.env.CUT_WORKER_ID ?? 'cut' });
  const terms = approvalTerms({ scope: 'payment:pi_cut' });
  await node.approvals.grant(terms);
  process.stdout.write(`ready ${node.heartbeat.nonce}\n`);
  if (which === 'idle') {
    await sleep(3_000);
    process.stdout.write('survived\n');
    process.exit(0);
  }
  if (which === 'stale-beat') {
    await node.heartbeat.stop();
    await sleep(config.heartbeatTtlMs + 200);
    const answered = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_cut' }));
    process.stdout.write(`answer ${answered.outcome}\n`);
    await sleep(2_000);
    process.stdout.write('survived\n');
    process.exit(0);
  }
  const answer = node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_cut' }));
  if (which === 'clean-stop') {
    await left;
    const [answered] = await Promise.all([answer, node.close()]);
    process.stdout.write(`answer ${answered.outcome}\nclosed\n`);
    await sleep(3_000);
    process.stdout.write('survived\n');
    process.exit(0);
  }
  await answer;
}

main().catch((error: unknown) => {
  process.stderr.write(`heartbeat-lapse sender failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
