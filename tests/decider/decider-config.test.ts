// The decider's settings: defaults that run offline, each variable read and checked, empty counted as unset.
import { describe, expect, it } from 'vitest';
import { DECIDER_DEFAULTS, loadDeciderConfig } from '../../src/decider/decider.js';

describe('loadDeciderConfig', () => {
  it('defaults to the rules decider, the seeds model, 1024 tokens, 60 s, 2 retries and 4 turns', () => {
    expect(loadDeciderConfig({})).toEqual({ apiKey: null, model: 'claude-haiku-4-5-20251001', baseURL: null, maxTokens: 1024, timeoutMs: 60_000, maxRetries: 2, maxTurns: 4 });
    expect(DECIDER_DEFAULTS.model).toBe('claude-haiku-4-5-20251001');
  });

  it('reads every variable', () => {
    const env = { ANTHROPIC_API_KEY: 'sk-ant-x', INTERLOCK_MODEL: 'claude-sonnet-4-5', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9999', INTERLOCK_MODEL_MAX_TOKENS: '300', INTERLOCK_MODEL_TIMEOUT_MS: '5000', INTERLOCK_MODEL_MAX_RETRIES: '0', INTERLOCK_MODEL_MAX_TURNS: '2' };
    expect(loadDeciderConfig(env)).toEqual({ apiKey: 'sk-ant-x', model: 'claude-sonnet-4-5', baseURL: 'http://127.0.0.1:9999', maxTokens: 300, timeoutMs: 5_000, maxRetries: 0, maxTurns: 2 });
  });

  it('an empty or blank ANTHROPIC_API_KEY is no key: the rules decider decides', () => {
    expect(loadDeciderConfig({ ANTHROPIC_API_KEY: '' }).apiKey).toBeNull();
    expect(loadDeciderConfig({ ANTHROPIC_API_KEY: '   ' }).apiKey).toBeNull();
  });

  it('refuses bad values with invalid_config, naming each variable', () => {
    let error: unknown;
    try {
      loadDeciderConfig({ ANTHROPIC_BASE_URL: 'not a url', INTERLOCK_MODEL_MAX_RETRIES: '-1', INTERLOCK_MODEL_TIMEOUT_MS: '1.5', INTERLOCK_MODEL: 'has spaces' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'invalid_config', retryable: false });
    const message = (error as Error).message;
    for (const name of ['ANTHROPIC_BASE_URL', 'INTERLOCK_MODEL_MAX_RETRIES', 'INTERLOCK_MODEL_TIMEOUT_MS', 'INTERLOCK_MODEL:']) expect(message).toContain(name);
  });

  // Rule: INTERLOCK_MODEL_TIMEOUT_MS is honoured as set, so it is at most 300000: the SDK calls the Messages API through
  // Node's built-in fetch, which gives up on its own after 300 s without an answer's headers or between two parts of
  // its body; a longer setting would fail at 300 s saying the answer did not come within the longer one.
  it('refuses INTERLOCK_MODEL_TIMEOUT_MS over 300000, saying Node\'s fetch gives up after 300 s; takes 300000', () => {
    expect(() => loadDeciderConfig({ INTERLOCK_MODEL_TIMEOUT_MS: '300001' })).toThrow(/INTERLOCK_MODEL_TIMEOUT_MS: must be at most 300000: .*fetch, which gives up on its own after 300 s/);
    expect(() => loadDeciderConfig({ INTERLOCK_MODEL_TIMEOUT_MS: '600000' })).toThrow(/INTERLOCK_MODEL_TIMEOUT_MS: must be at most 300000/);
    expect(loadDeciderConfig({ INTERLOCK_MODEL_TIMEOUT_MS: '300000' }).timeoutMs).toBe(300_000);
  });

  // Rule: a refund or credit counts only after the facts were read (one turn), then decided (the next): one turn could
  // never decide money, and every case would fail blaming the model.
  it('refuses INTERLOCK_MODEL_MAX_TURNS=1, saying a decision takes a lookup turn and a deciding turn', () => {
    expect(() => loadDeciderConfig({ INTERLOCK_MODEL_MAX_TURNS: '1' })).toThrow(/INTERLOCK_MODEL_MAX_TURNS.*at least 2: the model reads the facts in one turn and decides in the next/);
    expect(loadDeciderConfig({ INTERLOCK_MODEL_MAX_TURNS: '2' }).maxTurns).toBe(2);
  });

  it('refuses a base URL holding a user name and password (fetch refuses it; errors that quote it are kept with cases), and one not http(s)', () => {
    const password = 'Pr0xyS3cret';
    let error: unknown;
    try {
      loadDeciderConfig({ ANTHROPIC_API_KEY: 'sk-ant-x', ANTHROPIC_BASE_URL: `http://gateway:${password}@127.0.0.1:8080` });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'invalid_config' });
    expect((error as Error).message).toContain('must not hold a user name or password');
    expect((error as Error).message).not.toContain(password);
    expect(() => loadDeciderConfig({ ANTHROPIC_BASE_URL: 'ftp://127.0.0.1/' })).toThrow(/ANTHROPIC_BASE_URL.*http/);
    expect(loadDeciderConfig({ ANTHROPIC_BASE_URL: 'https://gateway.internal/anthropic' }).baseURL).toBe('https://gateway.internal/anthropic');
  });

  it('refuses a key with a space or line break inside it, without repeating the key', () => {
    const pasted = 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n# prod key';
    let error: unknown;
    try {
      loadDeciderConfig({ ANTHROPIC_API_KEY: pasted });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'invalid_config' });
    expect((error as Error).message).toContain('ANTHROPIC_API_KEY');
    expect((error as Error).message).not.toContain('AbCdEfGh');
  });
});
