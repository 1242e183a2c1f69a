// The decider's settings, read from the environment with defaults that run offline: without ANTHROPIC_API_KEY
// the rules decider decides, so a fresh clone needs no key. `deciderEnvSchema` and `deciderConfigFrom` are
// exported so the project's main config (src/config.ts) can take these variables in with its own.
import { z } from 'zod';
import { InterlockError } from '../core/errors.js';
import { wholeNumberSetting } from '../core/text.js';

/** The model the seeds decided with. */
export const DEFAULT_MODEL = 'claude-haiku-4-5-20251001';

export const DECIDER_DEFAULTS = {
  model: DEFAULT_MODEL,
  maxTokens: 1024,
  /** Per HTTP attempt; the seeds' workers waited 60 s for one answer. */
  timeoutMs: 60_000,
  /** Retries the SDK makes after the first attempt, on 408, 409, 429, 5xx (529 included), timeouts and lost connections. */
  maxRetries: 2,
  /** Model calls per decision: lookups take one turn each, and the decision tool ends the loop. */
  maxTurns: 4,
} as const;

const count = wholeNumberSetting;

/**
 * The longest INTERLOCK_MODEL_TIMEOUT_MS honoured: Node's built-in fetch, which the SDK calls the Messages API with,
 * gives up after 300 s without an answer's headers (its headersTimeout) or between two chunks of its body (bodyTimeout),
 * whatever the SDK's own timeout.
 */
const MODEL_TIMEOUT_MAX_MS = 300_000;

export const deciderEnvSchema = z.object({
  // One key, as the console shows it: a key pasted with a line break or a comment after it would only fail inside
  // the SDK, with the key in the error's text.
  ANTHROPIC_API_KEY: z.string().trim().min(1).regex(/^[\x21-\x7e]+$/, 'must be one API key: printable characters, no spaces or line breaks inside it (check where it is set)').optional(),
  INTERLOCK_MODEL: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$/, 'must be a model id such as claude-haiku-4-5-20251001').default(DECIDER_DEFAULTS.model),
  // No user name or password in it: fetch refuses such a URL (so no decision could ever be made), and the URL is
  // quoted in errors that are kept with cases. A gateway's credentials go in ANTHROPIC_API_KEY.
  ANTHROPIC_BASE_URL: z
    .string()
    .url('must be a URL such as http://127.0.0.1:8080')
    .refine((value) => !URL.canParse(value) || /^https?:$/.test(new URL(value).protocol), 'must be an http:// or https:// URL')
    .refine((value) => !URL.canParse(value) || (new URL(value).username === '' && new URL(value).password === ''), 'must not hold a user name or password (user:pass@): requests to it would be refused and the URL is quoted in errors; give the key in ANTHROPIC_API_KEY')
    .optional(),
  INTERLOCK_MODEL_MAX_TOKENS: count(16, 64_000).default(DECIDER_DEFAULTS.maxTokens),
  INTERLOCK_MODEL_TIMEOUT_MS: count(1, MODEL_TIMEOUT_MAX_MS, undefined, `must be at most ${MODEL_TIMEOUT_MAX_MS}: the SDK calls the Messages API through Node's built-in fetch, which gives up on its own after 300 s without an answer's headers or between two parts of its body, so a longer timeout would not be honoured`).default(DECIDER_DEFAULTS.timeoutMs),
  INTERLOCK_MODEL_MAX_RETRIES: count(0, 10).default(DECIDER_DEFAULTS.maxRetries),
  // A refund or credit counts only after the model read the facts (anthropic.ts): a lookup turn, then a decision turn.
  INTERLOCK_MODEL_MAX_TURNS: count(2, 16, 'must be at least 2: the model reads the facts in one turn and decides in the next (a refund or credit decided before reading them is not taken)').default(DECIDER_DEFAULTS.maxTurns),
});

export type DeciderEnv = z.infer<typeof deciderEnvSchema>;

export type DeciderConfig = {
  /** null: decide with the rules decider, offline. */
  apiKey: string | null;
  model: string;
  /** null: the SDK's default endpoint. */
  baseURL: string | null;
  maxTokens: number;
  timeoutMs: number;
  maxRetries: number;
  maxTurns: number;
};

export function deciderConfigFrom(env: DeciderEnv): DeciderConfig {
  return {
    apiKey: env.ANTHROPIC_API_KEY ?? null,
    model: env.INTERLOCK_MODEL,
    baseURL: env.ANTHROPIC_BASE_URL ?? null,
    maxTokens: env.INTERLOCK_MODEL_MAX_TOKENS,
    timeoutMs: env.INTERLOCK_MODEL_TIMEOUT_MS,
    maxRetries: env.INTERLOCK_MODEL_MAX_RETRIES,
    maxTurns: env.INTERLOCK_MODEL_MAX_TURNS,
  };
}

/**
 * Reads the decider's variables, each without the whitespace around it (as loadConfig reads its own); an empty or
 * blank variable counts as unset. Throws invalid_config naming each bad one.
 */
export function loadDeciderConfig(env: NodeJS.ProcessEnv = process.env): DeciderConfig {
  const present = Object.fromEntries(Object.entries(env).flatMap(([key, value]) => (key in deciderEnvSchema.shape && value !== undefined && value.trim() !== '' ? [[key, value.trim()]] : [])));
  const parsed = deciderEnvSchema.safeParse(present);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new InterlockError('invalid_config', `The decider's configuration is invalid (${detail}). Fix the variables named; the README's configuration table gives the defaults.`);
  }
  return deciderConfigFrom(parsed.data);
}
