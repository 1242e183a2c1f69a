// The Lua scripts as a contract (STYLE habit 5) and the gate over both wire protocols ioredis speaks: every
// script answers one JSON string, so RESP2 and RESP3 connections must see the same outcomes.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import { effectsNewestFirst, watchedEffects } from '../../src/interlock.js';
import { SCRIPT_NAMES } from '../../src/redis/scripts.js';
import { kill, refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant, submitAndCrash, verifiedReceipt } from './gate-support.js';

const SCRIPT_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../src/redis/scripts');
const scripts = readdirSync(SCRIPT_DIR).filter((file) => file.endsWith('.lua') && file !== 'lib.lua').sort();

/** The leading comment block of a script: everything before its first line of code. */
function header(source: string): string {
  const lines = source.split('\n');
  const end = lines.findIndex((line) => !line.startsWith('--'));
  return lines.slice(0, end < 0 ? lines.length : end).join('\n');
}

describe('Lua scripts', () => {
  it('every script of src/redis/scripts is one the runner loads, and the runner loads no other', () => {
    expect(scripts.map((file) => file.replace(/\.lua$/, ''))).toEqual([...SCRIPT_NAMES].sort());
  });

  it.each(scripts)('%s is headed by a comment listing its KEYS, ARGV and Returns', (file) => {
    const top = header(readFileSync(join(SCRIPT_DIR, file), 'utf8'));
    expect(top).toMatch(/^-- KEYS\[1\] /m);
    expect(top).toMatch(/^-- ARGV/m);
    expect(top).toMatch(/^-- Returns /m);
  });

  it.each(scripts)('%s documents exactly the number of keys its name declares, and uses no other', (file) => {
    const source = readFileSync(join(SCRIPT_DIR, file), 'utf8');
    const declared = Number(/-(\d+)\.lua$/.exec(file)?.[1]);
    const indexes = (text: string) => [...text.matchAll(/KEYS\[(\d+)\]/g)].map((match) => Number(match[1]));
    const documented = indexes(header(source));
    expect(Math.max(...documented)).toBe(declared);
    expect(new Set(documented).size).toBe(declared);
    expect(Math.max(0, ...indexes(source))).toBeLessThanOrEqual(declared);
  });
});

/** The wire protocols a caller's own ioredis client may speak to the gate's Redis. */
type Wire = { protocol: 2 } | { protocol: 3 } | { protocol: 3; replyMapping: 'resp3' };

describe('the gate over RESP2 and RESP3', () => {
  let worlds: World[] = [];
  afterEach(async () => {
    await Promise.all(worlds.map((world) => world.close()));
    worlds = [];
  });

  /** A node whose only Redis connection speaks the given protocol; the world closes it. */
  async function nodeOn(world: World, workerId: string, wire: Wire): Promise<TestNode> {
    const redis = new Redis(world.config.redisUrl, { maxRetriesPerRequest: 1, ...wire });
    const node = await startNode({ config: world.config, target: world.target, key: world.key.key, workerId, redis });
    world.nodes.push(node);
    return node;
  }

  /** Commit, duplicate, stale refusal, over-cap refusal, crash and recovery, revoke: the outcomes in order. */
  async function scenario(wire: Wire): Promise<unknown[]> {
    const world = await gateWorld();
    worlds.push(world);
    const [a, b] = [await nodeOn(world, 'a', wire), await nodeOn(world, 'b', wire)];
    const { id } = await grant(a, { capCents: 6_000 });
    const seen: unknown[] = [];
    const committed = await a.gate.submit(refundProposal({ requestId: 'case-1', approval: id, amount: 2_000 }));
    seen.push(committed.outcome, (await b.gate.submit(refundProposal({ requestId: 'case-1', approval: id, amount: 2_000 }))).outcome);
    seen.push((await a.gate.submit(refundProposal({ requestId: 'case-1', approval: id, amount: 3_000 }))).outcome);
    seen.push((await a.gate.submit(refundProposal({ requestId: 'case-2', approval: id, amount: 4_500 }))).outcome);
    world.target.inject({ kind: 'crash-before-send' });
    const crashed = await submitAndCrash(a, refundProposal({ requestId: 'case-3', approval: id, amount: 1_000 }));
    await kill(a);
    seen.push((await b.approvals.describe(id)).snapshot);
    seen.push((await b.gate.recover()).settled.map((item) => item.outcome));
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
    seen.push((await b.gate.submit(refundProposal({ requestId: 'case-4', approval: id, amount: 500 }))).outcome);
    seen.push((await b.approvals.revoke(id, 'lee@risk')).mayStillLand);
    seen.push((await b.gate.submit(refundProposal({ requestId: 'case-5', approval: id, amount: 500 }))).outcome);
    for (const effectId of [committed.effectId, crashed]) seen.push((await verifiedReceipt(world, b, effectId)).outcome);
    seen.push(world.target.landings.map((landing) => landing.effect.amount));
    // What the reconciler lists (sorted sets read with their scores): the two committed, each once.
    await b.journal.flushIndex();
    seen.push((await watchedEffects(b.stores, (await b.journal.serverTime()) - 60_000)).effectIds.sort());
    // And the newest-first listing of every effect bound, read the same way.
    seen.push((await effectsNewestFirst(b.stores, null, 10)).map((item) => item.effectId).sort());
    return seen.map((item) => (item !== null && typeof item === 'object' && 'id' in item ? { ...item, id: 'ap', expiresAt: 0 } : item));
  }

  it('answers the same outcomes over RESP2, RESP3 and RESP3 with native map replies', async () => {
    const [committedId, crashedId] = ['case-1', 'case-3'].map((requestId) => effectIdFor({ requestId, effect: {} }));
    const resp3 = await scenario({ protocol: 3 });
    expect(resp3).toEqual([
      'COMMITTED',
      'DUPLICATE_IGNORED',
      'REFUSED:conflicting_payload',
      'REFUSED:over_cap',
      expect.objectContaining({ reservedCents: 3_000, uses: 2, revoked: false }),
      ['COMMITTED_BY_RETRY'],
      'REFUSED:stale_premise',
      [],
      'REFUSED:lease',
      'COMMITTED',
      'COMMITTED_BY_RETRY',
      [2_000, 1_000],
      [committedId, crashedId].sort(),
      ['case-1', 'case-2', 'case-3', 'case-4', 'case-5'].map((requestId) => effectIdFor({ requestId, effect: {} })).sort(),
    ]);
    expect(await scenario({ protocol: 2 })).toEqual(resp3);
    expect(await scenario({ protocol: 3, replyMapping: 'resp3' })).toEqual(resp3);
  });
});
