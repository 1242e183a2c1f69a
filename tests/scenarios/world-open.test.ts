// A scenario's world that cannot open (its Redis does not answer, its settings are refused) leaves nothing behind:
// the sandbox it started has stopped listening and its data directory is gone. A run goes on to its other scenarios,
// so a world that failed to open used to keep a sandbox's port and a temp directory for the rest of the run.
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { openWorld } from '../../scenarios/world.js';
import { leftovers } from '../../scenarios/harness.js';

const servers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPServerWrap').length;
const dirsOf = (scenario: string) => readdirSync(tmpdir()).filter((name) => name.startsWith(`interlock-${scenario}-`));

describe('a world that cannot open', { timeout: 30_000 }, () => {
  it.each([
    ['its Redis does not answer', 'world_no_redis', 'redis://127.0.0.1:1'],
    ['its REDIS_URL is refused', 'world_bad_url', 'redis://127.0.0.1:6379/abc'],
  ])('stops its sandbox and removes its data directory when %s', async (_, scenario, redisUrl) => {
    const before = servers();
    const dirsBefore = dirsOf(scenario);
    await expect(openWorld({ scenario, delays: 'fast', redisUrl, unsafeDurability: true, testModeKey: null })).rejects.toThrow();
    // A closed server's handle is released a turn or two after close() answers.
    await expect.poll(servers, { timeout: 2_000 }).toBe(before);
    expect(dirsOf(scenario)).toEqual(dirsBefore);
    expect([...leftovers.dirs].filter((dir) => dir.includes(`interlock-${scenario}-`))).toEqual([]);
  });
});
