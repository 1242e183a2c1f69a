// Rule: a setting holding only whitespace (an env file's `INTERLOCK_DATA_DIR= `, a trailing space in a compose value)
// is unset, as an empty one is and as STRIPE_SECRET_KEY and the decider's settings read it: it takes its default. It is
// never taken as a path made of spaces (a data directory named "  " in the working directory, holding the signing
// key, the generated API tokens and service.json, where an operator who meant "unset" would look in .data).
import { expect, it } from 'vitest';
import { DEFAULT_DATA_DIR, dataDirOf, loadConfig } from '../src/config.js';
import { loadApiLimits } from '../webhooks/api/limits.js';
import { portChosen } from '../src/main.js';

it.each([['  '], ['\t'], [' \n']])('settings set to %j take their defaults', (blank) => {
  const config = loadConfig({
    INTERLOCK_DATA_DIR: blank,
    INTERLOCK_SIGNING_KEY_FILE: blank,
    INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: blank,
    INTERLOCK_API_TOKENS: blank,
    INTERLOCK_KEY_PREFIX: blank,
    INTERLOCK_PORT: blank,
    INTERLOCK_LOG_LEVEL: blank,
    REDIS_URL: blank,
  });
  expect(config).toMatchObject({ dataDir: DEFAULT_DATA_DIR, signingKeyFile: null, retiredPublicKeysFile: null, apiTokens: null, keyPrefix: 'interlock', port: 3000, logLevel: 'info', redisUrl: 'redis://127.0.0.1:6379' });
  expect(config).toEqual(loadConfig({}));
});

it('a value is read without the whitespace around it: only a blank one is unset', () => {
  expect(loadConfig({ INTERLOCK_DATA_DIR: ' data' }).dataDir).toBe('data');
});

// `interlock scenario` (its default --out) and the commands that find a running service read the data directory
// without loading the whole configuration; they read it as loadConfig does.
it.each([['  '], [''], [' data'], [undefined]])('the data directory read alone agrees with loadConfig for %j', (given) => {
  expect(dataDirOf({ INTERLOCK_DATA_DIR: given })).toBe(loadConfig({ INTERLOCK_DATA_DIR: given }).dataDir);
});

it('the API limits read a blank setting as unset too', () => {
  expect(loadApiLimits({ INTERLOCK_API_RATE_LIMIT: '  ', INTERLOCK_API_BODY_LIMIT: '\t' })).toEqual(loadApiLimits({}));
});

it('serve takes a blank INTERLOCK_PORT for no port chosen (the default moves to a free port when taken)', () => {
  expect(portChosen(undefined, { INTERLOCK_PORT: '  ' })).toBe(false);
  expect(portChosen(undefined, {})).toBe(false);
  expect(portChosen(undefined, { INTERLOCK_PORT: '3001' })).toBe(true);
  expect(portChosen(0, {})).toBe(true);
});
