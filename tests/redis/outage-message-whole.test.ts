// Rule: an error is a Redis outage by what the Redis clients themselves say, read whole. ioredis's "Connection is
// closed." (BullMQ's without the full stop) and "Stream isn't writeable and enableOfflineQueue options is false" are;
// an error from elsewhere whose message only mentions a closed connection is not: a facts job meeting it would wait
// for Redis without end instead of failing with its own reason, and the API would answer redis_unavailable.
import { describe, expect, it } from 'vitest';
import { isRedisOutage } from '../../src/interlock.js';

describe('isRedisOutage reads the Redis clients\' messages whole', () => {
  it.each(['Connection is closed.', 'Connection is closed', "Stream isn't writeable and enableOfflineQueue options is false"])('"%s" is an outage', (message) => {
    expect(isRedisOutage(new Error(message))).toBe(true);
  });

  it.each([
    'An error occurred with our connection to Stripe: Connection is closed.',
    'Messages API: upstream said Connection is closed by peer',
    "the decider's stream isn't writeable: Stream isn't writeable and enableOfflineQueue options is false (from the proxy)",
  ])('"%s" is not', (message) => {
    expect(isRedisOutage(new Error(message))).toBe(false);
  });
});
