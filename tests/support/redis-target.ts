// A fake target whose landings live in Redis, so several OS processes share one "Stripe" and a test can count,
// across processes, how many times each effect really landed. Tier 1 dedupes on the effect id (as Stripe does on
// an Idempotency-Key); tiers 2 and 3 do not, so a second application of the same effect is counted, never hidden.
import { setTimeout as pause } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Tier } from '../../src/core/decisions.js';
import { canonicalJson, type Json, type JsonObject } from '../../src/core/json.js';
import type { Effect } from '../../src/core/effects.js';
import type { Target } from '../../src/core/target.js';

// One atomic step per landing, so a process killed mid-send either landed fully or not at all.
// KEYS[1] landings hash (effect id -> landing JSON)   KEYS[2] applications hash (effect id -> count)
// KEYS[3] sends hash (effect id -> attempts that reached the target)   KEYS[4] sequence counter
// ARGV[1] effect id   ARGV[2] effect JSON   ARGV[3] "1" to dedupe on the effect id
// Returns the landing JSON (the earlier one when deduped).
const LAND = `
redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
if ARGV[3] == '1' then
  local known = redis.call('HGET', KEYS[1], ARGV[1])
  if known then return known end
end
local seq = redis.call('INCR', KEYS[4])
local t = redis.call('TIME')
local landing = cjson.encode({ id = string.format('obj_%08d', seq), effectId = ARGV[1], effect = cjson.decode(ARGV[2]), at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) })
redis.call('HSETNX', KEYS[1], ARGV[1], landing)
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return landing
`;

export type RedisTargetOptions = {
  redis: Redis;
  /** Namespace of this target's keys; a test's own random prefix keeps parallel files apart. */
  prefix: string;
  tier: Tier;
  sendTimeoutMs?: number;
  dedupWindowMs?: number;
  name?: string;
  /** Runs before the landing is written; a test blocks here to kill a process between DISPATCHED and the send. */
  beforeApply?: (effectId: string) => Promise<void>;
  /** Upper bound of a random pause before and after the landing, in ms, so kills often hit a send in progress. */
  jitterMs?: number;
};

export type RedisTarget = Target & {
  /** Sets the facts premises are compared with, per subject; readPremises reads them back from Redis. */
  setFacts(subject: string, facts: JsonObject): Promise<void>;
  /** Landings that were not deduped, per effect id, counted by every process that shares the prefix. */
  applications(): Promise<Map<string, number>>;
  /** Sends that reached the target, deduped or not. */
  sends(): Promise<Map<string, number>>;
};

function counts(raw: Record<string, string>): Map<string, number> {
  return new Map(Object.entries(raw).map(([effectId, count]) => [effectId, Number(count)]));
}

function asObject(landingJson: string): JsonObject {
  const landing = JSON.parse(landingJson) as { id: string; effectId: string; effect: JsonObject };
  return { id: landing.id, object: 'refund', status: 'succeeded', amount: landing.effect.amount ?? null, effectId: landing.effectId };
}

export function createRedisTarget(options: RedisTargetOptions): RedisTarget {
  const { redis, prefix, tier } = options;
  const keys = {
    landings: `${prefix}:target:landings`,
    applications: `${prefix}:target:applications`,
    sends: `${prefix}:target:sends`,
    sequence: `${prefix}:target:sequence`,
    facts: (subject: string) => `${prefix}:target:facts:${subject}`,
  };
  const jitter = () => Math.floor(Math.random() * ((options.jitterMs ?? 0) + 1));
  const subjectOf = (effect: Effect) => (effect.kind === 'refund' ? `payment:${effect.paymentIntent}` : `customer:${effect.customer}`);

  return {
    name: options.name ?? `redis-tier-${tier}`,
    tier,
    queryable: tier !== 3,
    dedupWindowMs: options.dedupWindowMs ?? 24 * 60 * 60 * 1000,
    sendTimeoutMs: options.sendTimeoutMs ?? 2_000,
    kinds: ['refund', 'credit'],
    facts: null,

    async apply(effectId, effect, context) {
      if (options.beforeApply) await options.beforeApply(effectId);
      const wait = jitter();
      if (wait >= context.timeLeftMs()) throw new Error('the request timed out before it was written');
      await pause(wait);
      await context.beforeWrite();
      const landing = (await redis.eval(LAND, 4, keys.landings, keys.applications, keys.sends, keys.sequence, effectId, JSON.stringify(effect), tier === 1 ? '1' : '0')) as string;
      // The answer can still be lost on the way back: a kill here leaves a landing the sender never heard of.
      await pause(jitter());
      return asObject(landing);
    },

    async query(effectId) {
      if (tier === 3) throw new Error('a tier-3 target cannot be queried');
      const landing = await redis.hget(keys.landings, effectId);
      return landing === null ? null : asObject(landing);
    },

    async readFacts(_effectId, effect, names) {
      const stored = await redis.get(keys.facts(subjectOf(effect)));
      const facts = stored === null ? {} : (JSON.parse(stored) as JsonObject);
      const current: JsonObject = {};
      for (const name of names) current[name] = Object.hasOwn(facts, name) ? (facts[name] as Json) : null;
      return current;
    },

    async setFacts(subject, facts) {
      await redis.set(keys.facts(subject), canonicalJson(facts));
    },
    async applications() {
      return counts(await redis.hgetall(keys.applications));
    },
    async sends() {
      return counts(await redis.hgetall(keys.sends));
    },
  };
}
