// Rule: REDIS_URL names its database one way, as a path (/N), checked at start. A query or fragment is refused by
// loadConfig naming REDIS_URL: ioredis reads `?key=value` as client options, so `?db=9` selected a database no check
// saw (a Redis that refuses it left the client on database 0, another deployment's data, and the start went on) and
// `?keyPrefix=` wrote every key under another prefix. The refusal names the query by kind only (it may hold a secret).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('REDIS_URL with a query or a fragment', () => {
  it.each([
    ['redis://127.0.0.1:6379?db=9'],
    ['redis://127.0.0.1:6379/2?db=9'],
    ['redis://127.0.0.1:6379?keyPrefix=zz:'],
    ['rediss://cache.example:6380/?tls=false'],
    ['redis://127.0.0.1:6379/1#db=9'],
  ])('%s is refused naming REDIS_URL and the way to name a database (/N)', (url) => {
    const message = refusal({ REDIS_URL: url }).message;
    expect(message).toContain('REDIS_URL must not carry ?options');
    expect(message).toContain('name the database as /N');
  });

  it('the refusal does not repeat the query, which may hold a password', () => {
    expect(refusal({ REDIS_URL: 'redis://127.0.0.1:6379?password=s3cr3t-in-query' }).message).not.toContain('s3cr3t-in-query');
  });

  it('a "#" written raw in a password (the rest reads as a fragment) is refused with how to write it, not quoted', () => {
    const message = refusal({ REDIS_URL: 'redis://app:Se@cr#etTail99@127.0.0.1:6379/2' }).message;
    expect(message).toContain('write a "?" or "#" in the password as %3F or %23');
    expect(message).not.toMatch(/Se@|cr#|etTail99/);
  });

  it('a database named by its path, or none, is still taken', () => {
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/9' }).redisUrl).toBe('redis://127.0.0.1:6379/9');
    expect(loadConfig({ REDIS_URL: 'redis://:pw@127.0.0.1:6379' }).redisUrl).toBe('redis://:pw@127.0.0.1:6379');
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/' }).redisUrl).toBe('redis://127.0.0.1:6379/');
  });
});
