// The support API's limits from the environment, for the composition root: INTERLOCK_API_RATE_LIMIT (requests a
// minute per token, 0 for none), INTERLOCK_API_RATE_BURST, INTERLOCK_API_BODY_LIMIT (bytes) and
// INTERLOCK_API_FACT_TIMEOUT_MS. Unset variables keep createApp's defaults.
import { z } from 'zod';
import { InterlockError, redactSecrets, shownSetting, type API_LIMIT_VARIABLES } from '../../src/interlock.js';
import type { ApiLimits } from './context.js';

/**
 * A refused value as src/config.ts quotes one: a short one as written (`"600x"`), anything longer, which may be a secret a
 * swapped env-file line put here, as shownSetting shows it (`the value given (43 characters, not shown)`).
 */
function givenValue(value: string): string {
  if (value.length < 16 && redactSecrets(value) === value) return JSON.stringify(value);
  return `the value given (${shownSetting(value)})`;
}

const whole = (min: number, max: number) => {
  const range = (input: unknown) => `must be a whole number from ${min} to ${max}, not ${typeof input === 'string' ? givenValue(input) : String(input)}`;
  return z
    .string()
    .regex(/^\d+$/, { error: (issue) => range(issue.input), abort: true })
    .refine((value) => Number(value) >= min && Number(value) <= max, { error: (issue) => range(issue.input) })
    .transform(Number);
};

// Exactly the names src/config.ts lists as the API's settings (`satisfies`), so its list of settings stays whole.
const schema = z.object({
  INTERLOCK_API_RATE_LIMIT: whole(0, 1_000_000).optional(),
  INTERLOCK_API_RATE_BURST: whole(1, 1_000_000).optional(),
  INTERLOCK_API_BODY_LIMIT: whole(1_024, 16 * 1024 * 1024).optional(),
  INTERLOCK_API_FACT_TIMEOUT_MS: whole(100, 120_000).optional(),
} satisfies Record<(typeof API_LIMIT_VARIABLES)[number], z.ZodType>);

export function loadApiLimits(env: NodeJS.ProcessEnv = process.env): ApiLimits {
  // Read as loadConfig reads its settings: without the whitespace around them ("600 " is 600), and blank is unset.
  const present = Object.fromEntries(Object.entries(env).flatMap(([key, value]) => (key in schema.shape && value !== undefined && value.trim() !== '' ? [[key, value.trim()]] : [])));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new InterlockError('invalid_config', `The API limits are invalid (${detail}). See the configuration table in webhooks/README.md.`);
  }
  const c = parsed.data;
  const limits: ApiLimits = {};
  if (c.INTERLOCK_API_RATE_LIMIT !== undefined) limits.ratePerMinute = c.INTERLOCK_API_RATE_LIMIT === 0 ? null : c.INTERLOCK_API_RATE_LIMIT;
  if (c.INTERLOCK_API_RATE_BURST !== undefined) limits.rateBurst = c.INTERLOCK_API_RATE_BURST;
  if (c.INTERLOCK_API_BODY_LIMIT !== undefined) limits.bodyBytes = c.INTERLOCK_API_BODY_LIMIT;
  if (c.INTERLOCK_API_FACT_TIMEOUT_MS !== undefined) limits.factTimeoutMs = c.INTERLOCK_API_FACT_TIMEOUT_MS;
  return limits;
}
