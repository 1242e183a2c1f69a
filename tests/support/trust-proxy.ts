// The two ends INTERLOCK_TRUST_PROXY tests look at: what the configuration check says of a value, and what Express's
// own proxy-addr (the copy Express loads) would trust with it.
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

const load = createRequire(import.meta.url);
export const proxyAddr = createRequire(load.resolve('express'))('proxy-addr') as { compile: (trust: string[]) => (address: string, hop: number) => boolean };

/** The refusal of INTERLOCK_TRUST_PROXY=`value` (a ConfigError's message), or null when the configuration takes it. */
export function trustProxyProblem(value: string): string | null {
  try {
    loadConfig({ INTERLOCK_TRUST_PROXY: value });
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
}
