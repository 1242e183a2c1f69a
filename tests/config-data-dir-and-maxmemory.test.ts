// Rule: a setting is read without the whitespace around it (an env file's `VAR=value `, a secrets file's newline), and
// the path of the data directory most of all: kept, " /srv/interlock" or "/srv/interlock " names another directory,
// where serve would make a new signing key, new tokens and an empty private Redis without a word. loadConfig and
// dataDirOf (through which the CLI finds the service) read it alike. INTERLOCK_REDIS_MAXMEMORY below 1mb (Redis warns
// under it; `5` is 5 bytes) is refused naming the variable, the value and the sizes taken.
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_DATA_DIR, dataDirOf, loadConfig, redisSizeBytes } from '../src/config.js';

describe('INTERLOCK_DATA_DIR is read without the whitespace around it', () => {
  for (const given of ['/srv/interlock ', ' /srv/interlock', '/srv/interlock\n', '\t/srv/interlock\r\n']) {
    it(`${JSON.stringify(given)} is /srv/interlock, for the service and for the CLI`, () => {
      expect(loadConfig({ INTERLOCK_DATA_DIR: given }).dataDir).toBe('/srv/interlock');
      expect(dataDirOf({ INTERLOCK_DATA_DIR: given })).toBe('/srv/interlock');
    });
  }

  it('only whitespace is unset, for both', () => {
    expect(loadConfig({ INTERLOCK_DATA_DIR: ' \n' }).dataDir).toBe(DEFAULT_DATA_DIR);
    expect(dataDirOf({ INTERLOCK_DATA_DIR: ' \n' })).toBe(DEFAULT_DATA_DIR);
  });
});

describe('INTERLOCK_REDIS_MAXMEMORY of at least 1mb', () => {
  for (const given of ['5', '100', '1kb', '1000k', '1m', '1048575b']) {
    it(`${given}: refused naming the variable, the value, its bytes and the sizes taken`, () => {
      expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: given })).toThrow(ConfigError);
      expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: given })).toThrow(`INTERLOCK_REDIS_MAXMEMORY: "${given}" is ${redisSizeBytes(given)} bytes, less than 1mb`);
      expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: given })).toThrow(/such as 1gb or 512mb/);
    });
  }

  for (const given of ['1mb', '1MB', '1048576', '2m', '512mb', '1gb', '1g']) {
    it(`${given}: taken as written`, () => {
      expect(loadConfig({ INTERLOCK_REDIS_MAXMEMORY: given }).redisMaxmemory).toBe(given);
    });
  }

  it('sizes are read as Redis reads them (k, m, g thousands; kb, mb, gb powers of 1024)', () => {
    expect([redisSizeBytes('1k'), redisSizeBytes('1kb'), redisSizeBytes('1m'), redisSizeBytes('1mb'), redisSizeBytes('1g'), redisSizeBytes('1GB'), redisSizeBytes('7b'), redisSizeBytes('7')]).toEqual([1e3, 1024, 1e6, 1024 ** 2, 1e9, 1024 ** 3, 7, 7]);
  });
});

// Rule: the key file settings are read without the whitespace around them (an env file's trailing space or line
// break), as the data directory is: the path named is the file meant, not a look-alike that does not exist.
it('the signing key file and the retired keys file are read without the whitespace around them', () => {
  const config = loadConfig({ INTERLOCK_SIGNING_KEY_FILE: '/srv/keys/signing.pem\n', INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: ' /srv/keys/retired.json ' });
  expect({ signing: config.signingKeyFile, retired: config.retiredPublicKeysFile }).toEqual({ signing: '/srv/keys/signing.pem', retired: '/srv/keys/retired.json' });
});
