// Rule: one variable has one reading. INTERLOCK_CODE_CACHE is read first by bin/compiled.js (codeCacheOn, before any
// TypeScript loads) and again by loadConfig, and INTERLOCK_ALLOW_LIVE by loadConfig and by the Stripe client's
// stripeClientOptionsFromEnv: a spelling one of them honours is honoured alike by the others, so `FALSE`, `No` or
// `0 ` from an env file no longer runs the launcher one way and then stops the start with exit 2 as invalid. A
// spelling that is no flag (`on`, `2`) is refused by loadConfig, naming the variable and the value.
import { describe, expect, it } from 'vitest';
import { codeCacheOn } from '../bin/compiled.js';
import { loadConfig } from '../src/config.js';
import { stripeClientOptionsFromEnv } from '../src/stripe/client.js';

// Each spelling with the flag's reading: true, false, or refused; blank is unset (the setting's default).
const SPELLINGS: ReadonlyArray<readonly [string, boolean | 'refused' | 'unset']> = [
  ['1', true], ['true', true], ['yes', true], ['TRUE', true], ['True', true], ['YES', true], [' yes', true], ['1\n', true],
  ['0', false], ['false', false], ['no', false], ['FALSE', false], ['False', false], ['No', false], ['NO', false], ['0 ', false], ['\tno\r\n', false],
  ['', 'unset'], ['  ', 'unset'],
  ['on', 'refused'], ['off', 'refused'], ['2', 'refused'], ['y', 'refused'], ['truee', 'refused'],
];

function configured(variable: string, value: string): boolean | 'refused' {
  try {
    const config = loadConfig({ [variable]: value });
    return variable === 'INTERLOCK_ALLOW_LIVE' ? config.allowLive : config.sendWatchdog;
  } catch {
    return 'refused';
  }
}

describe('INTERLOCK_CODE_CACHE: the launcher and the configuration read it alike', () => {
  it.each(SPELLINGS)('%j', (value, reading) => {
    const taken = configured('INTERLOCK_CODE_CACHE', value) !== 'refused';
    expect(taken).toBe(reading !== 'refused');
    // The configuration's reading of a flag that is on unless told (INTERLOCK_SEND_WATCHDOG, the same schema and default).
    if (taken) expect(codeCacheOn({ INTERLOCK_CODE_CACHE: value })).toBe(configured('INTERLOCK_SEND_WATCHDOG', value));
    if (reading === 'unset') expect(codeCacheOn({ INTERLOCK_CODE_CACHE: value })).toBe(true);
    else if (reading !== 'refused') expect(codeCacheOn({ INTERLOCK_CODE_CACHE: value })).toBe(reading);
  });

  it('a value that is no flag is refused naming the variable and the value', () => {
    expect(() => loadConfig({ INTERLOCK_CODE_CACHE: 'off' })).toThrow('INTERLOCK_CODE_CACHE: "off" is not a flag');
  });
});

describe('INTERLOCK_ALLOW_LIVE: the configuration and the Stripe client read it alike', () => {
  it.each(SPELLINGS.filter(([, reading]) => reading !== 'refused'))('%j', (value, reading) => {
    const client = stripeClientOptionsFromEnv({ INTERLOCK_ALLOW_LIVE: value }).allowLive;
    expect(configured('INTERLOCK_ALLOW_LIVE', value)).toBe(client);
    expect(client).toBe(reading === 'unset' ? false : reading);
  });
});
