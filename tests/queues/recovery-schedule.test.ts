// Rule: a recovery pass's wake-up is never lost. A pass runs at the instant the previous one asked for, and when
// that instant falls in the 100 ms slot the asking pass is itself running in (two effects whose settle margins end
// a few milliseconds apart), the next pass is still scheduled and runs, instead of waiting for the safety timer.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startRecovery } from '../../queues/recovery.js';
import { openStores, type RecoveryReport, type Sender } from '../../src/interlock.js';
import { testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `rs${randomBytes(6).toString('hex')}` });
afterAll(async () => {
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

describe('recovery passes on their schedule', () => {
  it('a pass that asks for an instant inside its own slot gets another pass at once, and passes never run before the instant they were asked for', { timeout: 30_000 }, async () => {
    const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
    const passes: { at: number; askedFor: number | null }[] = [];
    let askedFor: number | null = null;
    // Scripted reports: the start pass asks for a wake-up just after a slot begins, some 300 ms on; that pass asks
    // for the end of the same slot (an instant inside the slot it runs in); the third asks for nothing more.
    const gate = {
      async recover(): Promise<RecoveryReport> {
        const now = await stores.journal.serverTime();
        passes.push({ at: now, askedFor });
        const nextAt = passes.length === 1 ? Math.ceil((now + 300) / 100) * 100 + 1 : passes.length === 2 ? Math.ceil((askedFor ?? now) / 100) * 100 : null;
        askedFor = nextAt;
        return { settled: [], waiting: nextAt === null ? [] : [{ effectId: 'e'.repeat(64), until: nextAt, reason: 'settle margin' }], skipped: [], unresolved: [], nextAt };
      },
    };
    const recovery = startRecovery(stores, { gate } as unknown as Sender, { safetyIntervalMs: 3_600_000 });
    try {
      const giveUp = Date.now() + 10_000;
      while (passes.length < 3 && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(passes.length, 'the third pass never ran: its wake-up was dropped').toBe(3);
      for (const pass of passes.slice(1)) expect(pass.at).toBeGreaterThanOrEqual(pass.askedFor ?? 0);
      // And promptly: within a couple of slots of the instant asked for, not on the safety timer.
      const third = passes[2];
      expect((third?.at ?? 0) - (third?.askedFor ?? 0)).toBeLessThan(1_000);
    } finally {
      await recovery.close();
      await stores.close();
    }
  });
});
