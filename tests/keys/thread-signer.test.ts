// The signing thread (INTERLOCK_SIGNING_THREAD=1, src/keys/signer.ts): what it signs is what signing on the main
// thread signs (Ed25519 is deterministic), requests made while it is busy go together, a closed thread refuses
// instead of hanging, a thread that died is replaced, and a gate that seals through it writes receipts that verify.
import type * as WorkerThreads from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseSeal } from '../../src/core/seal.js';
import { signText } from '../../src/core/signing.js';
import { verify } from '../../src/core/verify.js';
import { createThreadSigner } from '../../src/keys/signer.js';
import { createWorld, refundsSubmittedTogether, testKey, type World } from '../support/harness.js';

// Every signing thread started, so a test can end one as a crash would (an out-of-memory, an abort in the thread).
const threads = vi.hoisted(() => [] as { terminate(): Promise<number> }[]);
vi.mock('node:worker_threads', async (original) => {
  const actual = await original<typeof WorkerThreads>();
  class TrackedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      threads.push(this);
    }
  }
  return { ...actual, Worker: TrackedWorker };
});

describe('the signing thread', () => {
  it('signs exactly what the main thread would, for many requests at once', async () => {
    const { key } = testKey();
    const signer = createThreadSigner(key);
    try {
      const texts = Array.from({ length: 200 }, (_, index) => `interlock.seal/v1 entries 1 ${index.toString(16).padStart(64, '0')}`);
      const signatures = await Promise.all(texts.map((text) => signer.sign(text)));
      expect(signatures).toEqual(texts.map((text) => signText(text, key)));
    } finally {
      await signer.close();
    }
  });

  it('answers every request made before it was closed, signed or refused, none left waiting', async () => {
    const signer = createThreadSigner(testKey().key);
    // The first goes to the thread at once; the rest wait for it to come back, which a close makes never happen.
    const pending = Promise.allSettled(Array.from({ length: 50 }, (_, index) => signer.sign(`text ${index}`)));
    await signer.close();
    const settled = await Promise.race([pending, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 2_000))]);
    expect(settled).not.toBe('hung');
    expect((settled as PromiseSettledResult<string>[]).filter((result) => result.status === 'rejected').length).toBeGreaterThan(0);
  });

  it('replaces a thread that died, so a worker whose heartbeat lives on does not refuse every seal until restarted', async () => {
    const { key } = testKey();
    const signer = createThreadSigner(key);
    try {
      expect(await signer.sign('before')).toBe(signText('before', key));
      const dead = threads.at(-1);
      await dead?.terminate();
      const after = await Promise.race([signer.sign('after').catch((error: unknown) => `refused: ${String(error)}`), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 5_000))]);
      expect(after).toBe(signText('after', key));
      expect(threads.at(-1)).not.toBe(dead);
    } finally {
      await signer.close();
    }
  });

  it('refuses to sign once closed, with a reason, instead of leaving the caller waiting', async () => {
    const signer = createThreadSigner(testKey().key);
    await signer.close();
    await expect(signer.sign('anything')).rejects.toThrow('the signing thread was closed');
  });
});

describe('a gate that seals on the signing thread', () => {
  let world: World;
  beforeAll(async () => {
    world = await createWorld({ config: { signingThread: true } });
  });
  afterAll(async () => {
    await world?.close();
  });

  it('commits effects submitted together, their batches sealed in shared trees, and every receipt verifies', async () => {
    const node = await world.node();
    const answers = await refundsSubmittedTogether(world, node, 10, 'thread');
    expect(answers.map((answer) => answer.outcome)).toEqual(Array(10).fill('COMMITTED'));
    const receipts = await node.journal.receipts(answers.map((answer) => answer.effectId));
    const sizes: number[] = [];
    for (const receipt of receipts) {
      if (!receipt) throw new Error('a committed effect has no receipt');
      for (const entry of receipt.entries) if (entry.sig !== null) sizes.push(parseSeal(entry.sig)?.size ?? 0);
      const result = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
      expect(result.problems).toEqual([]);
      expect(result).toMatchObject({ valid: true, signed: true, outcome: 'COMMITTED' });
    }
    expect(Math.max(...sizes)).toBeGreaterThan(1);
  });

  it('goes on committing after its signing thread died, with receipts that verify', async () => {
    const node = await world.node();
    expect((await refundsSubmittedTogether(world, node, 1, 'before'))[0]?.outcome).toBe('COMMITTED');
    await threads.at(-1)?.terminate();
    const answers = await refundsSubmittedTogether(world, node, 3, 'after');
    expect(answers.map((answer) => answer.outcome)).toEqual(Array(3).fill('COMMITTED'));
    for (const receipt of await node.journal.receipts(answers.map((answer) => answer.effectId))) {
      expect(verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys })).toMatchObject({ valid: true, problems: [] });
    }
  });
});
