// Stripe secrets in text that may be logged or shown: API keys (secret `sk_`, restricted `rk_`, test or live) and
// webhook signing secrets (`whsec_`). Pure, and free of the SDK, so logs, the CLI and the webhook endpoint can use
// it without importing Stripe.

const SECRET = /\b(sk_test_|sk_live_|rk_test_|rk_live_|whsec_)([A-Za-z0-9_+/=]+)/g;

/** Characters of a secret's end that a hint keeps: enough to tell two keys apart, far too few to use one. */
const HINT_CHARS = 4;
/** A secret shorter than this keeps none of its characters (four of eight would be half the secret). */
const HINT_MIN_LENGTH = 16;

/** A secret as logs may show it: its prefix, an ellipsis and, for a long secret, its last four characters. */
export function secretHint(secret: string): string {
  const match = /^(sk_test_|sk_live_|rk_test_|rk_live_|whsec_)(.*)$/s.exec(secret);
  if (match === null) return '…';
  const [, prefix = '', body = ''] = match;
  return body.length >= HINT_MIN_LENGTH ? `${prefix}…${body.slice(-HINT_CHARS)}` : `${prefix}…`;
}

/** `text` with every Stripe API key and webhook signing secret in it masked (see secretHint). */
export function redactSecrets(text: string): string {
  return text.replace(SECRET, (whole) => secretHint(whole));
}
