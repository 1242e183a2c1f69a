// Rule: through SIGKILLs of `interlock serve` processes and of the redis-server they share (restarted from its
// append-only file) and Stripe's faults, the chaos run's contract holds: every request answered, no effect moved money
// twice at Stripe, every acknowledged effect settled (AMBIGUOUS only with an inbox item), every receipt verifies and its
// final money agrees with Stripe, and no cap or approval is exceeded.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../scenarios/chaos.js';
import { createProgressBar } from '../../scenarios/progress.js';

/** The progress lines, kept for a failure's message instead of the test's stderr. */
function capture(): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream: stream as unknown as NodeJS.WriteStream, text: () => text };
}

describe('the chaos run', () => {
  it('holds the contract through a serve SIGKILL and a redis-server SIGKILL and restart from its append-only file', async () => {
    const progress = capture();
    // About 27 requests over two serves, 15 s of faults: the first fault a serve's SIGKILL, the Redis's halfway.
    const result = await runChaos({ seed: 4242, scale: 0.08, durationMs: 15_000, delays: 'fast', serves: 2, redisKills: 1, settleMs: 45_000, factsMs: 20_000, bar: createProgressBar(progress.stream, 'requests') });
    const notes = progress.text().split('\n').filter((line) => line.startsWith('chaos: '));
    expect(result.faults['serve SIGKILL'], notes.join('\n')).toBeGreaterThanOrEqual(1);
    expect(result.faults['redis SIGKILL'], notes.join('\n')).toBe(1);
    expect(notes).toContain('chaos: redis-server restarted from its append-only file');
    expect(result.requests).toBeGreaterThanOrEqual(24);
    expect(result.effects).toBeGreaterThanOrEqual(15);
    expect(Object.values(result.outcomes).reduce((sum, count) => sum + count, 0)).toBe(result.effects);
    expect(result.findings, notes.join('\n')).toEqual([]);
    expect(progress.text()).toMatch(new RegExp(`${result.requests}/${result.requests} requests`));
  }, 150_000);
});
