// Secrets never leave the process in logs, answers or errors: Stripe secret and restricted keys, webhook signing
// secrets, Anthropic API keys, this service's API tokens, whatever follows "Bearer " and the credentials of a URL
// (a REDIS_URL with a password) are masked wherever they appear in text, keeping only a prefix to tell them apart.
const SECRET = /\b((?:sk|rk)_(?:live|test)_|whsec_|itk_|sk-ant-[A-Za-z0-9]{1,16}-|Bearer\s+)([A-Za-z0-9+/=_.~-]{4})[A-Za-z0-9+/=_.~-]*/g;

/** The user and password of a URL (`redis://default:pass@host`): `redis://…@host`. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;

export function redactSecrets(text: string): string {
  return text.replace(SECRET, (_all, kind: string, start: string) => `${kind}${start}…`).replace(URL_CREDENTIALS, '$1…@');
}

/** redactSecrets over every string of a value (bounded depth), for log records and error bodies. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1));
  if (value instanceof Error) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = redactDeep(item, depth + 1);
  return out;
}
