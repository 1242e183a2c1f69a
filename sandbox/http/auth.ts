// API keys: any test-mode secret or restricted key works, by Bearer or Basic auth (the key as the user name).
import { invalidRequest } from '../core/errors.js';
import type { SandboxError } from '../core/errors.js';

const keyPattern = /^(sk|rk)_test_[A-Za-z0-9_]+$/;

const noKeyMessage =
  "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.";

function mask(key: string): string {
  const prefixLength = key.startsWith('sk_') || key.startsWith('rk_') ? key.indexOf('_', 3) + 1 : 0;
  const hidden = Math.max(0, key.length - prefixLength - 4);
  return `${key.slice(0, prefixLength)}${'*'.repeat(hidden)}${key.slice(prefixLength + hidden)}`;
}

function keyFrom(header: string): string | null {
  const [scheme, value = ''] = header.trim().split(/\s+/, 2);
  switch (scheme?.toLowerCase()) {
    case 'bearer':
      return value;
    case 'basic': {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      return colon < 0 ? decoded : decoded.slice(0, colon);
    }
    default:
      return null;
  }
}

/** Returns the key the request may proceed with, or the refusal for a missing or malformed one. */
export function authenticate(header: string | undefined): { key: string } | SandboxError {
  if (header === undefined || header.trim() === '') return invalidRequest(noKeyMessage, {}, 401);
  const key = keyFrom(header);
  if (key === null || key === '') return invalidRequest(noKeyMessage, {}, 401);
  if (!keyPattern.test(key)) return invalidRequest(`Invalid API Key provided: ${mask(key)}`, {}, 401);
  return { key };
}
