// `maxmemory-policy noeviction` means what the README says only under a memory limit: when the journals fill it,
// Redis answers writes with OOM (an outage the service waits out) while reads go on. With `maxmemory 0` (no limit)
// noeviction never applies: Redis grows until the kernel or the container kills it, and, replaying the same
// append-only file at restart, is killed again. The rules: the Redis the project ships (`npm start`'s private one,
// the compose service) has a limit, the compose container's memory limit lies above it, and a process warns at start
// when the service's Redis has none.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, loadConfig } from '../../src/config.js';
import { warnUnboundedMemory } from '../../src/redis/durability.js';
import { privateRedisArgs } from '../../src/redis/private-server.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const servers: PrivateRedis[] = [];
const clients: Redis[] = [];
afterAll(async () => {
  for (const client of clients) await client.quit();
  await Promise.all(servers.map((server) => server.stop()));
});

async function redisWith(args: readonly string[]): Promise<Redis> {
  const server = await startPrivateRedis(args);
  servers.push(server);
  const client = new Redis(server.url);
  clients.push(client);
  return client;
}

/** Bytes of a size as Redis and compose write it: 1gb, 512mb, 2g, 1536m, 1073741824. */
function bytes(size: string): number {
  const match = /^(\d+)([kmg]?)b?$/i.exec(size.trim());
  if (match === null) throw new Error(`not a size: ${size}`);
  return Number(match[1]) * 1024 ** ['', 'k', 'm', 'g'].indexOf((match[2] ?? '').toLowerCase());
}

function memoryLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const write = (line: string) => {
    const parsed = JSON.parse(line) as { level: number; msg: string };
    if (parsed.level === 40) warnings.push(parsed.msg);
  };
  const logger = pino({ level: 'debug' }, { write });
  return { logger, warnings };
}

describe('the Redis the project ships has a memory limit for noeviction to act on', () => {
  it("npm start's private Redis, at the configured INTERLOCK_REDIS_MAXMEMORY (default and set)", async () => {
    // The arguments that only place the server (bind, port, dir, pidfile, daemonize) are the test helper's own.
    const placing = new Set(['--bind', '--port', '--dir', '--pidfile', '--daemonize']);
    const settings = (maxmemory: string) => privateRedisArgs('/tmp/x', 1, maxmemory).filter((_, i, all) => !placing.has(all[i - 1] ?? '') && !placing.has(all[i] ?? ''));
    const byDefault = await redisWith(settings(loadConfig({}).redisMaxmemory));
    expect(await byDefault.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    const [, limit] = (await byDefault.config('GET', 'maxmemory')) as string[];
    expect(Number(limit), 'maxmemory is 0 (no limit): noeviction never refuses a write, Redis is killed instead').toBeGreaterThan(0);
    const chosen = await redisWith(settings(loadConfig({ INTERLOCK_REDIS_MAXMEMORY: '256mb' }).redisMaxmemory));
    expect(await chosen.config('GET', 'maxmemory')).toEqual(['maxmemory', String(256 * 1024 * 1024)]);
  });

  it('INTERLOCK_REDIS_MAXMEMORY takes a size Redis reads and refuses 0 (no limit) or anything else, naming it', () => {
    expect(loadConfig({ INTERLOCK_REDIS_MAXMEMORY: '2gb' }).redisMaxmemory).toBe('2gb');
    for (const value of ['0', '1.5gb', '-1', 'lots']) {
      expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value }), value).toThrow(/INTERLOCK_REDIS_MAXMEMORY/);
    }
  });

  it("the compose Redis: --maxmemory, and a container memory limit above it", () => {
    const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true }) as { services: { redis: { command: string[]; mem_limit?: string } } };
    const { command, mem_limit: memLimit } = compose.services.redis;
    expect(command[command.indexOf('--maxmemory-policy') + 1]).toBe('noeviction');
    const at = command.indexOf('--maxmemory');
    expect(at, 'docker-compose.yml sets no --maxmemory').toBeGreaterThan(0);
    const maxmemory = bytes(command[at + 1] ?? '');
    expect(maxmemory).toBeGreaterThan(0);
    expect(memLimit, 'docker-compose.yml sets no container memory limit for Redis').toBeDefined();
    expect(bytes(memLimit ?? '0')).toBeGreaterThan(maxmemory);
  });
});

describe('a process warns at start when its Redis has no memory limit', () => {
  it('warns once, naming the server and what to do, on maxmemory 0; says nothing under a limit', async () => {
    const unbounded = await redisWith(['--save', '']);
    const { logger, warnings } = memoryLogger();
    await warnUnboundedMemory(unbounded, logger);
    expect(warnings).toEqual([expect.stringMatching(/^Redis has no memory limit \(maxmemory 0 on 127\.0\.0\.1:\d+\).*noeviction.*Set maxmemory/)]);

    const bounded = await redisWith(['--save', '', '--maxmemory', '64mb']);
    const quiet = memoryLogger();
    await warnUnboundedMemory(bounded, quiet.logger);
    expect(quiet.warnings).toEqual([]);
  });
});
