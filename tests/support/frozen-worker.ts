// The worker of tests/gate/frozen-before-reply.test.ts: one gate over a Redis-backed target (tier 1 or 2, FROZEN_TIER)
// that submits one refund and, the moment its dispatch step (bind-propose / propose) has been handed to its Redis
// connection, stops ITSELF with a real SIGSTOP (the whole process, the watchdog's thread included), as a long GC
// pause, a suspended container or a ^Z would. The test resumes it with SIGCONT.
// Prints "ready", then "stopping" right before the SIGSTOP, then "answer <outcome>".
import { createHash } from 'node:crypto';
import { readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis, type Command } from 'ioredis';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { approvalTerms, refundProposal, startNode, testConfig } from './harness.js';
import { createRedisTarget } from './redis-target.js';

const dir = fileURLToPath(new URL('../../src/redis/scripts', import.meta.url));
const lib = readFileSync(join(dir, 'lib.lua'), 'utf8');
const sha = (name: string) => createHash('sha1').update(`${lib}\n${readFileSync(join(dir, `${name}.lua`), 'utf8')}`).digest('hex');
const DISPATCH = new Set([sha('propose-5'), sha('bind-propose-10')]);

async function main(): Promise<void> {
  const env = process.env;
  const config = testConfig({
    sendWatchdog: env.FROZEN_WATCHDOG === '1',
    keyPrefix: env.FROZEN_PREFIX ?? '',
    sendTimeoutMs: 8_000,
    claimTtlMs: 20_000,
    settleMarginMs: 300,
    dedupMarginMs: 60_000,
    heartbeatMs: 200,
    heartbeatTtlMs: 800,
  });
  const targetRedis = new Redis(config.redisUrl);
  const target = createRedisTarget({ redis: targetRedis, prefix: `${config.keyPrefix}x`, tier: env.FROZEN_TIER === '1' ? 1 : 2, sendTimeoutMs: config.sendTimeoutMs });
  const gateRedis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  let armed = false;
  const original = gateRedis.sendCommand.bind(gateRedis);
  gateRedis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    const result = (original as (c: Command, ...r: unknown[]) => unknown)(command, ...rest);
    if (armed && command.name === 'evalsha' && DISPATCH.has(String(command.args[0]))) {
      armed = false;
      writeSync(1, 'stopping\n');
      process.kill(process.pid, 'SIGSTOP');
    }
    return result;
  }) as typeof gateRedis.sendCommand;
  const node = await startNode({ config, target, key: signingKeyFromPem(env.FROZEN_KEY ?? ''), workerId: 'frozen', redis: gateRedis });
  const terms = approvalTerms({ id: env.FROZEN_APPROVAL ?? 'ap_frozen', scope: 'payment:pi_frozen' });
  await node.approvals.grant(terms);
  writeSync(1, 'ready\n');
  armed = true;
  const answer = await node.gate.submit(refundProposal({ requestId: 'case-frozen', approval: terms.id, paymentIntent: 'pi_frozen' }));
  writeSync(1, `answer ${answer.outcome}\n`);
  await node.close().catch(() => undefined);
  targetRedis.disconnect();
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`frozen worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
