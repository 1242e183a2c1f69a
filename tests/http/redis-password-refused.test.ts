// Rule: Redis refusing the service's password (its requirepass changed under running connections: WRONGPASS for one
// that signs in with the old one, NOAUTH for one that gives none) is Redis being unusable for now, answered by the API
// as 503 redis_unavailable naming REDIS_URL's password, as the CLI and /readyz name it, never as the service's own
// fault (500 internal); and the password is in neither the answer nor the error's words.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asApiError } from '../../webhooks/api/errors.js';
import { isRedisOutage } from '../../src/interlock.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const OLD = 'ItkOldRedisPassword0001';
const NEW = 'ItkNewRedisPassword0002';
let server: PrivateRedis;
const clients: Redis[] = [];

beforeAll(async () => {
  server = await startPrivateRedis([]);
}, 30_000);
afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

/** A command's error on a client connected as `password` gives, once the server asks for NEW and dropped it. */
async function refusal(password: string | null): Promise<unknown> {
  const client = new Redis({ port: server.port, host: '127.0.0.1', ...(password === null ? {} : { password }), maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  client.on('error', () => undefined);
  clients.push(client);
  return client.get('anything').then(
    () => null,
    (error: unknown) => error,
  );
}

describe('Redis refusing the password', () => {
  it('is an outage answered 503 redis_unavailable naming REDIS_URL, for the old password and for none', async () => {
    const admin = new Redis({ port: server.port, host: '127.0.0.1' });
    clients.push(admin);
    await admin.config('SET', 'requirepass', NEW);
    for (const password of [OLD, null]) {
      const error = await refusal(password);
      expect(String(error), String(password)).toMatch(/WRONGPASS|NOAUTH/);
      expect(isRedisOutage(error)).toBe(true);
      const answer = asApiError(error);
      expect([answer.status, answer.code]).toEqual([503, 'redis_unavailable']);
      expect(answer.message).toContain('REDIS_URL');
      expect(answer.message).not.toContain(OLD);
      expect(answer.message).not.toContain(NEW);
    }
  });
});
