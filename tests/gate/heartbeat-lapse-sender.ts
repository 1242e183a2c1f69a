// The child of send-watchdog-heartbeat-lapse.test.ts: a sender with the send watchdog on, reaching Redis through
// CUT_REDIS_URL (a proxy the test can cut), heartbeat TTL 2 s, beating every 200 ms, send deadline 20 s. As CUT_CASE
// says:
// - mid-send: submits a refund whose request lands at once but whose answer takes 15 s (a slow Stripe; the event loop
//   free all along); prints "sending" once it landed, the gate's answer, then, Redis being back (the test heals it),
//   recovers until the effect is settled and prints "recovered <outcomes>" and "landings <n>".
// - mid-send-frozen: the same, but its event loop freezes for 15 s once the request left (prints "frozen"), and
//   "survived" after.
// - clean-stop: the same with a request that takes 2.5 s (longer than the TTL, Redis reachable all along), and the
//   sender closed while it is on the wire; prints the answer, "closed", then lives on past every bound.
// - idle: sends nothing; prints "survived" 3 s after "ready" (the test cuts Redis in between).
// - stale-beat: its beats stop reaching Redis (the timer stopped, as when every beat failed while Redis was away), the
//   bound the watchdog was last told passes, then Redis is there again and a refund is submitted (a request of 300 ms);
//   prints the answer, then "survived" 2 s later.
// It prints "ready <nonce>" once its heartbeat beats.
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, sleep, startNode, testConfig, testKey } from '../support/harness.js';

const SEND_MS = { 'mid-send': 15_000, 'mid-send-frozen': 15_000, 'clean-stop': 2_500, idle: 0, 'stale-beat': 300 } as const;

async function main(): Promise<void> {
  const which = process.env.CUT_CASE;
  if (which !== 'mid-send' && which !== 'mid-send-frozen' && which !== 'clean-stop' && which !== 'idle' && which !== 'stale-beat') throw new Error(`unknown CUT_CASE ${String(which)}`);
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
      if (which === 'mid-send' || which === 'mid-send-frozen') {
        // The request reaches the target and lands; its answer is slow.
        const landed = await memory.apply(...args);
        process.stdout.write('sending\n');
        leftAt();
        await sleep(SEND_MS[which]);
        process.stdout.write('answered late\n');
        return landed;
      }
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
  if (which === 'mid-send-frozen') {
    await left;
    process.stdout.write('frozen\n');
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      // No timer, abort or I/O of this thread runs until this ends.
    }
    process.stdout.write('survived\n');
    process.exit(0);
  }
  if (which === 'mid-send') {
    const answered = await answer;
    process.stdout.write(`answer ${answered.outcome}\n`);
    // Redis comes back (the test heals it once the key lapsed); recovery settles the effect.
    const outcomes: string[] = [];
    while (outcomes.length === 0) {
      await sleep(200);
      const report = await node.gate.recover().catch(() => null);
      outcomes.push(...(report?.settled.filter((one) => one.effectId === answered.effectId).map((one) => one.outcome) ?? []));
    }
    process.stdout.write(`recovered ${outcomes.join(',')}\nlandings ${memory.landings.length}\nsend aborts ${memory.sendAborts.length}\n`);
    process.exit(0);
  }
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
