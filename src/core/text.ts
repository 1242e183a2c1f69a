// Rules for the strings callers hand the gate. Every string is recorded in signed entries, so it must have a
// canonical form (no lone surrogates); identifiers also end up in logs, keys and Stripe metadata, so they hold no
// control characters at all, and free text keeps only tab and line breaks.
import { z } from 'zod';
import { hasLoneSurrogate } from './json.js';

const CONTROL = /\p{Cc}/u;
// eslint-disable-next-line no-control-regex -- matching control characters is the point of this rule
const CONTROL_BUT_LAYOUT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Whether a value passes identifier(max), checked by hand (the schema is for readable problems when it does not). */
export function isIdentifier(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max && !hasLoneSurrogate(value) && !CONTROL.test(value) && value.trim() === value;
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/**
 * Whether a string is in Unicode normal form NFC. A request id is the idempotency key of the money it moves: two
 * spellings of the same characters (é as one code point, or as e and a combining accent, as some keyboards and
 * file systems write it) would be two requests and two refunds, so only the NFC spelling is taken.
 */
export function isNfc(value: string): boolean {
  return PRINTABLE_ASCII.test(value) || value.normalize('NFC') === value;
}

/** A request id: an identifier in NFC (isNfc says why). */
export function isRequestId(value: unknown, max: number): value is string {
  return isIdentifier(value, max) && isNfc(value);
}

/** Whether a value passes freeText(max), checked by hand. */
export function isFreeText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max && !hasLoneSurrogate(value) && !CONTROL_BUT_LAYOUT.test(value);
}

/** A name or id: 1 to `max` characters, printable. */
export function identifier(max: number) {
  return z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !hasLoneSurrogate(value), 'holds a lone UTF-16 surrogate, which has no canonical form')
    .refine((value) => !CONTROL.test(value), 'may not hold control characters')
    .refine((value) => value.trim() === value, 'may not start or end with spaces');
}

/** A request id: identifier(max), in NFC. */
export function requestIdentifier(max: number) {
  return identifier(max).refine(isNfc, 'is not in Unicode normal form NFC: the same characters spelled two ways would be two requests; send value.normalize("NFC")');
}

/** Free text: up to `max` characters; tab and line breaks allowed, other control characters not. */
export function freeText(max: number) {
  return z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !hasLoneSurrogate(value), 'holds a lone UTF-16 surrogate, which has no canonical form')
    .refine((value) => !CONTROL_BUT_LAYOUT.test(value), 'may not hold control characters other than tab and line breaks');
}

/**
 * A whole-number setting read from the environment, `min` to `max`: decimal digits only. Number() would also read
 * `0x10` (16), `1e2` (100), `0b1`, `+5` and `1_000`'s cousins, so a typo could start a service on a port or at a
 * concurrency nobody wrote; such a value is refused, naming what it must be.
 */
export function wholeNumberSetting(min: number, max: number, belowMin = `must be at least ${min}`, aboveMax = `must be at most ${max}`) {
  return z
    .string()
    .trim()
    .regex(/^[0-9]+$/, 'must be a whole number written in decimal digits (no sign, exponent, fraction or 0x)')
    .transform(Number)
    .pipe(z.number().min(min, belowMin).max(max, aboveMax));
}
