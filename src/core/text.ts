// Rules for the strings callers hand the gate. Every string is recorded in signed entries, so it must have a
// canonical form (no lone surrogates); identifiers also end up in logs, keys and Stripe metadata, so they hold no
// control characters at all, and free text keeps only tab and line breaks. Identifiers that arrive also hold no
// character a reader cannot see (unseenCharacter); one read back from the journal is taken as it was recorded.
import { z } from 'zod';
import { hasLoneSurrogate } from './json.js';

const CONTROL = /\p{Cc}/u;
// eslint-disable-next-line no-control-regex -- matching control characters is the point of this rule
const CONTROL_BUT_LAYOUT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

// Characters that read as nothing or change how the text around them reads: format characters (U+202E turns what
// follows around, U+200B is a space of no width, U+00AD a hyphen shown only at a line's end), the other default
// ignorable code points (U+3164, a filler drawn blank), the line and paragraph separators (U+2028 breaks the line
// on a page but not in a log), U+2800, the Braille pattern with no dots, and U+FFFC, the object replacement character:
// symbols of no class above, drawn blank (a page showed "alex\u2800" as "alex " and "alex\uFFFCsmith" as "alexsmith",
// pixel for pixel). In a name or id, every space but the plain one too (the no-break space U+00A0, U+2000-U+200A,
// U+202F, U+205F, U+3000): "alex\u00A0smith" is drawn as "alex smith" and is another name.
const UNSEEN = /[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\u2800\uFFFC\u00A0\u1680\u2000-\u200A\u202F\u205F\u3000]/u;

/**
 * The first character of `value` a reader cannot see, as U+XXXX, or null. An identifier names who approved, who
 * asked and which request moved money; with such a character in it, a page, a terminal or a receipt shows other
 * text than what is recorded ("alice" with a right-to-left override reads as someone else; two request ids that
 * differ by a zero-width space look like one request and are two refunds).
 */
export function unseenCharacter(value: string): string | null {
  const found = UNSEEN.exec(value);
  const point = found?.[0].codePointAt(0);
  return point === undefined ? null : `U+${point.toString(16).toUpperCase().padStart(4, '0')}`;
}

const unseenMessage = (point: string) =>
  `holds ${point}, a character that reads as nothing or turns the text around it (a direction override, a zero-width or other invisible character, a line separator): readers would see other text than what is recorded; remove it`;

/**
 * Whether a value passes identifier(max), checked by hand (the schema is for readable problems when it does not).
 * `recorded`: the value was read back from the journal, where one written before the unseen-character rule may
 * hold such a character; it is taken as it was recorded (recordedIdentifier).
 */
export function isIdentifier(value: unknown, max: number, recorded = false): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max && !hasLoneSurrogate(value) && !CONTROL.test(value) && value.trim() === value && (recorded || !UNSEEN.test(value));
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

/** A request id that arrives: an identifier in NFC (isNfc says why). */
export function isRequestId(value: unknown, max: number): value is string {
  return isIdentifier(value, max) && isNfc(value);
}

/** Whether a value passes freeText(max), checked by hand. */
export function isFreeText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max && !hasLoneSurrogate(value) && !CONTROL_BUT_LAYOUT.test(value);
}

/**
 * A name or id as it was recorded: 1 to `max` characters, printable. Only for values read back from the journal (or
 * looked up by), which may predate the unseen-character rule; whatever arrives is held to identifier(max).
 */
export function recordedIdentifier(max: number) {
  return z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !hasLoneSurrogate(value), 'holds a lone UTF-16 surrogate, which has no canonical form')
    .refine((value) => !CONTROL.test(value), 'may not hold control characters')
    .refine((value) => value.trim() === value, 'may not start or end with spaces');
}

/** A name or id that arrives: 1 to `max` characters, printable, every one of them seen (unseenCharacter). */
export function identifier(max: number) {
  return recordedIdentifier(max).check((ctx) => {
    const point = unseenCharacter(ctx.value);
    if (point !== null) ctx.issues.push({ code: 'custom', message: unseenMessage(point), input: ctx.value });
  });
}

// What a terminal or a page acts on or hides instead of showing: control characters but tab and line feed (ESC
// starts a terminal's escape sequence, U+009B is one alone, CR overwrites the line), and the unseen characters.
// eslint-disable-next-line no-control-regex -- matching control characters is the point of this rule
const UNSHOWABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\u2800\uFFFC]/gu;
// eslint-disable-next-line no-control-regex -- as above, with the line breaks
const UNSHOWABLE_OR_BREAK = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\p{Cf}\p{Default_Ignorable_Code_Point}\p{Zl}\p{Zp}\u2800\uFFFC]/gu;

/** A character as JSON writes it escaped: \uXXXX, a surrogate pair of them above U+FFFF. */
function escapedAsJson(char: string): string {
  let out = '';
  for (let i = 0; i < char.length; i += 1) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * `text` as it may be put before a reader: every character a terminal or a page would act on or hide (a control
 * character, a direction override, a zero-width character) written as its JSON escape (\u202e), so what is shown is
 * what is recorded and nothing recorded can drive the terminal. JSON text stays the same JSON (JSON.parse reads the
 * escape back as the character). Recorded text comes from callers and from Stripe: none of it is trusted to be
 * printable. `lineBreaks: false` escapes line feeds and tabs too, for text that must stay on its one line.
 */
export function showable(text: string, options: { lineBreaks?: boolean } = {}): string {
  return text.replace(options.lineBreaks === false ? UNSHOWABLE_OR_BREAK : UNSHOWABLE, escapedAsJson);
}

/** Readable problem with a name that arrives outside a schema (approval terms), or null: unseenCharacter's. */
export function unseenProblem(value: string): string | null {
  const point = unseenCharacter(value);
  return point === null ? null : unseenMessage(point);
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

// Greek and Cyrillic letters a reader takes for Latin ones, by their lower case (what a name holds once its case is
// folded) to the Latin letter they are drawn as, after the confusable pairs Unicode lists for those scripts (UTS #39).
// A letter whose two cases look like two Latin letters goes by its capital, drawn exactly as the Latin one: Ν (N) and
// ν (v) are one letter once case is folded, and stay one here (n), so no two spellings that were one name become two.
// Accented letters are met decomposed (ё is е and a diaeresis, read as ë).
const LATIN_LOOK_ALIKES: Readonly<Record<string, string>> = {
  // Greek
  α: 'a', β: 'b', γ: 'y', ε: 'e', ζ: 'z', η: 'h', ι: 'i', κ: 'k', μ: 'm', ν: 'n', ο: 'o', ρ: 'p', τ: 't', υ: 'y', χ: 'x',
  ϲ: 'c', ϳ: 'j',
  // Cyrillic
  а: 'a', в: 'b', г: 'r', е: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ь: 'b',
  ѕ: 's', і: 'i', ј: 'j', ѡ: 'w', ѵ: 'v', ү: 'y', һ: 'h', ҽ: 'e', ӏ: 'i', ԁ: 'd', ԛ: 'q', ԝ: 'w',
};
const GREEK_OR_CYRILLIC = /[\u0370-\u03ff\u0400-\u052f]/gu;

/**
 * `text`, already in lower case (a name as personKey folds it), with each Greek or Cyrillic letter drawn as a Latin
 * one replaced by that Latin letter (LATIN_LOOK_ALIKES): "аlex" with a Cyrillic а, "bοb" with a Greek omicron and the
 * all-Cyrillic "асе" read as alex, bob and ace. Text that was equal stays equal (a function of the text alone).
 */
export function latinLookAlikes(text: string): string {
  return text.normalize('NFD').replace(GREEK_OR_CYRILLIC, (letter) => LATIN_LOOK_ALIKES[letter] ?? letter).normalize('NFC');
}
