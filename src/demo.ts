// The offline demo behind `npm start` (until the service lands): two gated refunds through the gate on Redis
// against an in-memory tier-1 target. Worker A crashes mid-send each time; worker B recovers. The first refund's
// facts still hold, so B resends under the same key and the target dedupes it; during the second outage the
// charge is charged back, so B refuses. Both receipts are verified with the public key.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { interlockCommand, shellWord } from './cli/command-lines.js';
import { serviceRedisAdvice } from './cli/stores.js';
import { loadConfig } from './config.js';
import { shownUrl } from './core/redact.js';
import { ProcessCrash } from './core/target.js';
import { publicKeySet } from './core/signing.js';
import { verify } from './core/verify.js';
import { createInterlock, type Interlock } from './interlock.js';
import { loadOrCreateSigningKey, publicKeyPem } from './keys/key-store.js';
import { createKeys } from './redis/keys.js';
import { createLogger } from './log.js';
import { inspectDurability } from './redis/durability.js';
import { createMemoryTarget } from './targets/memory-target.js';
import { recoverUntilSettled } from './gate/recovery-loop.js';

function print(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export async function runDemo(): Promise<void> {
  const base = loadConfig();
  // Errors only unless INTERLOCK_LOG_LEVEL is set (empty is unset, as loadConfig reads it).
  const logger = createLogger((process.env.INTERLOCK_LOG_LEVEL ?? '') === '' ? 'error' : base.logLevel);
  const redis = new Redis(base.redisUrl, { maxRetriesPerRequest: 2, retryStrategy: (times) => (times > 3 ? null : 300) });
  redis.on('error', () => undefined);
  try {
    await redis.ping();
  } catch {
    // REDIS_URL taken from a stopped `npm start`'s service.json names its private Redis (its own port and password),
    // which only starting that service again brings back: a redis-server of one's own would not be it.
    const advice = serviceRedisAdvice('to run the demo on its Redis') ?? 'Start one (`redis-server`, or `docker compose --env-file compose.sandbox.env up -d redis`) or set REDIS_URL.';
    process.stderr.write(`Cannot reach Redis at ${shownUrl(base.redisUrl)}. ${advice}\n`);
    process.exitCode = 2;
    redis.disconnect();
    return;
  }
  const durability = await inspectDurability(redis, true);
  if (!durability.durable) {
    print(`Note: this Redis is not durable (${durability.problems.join('; ')}). The demo moves no real money, so it runs anyway;`);
    print('      workers that talk to Stripe refuse such a Redis unless INTERLOCK_UNSAFE_DURABILITY=1.');
  }
  // Short timings so the demo finishes in seconds; the production defaults are in the README. Its own key prefix: the
  // same Redis may hold a service's journal, whose effects list, inbox and alerts must not show the demo's refunds.
  const keyPrefix = `${base.keyPrefix}-demo`;
  const config = { ...base, keyPrefix, unsafeDurability: true, claimTtlMs: 5_000, settleMarginMs: 500, sendTimeoutMs: 2_000, heartbeatMs: 250, heartbeatTtlMs: 1_000 };
  const { key, path, created, exposure } = loadOrCreateSigningKey(config);
  print(`Signing key ${key.kid} (${created ? 'created' : 'loaded'} at ${path})`);
  if (exposure !== null) print(`Note: ${exposure.message}`);

  // The demo's journal is a throwaway deployment of its own: a demo run from another data directory (another key) on
  // the same Redis takes it over, rather than being refused as another deployment's process.
  await redis.del(createKeys(keyPrefix).signingKids, createKeys(keyPrefix).signingKidNewest);

  const run = randomBytes(3).toString('hex');
  const payment = `pi_demo_${run}`;
  const subject = `payment:${payment}`;
  const target = createMemoryTarget({ tier: 1, name: 'in-memory refunds (tier 1)', sendTimeoutMs: config.sendTimeoutMs });
  target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
  const nodes: Interlock[] = [];
  const start = async (name: string) => {
    const node = await createInterlock({ config: { ...config, workerId: `demo-${name}-${run}` }, target, signingKey: key, logger, redis });
    nodes.push(node);
    return node;
  };

  try {
    const a = await start('a');
    const approval = `ap_demo_${run}`;
    await a.approvals.grant({ id: approval, approver: 'dana@support', capCents: 5_000, expiresAt: (await a.journal.serverTime()) + 3_600_000, maxUses: 3, scope: subject });
    print(`Approval ${approval}: dana@support, up to $50.00 on ${payment}, 3 uses`);
    const proposal = (requestId: string, amount: number) => ({
      requestId,
      agent: 'support-agent',
      approval,
      premises: { chargebacks: [], refunded_by_others: 0 },
      effect: { kind: 'refund', paymentIntent: payment, amount, reason: 'requested_by_customer' },
      decision: { model: 'demo', text: `Goodwill refund of $${(amount / 100).toFixed(2)} for case ${requestId}.` },
    });

    print('\n1. A worker crashes right after the send; the facts still hold during the outage.');
    target.inject({ kind: 'crash-after-send' });
    const first = proposal(`case-${run}-1`, 2_000);
    await a.gate.submit(first).catch((error: unknown) => {
      if (!(error instanceof ProcessCrash)) throw error;
      print(`   worker A: ${error.message}`);
    });
    await a.heartbeat.stop({ clear: true });
    const b = await start('b');
    const firstReport = await b.gate.recover({ only: [b.gate.effectIdOf(first)] });
    print(`   worker B recovers: ${firstReport.settled.map((item) => `${item.outcome} (${item.sentence})`).join(', ')}`);
    print(`   landings at the target for this refund: ${target.landedCount(b.gate.effectIdOf(first))}`);
    print(`   a duplicate submit: ${(await b.gate.submit(first)).outcome}`);

    print('\n2. A worker crashes right before the send; the bank charges the payment back during the outage.');
    target.inject({ kind: 'crash-before-send' });
    const second = proposal(`case-${run}-2`, 1_500);
    await b.gate.submit(second).catch((error: unknown) => {
      if (!(error instanceof ProcessCrash)) throw error;
      print(`   worker B: ${error.message}`);
    });
    await b.heartbeat.stop({ clear: true });
    target.world.set(subject, { chargebacks: ['du_demo'], refunded_by_others: 0 });
    const c = await start('c');
    for (const report of await recoverUntilSettled(c.gate, c.journal, { only: [c.gate.effectIdOf(second)] })) {
      for (const item of report.waiting) print(`   worker C finds no refund yet and waits for that instant, since ${item.reason}`);
      for (const item of report.settled) print(`   worker C recovers: ${item.outcome} (${item.sentence})`);
    }
    print(`   landings at the target for this refund: ${target.landedCount(c.gate.effectIdOf(second))}`);

    const keys = publicKeySet([publicKeyPem(key)]);
    for (const [label, request] of [['first', first], ['second', second]] as const) {
      const receipt = await c.journal.receipt(c.gate.effectIdOf(request));
      const result = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: keys });
      print(`\nReceipt of the ${label} refund: ${receipt?.entries.map((entry) => entry.kind).join(' → ')}`);
      print(JSON.stringify({
        valid: result.valid,
        signed: result.signed,
        outcome: result.outcome,
        happened: result.happened,
        happenedOnce: result.happenedOnce,
        authorizedWhenFired: result.authorizedWhenFired,
        assumptionsHeld: result.assumptionsHeld,
        refused: result.refused,
        evidence: result.evidence,
        recheckedAtRecovery: result.recheckedAtRecovery && { approvalLive: result.recheckedAtRecovery.approvalLive, violations: result.recheckedAtRecovery.violations },
        approvedBy: result.approvedBy,
        finalMoney: result.finalMoney.status,
        problems: result.problems,
      }, null, 2));
    }
    print(`\nThe demo keeps its journal apart from a service's (key prefix ${keyPrefix}). Export a receipt with \`INTERLOCK_KEY_PREFIX=${shellWord(keyPrefix)} ${interlockCommand(base.dataDir)} receipt export ${c.gate.effectIdOf(first)}\` and check it with \`npx interlock receipt verify FILE --public-key KEY.pem\`.`);
  } finally {
    for (const node of nodes) await node.close();
    await redis.quit();
  }
}
