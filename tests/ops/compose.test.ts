// The compose file cannot be run here (no Docker engine), so this reads it as YAML and runs the same
// redis-server command it runs, then checks the result is a Redis the gate accepts as durable.
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { inspectDurability } from '../../src/redis/durability.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

type Compose = { services: Record<string, { image?: string; command?: string[]; healthcheck?: { test?: string[] } }> };

const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8')) as Compose;

describe('docker-compose.yml', () => {
  let redis: PrivateRedis | null = null;
  afterAll(async () => {
    await redis?.stop();
  });

  it('runs Redis 7 with a healthcheck', () => {
    const service = compose.services.redis;
    expect(service?.image).toMatch(/^redis:7/);
    expect(service?.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
  });

  it('runs a Redis the gate accepts as durable: fsynced append-only file and no eviction', async () => {
    const command = compose.services.redis?.command ?? [];
    expect(command[0]).toBe('redis-server');
    redis = await startPrivateRedis(command.slice(1));
    const client = new Redis(redis.url);
    try {
      const durability = await inspectDurability(client, false);
      expect(durability).toMatchObject({ durable: true, appendonly: 'yes', appendfsync: 'always' });
      expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    } finally {
      await client.quit();
    }
  });
});
