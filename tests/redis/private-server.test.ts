// The private redis-server `npm start` runs under the data directory (src/redis/private-server.ts). A serve killed
// before it could stop it leaves it running on the append-only file: the next start stops that one (only when the
// address the dead serve recorded says it serves this very directory: SHUTDOWN fsyncs first) and starts its own on
// the same file, keeping what was written. Without that address, or with one that serves something else, the start is
// refused as before and nothing else is touched: two servers on one append-only file would corrupt it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

const started: PrivateRedis[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const redis of started.splice(0)) await redis.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function read(url: string, key: string): Promise<string | null> {
  const client = new Redis(url);
  try {
    return await client.get(key);
  } finally {
    client.disconnect();
  }
}

describe('a private redis-server left running by a killed serve', () => {
  it('is stopped by the next start given its address, which starts its own on the same file and keeps what was written', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-'));
    dirs.push(dataDir);
    const left = await startPrivateRedis(dataDir);
    started.push(left);
    const client = new Redis(left.url);
    await client.set('journal', 'kept');
    client.disconnect();

    await expect(startPrivateRedis(dataDir)).rejects.toThrow(/Another redis-server/);
    // An address that serves another directory (the machine's Redis, say) is not stopped.
    const other = mkdtempSync(join(tmpdir(), 'interlock-private-other-'));
    dirs.push(other);
    const elsewhere = await startPrivateRedis(other);
    started.push(elsewhere);
    await expect(startPrivateRedis(dataDir, { orphanOf: elsewhere.url })).rejects.toThrow(/Another redis-server/);
    expect(await read(elsewhere.url, 'journal')).toBeNull();

    const next = await startPrivateRedis(dataDir, { orphanOf: left.url });
    started.push(next);
    expect(next.url).not.toBe(left.url);
    expect(await read(next.url, 'journal')).toBe('kept');
  });
});
