// Rule (redis/heartbeat.ts heldSince, beat-1.lua `kept`): a worker knows from when its heartbeat key has held its nonce
// WITHOUT A GAP. A beat that finds the key there keeps that instant; a beat that finds it gone (it lapsed while the
// process was frozen) writes it anew and the instant moves to that beat's answer: in the gap another worker may have
// read this one as dead and taken its claims over, so a claim proven before it must be asked again (send.ts). A beat
// used to write a lapsed key back without a word, and the key looked as alive as one that never lapsed.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createHeartbeat } from '../../src/redis/heartbeat.js';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';

const prefix = `t-hbheld-${randomBytes(4).toString('hex')}`;
const redis = new Redis(REDIS_URL);
afterAll(async () => {
  await removePrefixes([prefix]);
  redis.disconnect();
});

describe("a worker's heartbeat", () => {
  it('is held since its first beat, keeps that instant while beats find the key, and starts anew after a gap', async () => {
    const keys = createKeys(prefix);
    const heartbeat = createHeartbeat({ redis, keys, workerId: 'W', nonce: 'boot-1', intervalMs: 60_000, ttlMs: 10_000 });
    expect(heartbeat.heldSince()).toBe(Infinity);
    const beforeFirst = performance.now();
    await heartbeat.beat();
    const first = heartbeat.heldSince();
    expect(first).toBeGreaterThanOrEqual(beforeFirst);
    expect(first).toBeLessThanOrEqual(performance.now());

    await heartbeat.beat();
    expect(heartbeat.heldSince()).toBe(first);

    // The key lapses (as it does while the process is frozen past its TTL); the next beat writes it again.
    await redis.del(keys.heartbeat('W'));
    const beforeGap = performance.now();
    await heartbeat.beat();
    expect(heartbeat.heldSince()).toBeGreaterThanOrEqual(beforeGap);
    expect(await redis.get(keys.heartbeat('W'))).toBe('boot-1');

    // Stopped, it holds nothing.
    await heartbeat.stop({ clear: true });
    expect(heartbeat.heldSince()).toBe(Infinity);
  });

  it('is not held while another boot beats under its worker id', async () => {
    const keys = createKeys(prefix);
    const mine = createHeartbeat({ redis, keys, workerId: 'X', nonce: 'boot-a', intervalMs: 60_000, ttlMs: 10_000 });
    const other = createHeartbeat({ redis, keys, workerId: 'X', nonce: 'boot-b', intervalMs: 60_000, ttlMs: 10_000 });
    await mine.beat();
    await other.beat();
    await mine.beat();
    expect(mine.heldSince()).toBe(Infinity);
  });
});
