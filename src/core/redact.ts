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
 * The user and password of a URL (`redis://default:pass@host`): `redis://…@host`. Up to the last "@" before the path
 * or the line's end, spaces, "?" and "#" included: an operator writes a passphrase ("correct horse battery staple")
 * or a password holding "@" then "#" as it is, unencoded, and the Redis client connects with it all the same, so a
 * stricter reading would leave part of it in clear. Text that merely follows a URL on its line with an "@" further on
 * is masked with it: more hidden than needed, never a password shown. A URL known to be one (a setting) is shown
 * with shownUrl instead, from its parsed parts.
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\r\n/]*@/gi;

/**
 * The key every local sandbox takes (`npm start`'s, `interlock sandbox`'s): public, printed in the lines to try and
 * in the README, and no key at Stripe, so a line quoting it (the `stripe listen` line `serve` logs) stays runnable.
 */
const PUBLIC_KEYS: ReadonlySet<string> = new Set(['sk_test_sandbox']);

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
  const maskSecret = (all: string, kind: string, body: string) => (PUBLIC_KEYS.has(all) ? all : masked(kind, body));
  return text.replace(SECRET, maskSecret).replace(BEARER, mask).replace(URL_CREDENTIALS, '$1…@');
}

/**
 * A URL setting (REDIS_URL) as messages and logs show it, built from its parsed parts rather than masked in its text:
 * scheme, `…@` when it has a user or password, host and port, and the path (a database number). The query and the
 * fragment are left out: the Redis client reads options (a password among them) from the query, and a password
 * holding "#" leaves the rest of itself in the fragment. Text that does not parse as a URL shows as "…".
 */
export function shownUrl(text: string): string {
  if (!URL.canParse(text)) return '…';
  const url = new URL(text);
  const credentials = url.username !== '' || url.password !== '' ? '…@' : '';
  return redactSecrets(`${url.protocol}//${credentials}${url.host}${url.pathname === '/' ? '' : url.pathname}`);
}

/** A host name or IP address, with or without a port: what an address setting that is not a URL holds. */
const HOST_SHAPED = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]|[0-9A-Fa-f:.]{2,45})(?::[0-9]{1,5})?$/;
/** A host name without a dot this long or longer is taken for a token (a base64url API token has no dot), not a host. */
const TOKEN_LIKE_LENGTH = 16;

/**
 * The value of an address setting a secret can land in by mistake (a swapped line of an env file puts the Stripe key
 * in STRIPE_API_BASE or INTERLOCK_HOST), as a refusal may quote it. A URL shows as shownUrl shows it; a host (with a
 * port) as given, unless it is one word long enough to be a token; anything else only by its kind when it is a known
 * secret (`sk_live_…cdef`), else by its length: enough for the operator to see which line went wrong.
 */
export function shownSetting(value: string): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value) && URL.canParse(value)) return shownUrl(value);
  if (HOST_SHAPED.test(value) && (/[.:]/.test(value) || value.length < TOKEN_LIKE_LENGTH)) return redactSecrets(value);
  const hint = secretHint(value);
  return hint === '…' ? `${value.length} characters, not shown` : hint;
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
