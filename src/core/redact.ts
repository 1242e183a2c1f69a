// Secrets never leave the process in logs, answers or errors: Stripe secret and restricted keys, webhook signing
// secrets, Anthropic API keys, this service's API tokens, whatever follows "Bearer " and the credentials of a URL
// (a REDIS_URL with a password) are masked wherever they appear in text. The one way the project masks a secret:
// its kind's prefix, an ellipsis and, for a long secret, its last four characters (as Stripe's dashboard shows a
// key): enough to tell two keys apart, far too little to use one.

/** The prefixes that name a secret's kind, kept when it is masked. */
const KINDS = String.raw`(?:sk|rk)_(?:live|test)_|whsec_|itk_|sk-ant-[A-Za-z0-9]{1,16}-`;
const SECRET = new RegExp(String.raw`\b(${KINDS})([A-Za-z0-9+/=_.~-]+)`, 'g');
/** A bearer credential of no known kind (one of a known kind is masked as that kind, "Bearer sk_test_…1234"). */
const BEARER = new RegExp(String.raw`\b(Bearer\s+)(?!${KINDS})([A-Za-z0-9+/=_.~-]+)`, 'g');
const KIND_OF = new RegExp(String.raw`^(${KINDS})(.*)$`, 's');

/** Characters of a secret's end that a hint keeps. */
const HINT_CHARS = 4;
/** A secret shorter than this keeps none of its characters (four of eight would be half the secret). */
const HINT_MIN_LENGTH = 16;

/**
 * The user and password of a URL (`redis://default:pass@host`): `redis://…@host`. Up to the last "@" of the authority,
 * as URL parsers (and the Redis client) read it: a password with an "@" in it is masked whole.
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]*@/gi;

function masked(kind: string, body: string): string {
  return body.length >= HINT_MIN_LENGTH ? `${kind}…${body.slice(-HINT_CHARS)}` : `${kind}…`;
}

/** A secret as logs may show it (`sk_live_…wxyz`); `…` for text that is no secret of a known kind. */
export function secretHint(secret: string): string {
  const match = KIND_OF.exec(secret);
  return match === null ? '…' : masked(match[1] ?? '', match[2] ?? '');
}

/** `text` with every secret in it masked as secretHint shows it, and the credentials of every URL removed. */
export function redactSecrets(text: string): string {
  const mask = (_all: string, kind: string, body: string) => masked(kind, body);
  return text.replace(SECRET, mask).replace(BEARER, mask).replace(URL_CREDENTIALS, '$1…@');
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
