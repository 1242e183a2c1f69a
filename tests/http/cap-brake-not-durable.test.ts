// Rule: while Redis is not durable (AppDeps.intake refuses what would be recorded), lowering a subject's cap is taken,
// as revoking an approval is: a lower cap only takes authority away, and one Redis lost would leave things no worse
// than one refused. A cap on a subject with none, or one equal to the cap in force (a retry), is not above it and is
// taken too. A raise is refused, 503 redis_not_durable saying only a cap not above the one in force is taken now, and
// nothing is written. With Redis durable, caps go both ways as before.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireDurableIntake } from '../../src/interlock.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { bearer, startRig, TOKENS, type Rig } from './rig.js';

let redis: PrivateRedis;
let admin: Redis;
let rig: Rig;
let monitor: Awaited<ReturnType<typeof requireDurableIntake>>;

beforeAll(async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  admin = new Redis(redis.url);
  // The API's stores are made with the app, so the guard reaches the monitor made on them.
  let started: typeof monitor | null = null;
  rig = await startRig({ config: { redisUrl: redis.url, unsafeDurability: false, durabilityCheckMs: 60_000 }, deps: { intake: { assertDurable: () => started?.assertDurable() } } });
  started = await requireDurableIntake(rig.stores);
  monitor = started;
}, 60_000);
afterAll(async () => {
  await monitor?.stop();
  await rig?.close();
  await admin?.quit();
  await redis?.stop();
});

async function durable(on: boolean): Promise<void> {
  await admin.config('SET', 'appendonly', on ? 'yes' : 'no');
  await monitor.check();
}

const subject = () => `payment:pi_${randomBytes(6).toString('hex')}`;
const setCap = (on: string, cents: number) => request(rig.app).put(`/v1/caps/${on}`).set(bearer(TOKENS.approver)).send({ cap_cents: cents });
const limitOf = async (on: string) => (await rig.stores.approvals.subjectCap(on)).limitCents;

describe('a cap while Redis is not durable', () => {
  it('lowers the cap in force (200, in force after) and refuses a raise (503 redis_not_durable, nothing changed)', async () => {
    const capped = subject();
    await durable(true);
    expect((await setCap(capped, 3_000)).status).toBe(200);

    await durable(false);
    try {
      const lowered = await setCap(capped, 1_000);
      expect({ status: lowered.status, cap: lowered.body.cap_cents }).toEqual({ status: 200, cap: 1_000 });
      expect(await limitOf(capped)).toBe(1_000);

      const stopped = await setCap(capped, 0);
      expect({ status: stopped.status, cap: stopped.body.cap_cents }).toEqual({ status: 200, cap: 0 });

      const raised = await setCap(capped, 5_000);
      expect(raised.status).toBe(503);
      expect(raised.body.error.code).toBe('redis_not_durable');
      expect(raised.body.error.message).toContain('appendonly');
      expect(raised.body.error.message).toContain(`only when it is not above the one in force: ${capped} is capped at 0, and 5000 is above it, so nothing was changed`);
      expect(await limitOf(capped)).toBe(0);
    } finally {
      await durable(true);
    }
  });

  it('takes a first cap on a subject with none, and the same cap again (a retry), but other writes stay refused', async () => {
    const capped = subject();
    await durable(false);
    try {
      expect((await setCap(capped, 2_000)).status).toBe(200);
      expect((await setCap(capped, 2_000)).status).toBe(200);
      expect(await limitOf(capped)).toBe(2_000);
      const grant = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: `ap_${randomBytes(5).toString('hex')}`, approver: 'alex', cap_cents: 500, scope: capped });
      expect({ status: grant.status, code: grant.body.error?.code }).toEqual({ status: 503, code: 'redis_not_durable' });
    } finally {
      await durable(true);
    }
  });

  it('with Redis durable, raises and lowers as before', async () => {
    const capped = subject();
    await durable(true);
    expect((await setCap(capped, 1_000)).status).toBe(200);
    expect((await setCap(capped, 4_000)).body.cap_cents).toBe(4_000);
    expect((await setCap(capped, 500)).body.cap_cents).toBe(500);
    expect(await limitOf(capped)).toBe(500);
  });
});
