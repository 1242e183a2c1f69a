// Rule: every setting is read without the whitespace around it (an env file's `INTERLOCK_HOST=127.0.0.1 `, a value from
// a mounted file ending in a line break), as the numbers, paths and Stripe keys always were: a host, a flag, a level,
// a currency, an address, the API limits and the decider's model alike. Only a blank value is unset. A value still
// refused is quoted in the refusal as written (or, when it may be a secret, by its length), so the operator sees what
// to correct instead of a list of the values taken.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { loadDeciderConfig } from '../src/decider/config.js';
import { loadApiLimits } from '../webhooks/api/limits.js';

function refusal(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the value was taken');
}

describe('a setting with whitespace around it is the value without it', () => {
  it.each([
    ['INTERLOCK_HOST', '127.0.0.1 ', 'host', '127.0.0.1'],
    ['INTERLOCK_HOST', 'localhost\n', 'host', 'localhost'],
    ['INTERLOCK_SEND_WATCHDOG', '0 ', 'sendWatchdog', false],
    ['INTERLOCK_UNSAFE_DURABILITY', '1\n', 'unsafeDurability', true],
    ['INTERLOCK_REDIS_CLUSTER', ' yes', 'redisCluster', true],
    ['INTERLOCK_LOG_LEVEL', 'warn ', 'logLevel', 'warn'],
    ['INTERLOCK_CRASH_AT', 'after_send\r\n', 'crashAt', 'after_send'],
    ['INTERLOCK_CREDIT_CURRENCY', 'eur\n', 'creditCurrency', 'eur'],
    ['INTERLOCK_METRICS_ADDR', '127.0.0.1:9464 ', 'metricsAddr', { host: '127.0.0.1', port: 9464 }],
    ['INTERLOCK_KEY_PREFIX', 'shop:eu ', 'keyPrefix', 'shop:eu'],
    ['INTERLOCK_WORKER_ID', '\tworker-1', 'workerId', 'worker-1'],
    ['INTERLOCK_REDIS_MAXMEMORY', '512mb\n', 'redisMaxmemory', '512mb'],
  ] as const)('%s=%j', (variable, value, field, expected) => {
    expect(loadConfig({ [variable]: value })[field]).toEqual(expected);
  });

  it('INTERLOCK_CODE_CACHE="0 " is taken, as the launcher takes it', () => {
    expect(() => loadConfig({ INTERLOCK_CODE_CACHE: '0 ' })).not.toThrow();
  });

  it('the API limits read "600 " as 600, as INTERLOCK_CONCURRENCY reads "16 "', () => {
    expect(loadConfig({ INTERLOCK_CONCURRENCY: '16 ' }).concurrency).toBe(16);
    expect(loadApiLimits({ INTERLOCK_API_RATE_LIMIT: '600 ', INTERLOCK_API_BODY_LIMIT: '\t4096\n' })).toEqual({ ratePerMinute: 600, bodyBytes: 4096 });
  });

  it("the decider's model id is read the same way", () => {
    expect(loadDeciderConfig({ INTERLOCK_MODEL: 'claude-haiku-4-5-20251001\n' }).model).toBe('claude-haiku-4-5-20251001');
  });

  it('a flag, a level or a limit of only whitespace is still unset', () => {
    expect(loadConfig({ INTERLOCK_SEND_WATCHDOG: ' ', INTERLOCK_LOG_LEVEL: '\n', INTERLOCK_HOST: '\t' })).toEqual(loadConfig({}));
    expect(loadApiLimits({ INTERLOCK_API_RATE_LIMIT: ' \n' })).toEqual({});
    expect(loadDeciderConfig({ INTERLOCK_MODEL: '  ' })).toEqual(loadDeciderConfig({}));
  });
});

describe('a refused value is quoted as written', () => {
  it('a flag names what was given and the spellings it takes', () => {
    expect(refusal(() => loadConfig({ INTERLOCK_SEND_WATCHDOG: 'on' }))).toContain('INTERLOCK_SEND_WATCHDOG: "on" is not a flag: give 1, true or yes to turn it on, 0, false or no to turn it off');
  });

  it('a level, a crash point, an address, a prefix and a worker id name what was given', () => {
    expect(refusal(() => loadConfig({ INTERLOCK_LOG_LEVEL: 'verbose' }))).toContain('INTERLOCK_LOG_LEVEL: "verbose" is not a log level: give one of fatal, error, warn, info, debug, trace, silent');
    expect(refusal(() => loadConfig({ INTERLOCK_CRASH_AT: 'before' }))).toContain('INTERLOCK_CRASH_AT: "before" is not a crash point');
    expect(refusal(() => loadConfig({ INTERLOCK_METRICS_ADDR: '9464' }))).toContain('INTERLOCK_METRICS_ADDR: "9464" must be host:port');
    expect(refusal(() => loadConfig({ INTERLOCK_METRICS_ADDR: 'worker:99999' }))).toContain('INTERLOCK_METRICS_ADDR: "worker:99999" must name a port from 0 to 65535');
    expect(refusal(() => loadConfig({ INTERLOCK_KEY_PREFIX: 'shop eu' }))).toContain('INTERLOCK_KEY_PREFIX: "shop eu" holds other characters than letters, digits and _ : . -');
    expect(refusal(() => loadConfig({ INTERLOCK_WORKER_ID: 'worker 1' }))).toContain('INTERLOCK_WORKER_ID: "worker 1" holds other characters');
    expect(refusal(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: '1 gb' }))).toContain('INTERLOCK_REDIS_MAXMEMORY: "1 gb" must be a size Redis reads');
  });

  it('an API limit names what was given after the range it takes', () => {
    expect(refusal(() => loadApiLimits({ INTERLOCK_API_RATE_LIMIT: '600/min' }))).toContain('INTERLOCK_API_RATE_LIMIT: must be a whole number from 0 to 1000000, not "600/min"');
    expect(refusal(() => loadApiLimits({ INTERLOCK_API_BODY_LIMIT: '512' }))).toContain('INTERLOCK_API_BODY_LIMIT: must be a whole number from 1024 to 16777216, not "512"');
  });

  it('a secret put in a flag or an API limit by a swapped line is named by its length, never printed', () => {
    const token = 'Zm9vYmFyYmF6cXV4U2VjcmV0RmxhZ1NldHRpbmcwMTI';
    const flagRefusal = refusal(() => loadConfig({ INTERLOCK_OTEL: token }));
    expect(flagRefusal).toContain(`INTERLOCK_OTEL: the value given (${token.length} characters, not shown) is not a flag`);
    expect(flagRefusal).not.toContain(token);
    const limitRefusal = refusal(() => loadApiLimits({ INTERLOCK_API_RATE_BURST: token }));
    expect(limitRefusal).toContain(`not the value given (${token.length} characters, not shown)`);
    expect(limitRefusal).not.toContain(token);
  });
});

// Rule: the logger reads INTERLOCK_LOG_LEVEL as loadConfig does, spaces around it dropped: a process that took
// "warn " must not throw where a logger is made from the environment (pino refuses an unknown level).
describe('createLogger from the environment', () => {
  it('takes a level with spaces around it', () => {
    expect(createLogger('warn ').level).toBe('warn');
    expect(createLogger(' \n').level).toBe('info');
  });
});
