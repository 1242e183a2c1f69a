// Rules for the strings callers hand the gate. Every string is recorded in signed entries, so it must have a
// canonical form (no lone surrogates); identifiers also end up in logs, keys and Stripe metadata, so they hold no
// control characters at all, and free text keeps only tab and line breaks. Identifiers that arrive also hold no
// character a reader cannot see (unseenCharacter); one read back from the journal is taken as it was recorded.
import { z } from 'zod';
import { hasLoneSurrogate } from './json.js';
import { redactSecrets, secretHint, shownUrl } from './redact.js';

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

/**
 * Whether text a person writes (a note, a case's story) holds something a reader can see: a character that is neither
 * a space nor one that reads as nothing (unseenCharacter: U+200B, U+2800, U+3164 ...). Text of only such characters
 * is recorded and shown as blank, so it is refused as blank text is.
 */
export function isVisibleText(text: string): boolean {
  for (const char of text) if (char.trim() !== '' && unseenCharacter(char) === null) return true;
  return false;
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
 * Shorter than any secret a swapped line of an env file can put in a setting: an API token is 16 to 256 characters
 * (webhooks/api/tokens.ts), a Stripe or Anthropic key and a webhook secret longer, with their kind's prefix.
 */
const SHORTER_THAN_A_SECRET = 16;
/** A host and port (`worker:9464`): no token has a ":" (an entry of INTERLOCK_API_TOKENS has two, and no port). */
const HOST_AND_PORT = /^[A-Za-z0-9.-]+:[0-9]{1,5}$/;

/**
 * A refused setting's value as a refusal quotes it: a typo as written, in quotes (`"uds"`, `"0x10"`, `"worker:9464"`);
 * a URL as shownUrl shows it (no password, no query); anything else, which may be a secret put in the wrong setting
 * (an API token, a key), by its kind only (`sk_live_…cdef`) or its length (`43 characters, not shown`), as
 * src/core/redact.ts's shownSetting does. `what` names a value not shown as written ("the value given (…)").
 */
export function quotedSetting(value: string, what?: string): string {
  if ((value.length < SHORTER_THAN_A_SECRET || HOST_AND_PORT.test(value)) && redactSecrets(value) === value) return JSON.stringify(value);
  const hint = secretHint(value);
  const shown = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) && URL.canParse(value) ? shownUrl(value) : hint === '…' ? `${value.length} characters, not shown` : hint;
  return what === undefined ? shown : `${what} (${shown})`;
}

/** What a refusal of a setting adds after saying what it must be: the value refused (quotedSetting). */
export function givenSetting(value: unknown): string {
  return ` (given: ${typeof value === 'string' ? quotedSetting(value) : JSON.stringify(value)})`;
}

/**
 * A whole-number setting read from the environment, `min` to `max`: decimal digits only. Number() would also read
 * `0x10` (16), `1e2` (100), `0b1`, `+5` and `1_000`'s cousins, so a typo could start a service on a port or at a
 * concurrency nobody wrote; such a value is refused, naming what it must be and quoting it (givenSetting).
 */
export function wholeNumberSetting(min: number, max: number, belowMin = `must be at least ${min}`, aboveMax = `must be at most ${max}`) {
  return z
    .string()
    .trim()
    .regex(/^[0-9]+$/, { error: (issue) => `must be a whole number written in decimal digits (no sign, exponent, fraction or 0x)${givenSetting(issue.input)}`, abort: true })
    .refine((value) => Number(value) >= min, { error: (issue) => `${belowMin}${givenSetting(issue.input)}`, abort: true })
    .refine((value) => Number(value) <= max, { error: (issue) => `${aboveMax}${givenSetting(issue.input)}` })
    .transform(Number);
}

// Letters of other scripts and of Latin's own phonetic and historic blocks that a reader takes for plain Latin ones, by
// their lower case (what a name holds once its case is folded) to the Latin letter they are drawn as, after the
// confusable pairs Unicode lists (UTS #39), kept to those drawn exactly or nearly so. A letter whose two cases look
// like two Latin letters goes by its capital, drawn exactly as the Latin one: Ν (N) and ν (v) are one letter once case
// is folded, and stay one here (n), so no two spellings that were one name become two; so do Armenian Տ (S) and
// Cherokee Ꭰ (D), whose small letters look like no Latin one. Accented letters are met decomposed (ё is е and a
// diaeresis, read as ë; the lunate sigma, which compatibility folding makes σ, is read first: compatibilityLookAlikes).
// No table is complete: a person's name that mixes scripts, or holds a symbol of no script (⍺, ℮), is refused where it
// arrives (mixedScriptProblem), so a letter this table misses can only stand in a name written wholly in its script.
export const LATIN_LOOK_ALIKES: Readonly<Record<string, string>> = {
  // Latin IPA letters and small capitals (U+0250-02AF, U+1D00-1DBF), and Latin Extended-B to E (U+0180-024F,
  // U+2C60-2C7F, U+A720-A7FF, U+AB30-AB6F): Latin letters themselves, drawn as plain ones
  ɑ: 'a', ɛ: 'e', ɡ: 'g', ɢ: 'g', ɣ: 'y', ɩ: 'i', ɪ: 'i', ɯ: 'w', ɴ: 'n', ʀ: 'r', ʋ: 'u', ʏ: 'y', ʙ: 'b', ʜ: 'h', ʟ: 'l',
  ᴀ: 'a', ᴄ: 'c', ᴅ: 'd', ᴇ: 'e', ᴊ: 'j', ᴋ: 'k', ᴍ: 'm', ᴏ: 'o', ᴑ: 'o', ᴘ: 'p', ᴛ: 't', ᴜ: 'u', ᴠ: 'v', ᴡ: 'w', ᴢ: 'z',
  ᴦ: 'r', ᴩ: 'p', ꜰ: 'f', ꜱ: 's', ꞯ: 'q', ƒ: 'f', ǀ: 'l', ȷ: 'j', ꞵ: 'b', ꬲ: 'e', ꬽ: 'o', ꭇ: 'r', ꭎ: 'u', ꭒ: 'u', ꭓ: 'x',
  ꭚ: 'y',
  // Greek (U+0370-03FF)
  α: 'a', β: 'b', γ: 'y', ε: 'e', ζ: 'z', η: 'h', ι: 'i', κ: 'k', μ: 'm', ν: 'n', ο: 'o', ρ: 'p', τ: 't', υ: 'y', χ: 'x',
  ϳ: 'j',
  // Cyrillic (U+0400-052F, U+A640-A69F)
  а: 'a', в: 'b', г: 'r', е: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ь: 'b',
  ѕ: 's', і: 'i', ј: 'j', ѡ: 'w', ѵ: 'v', ү: 'y', һ: 'h', ҽ: 'e', ӏ: 'i', ԁ: 'd', ԛ: 'q', ԝ: 'w', ꙇ: 'i',
  // Armenian (U+0530-058F); տ by its capital Տ
  լ: 'l', հ: 'h', ո: 'n', ս: 'u', տ: 's', ց: 'g', օ: 'o', զ: 'q', գ: 'q',
  // Cherokee (U+13A0-13FF, U+AB70-ABBF), each small letter by its capital: ꭰ is Ꭰ (D), ꮯ is Ꮯ (C)
  ꭰ: 'd', ꭱ: 'r', ꭲ: 't', ꭵ: 'i', ꭹ: 'y', ꭺ: 'a', ꭻ: 'j', ꭼ: 'e', ꮃ: 'w', ꮇ: 'm', ꮋ: 'h', ꮍ: 'y', ꮐ: 'g', ꮒ: 'h',
  ꮓ: 'z', ꮟ: 'b', ꮢ: 'r', ꮤ: 'w', ꮥ: 's', ꮩ: 'v', ꮪ: 's', ꮮ: 'l', ꮯ: 'c', ꮲ: 'p', ꮶ: 'k', ꮷ: 'd', ᏻ: 'g', ᏼ: 'b',
  // Lisu (U+A4D0-A4FF), a script of capitals only
  ꓐ: 'b', ꓑ: 'p', ꓓ: 'd', ꓔ: 't', ꓖ: 'g', ꓗ: 'k', ꓙ: 'j', ꓚ: 'c', ꓜ: 'z', ꓝ: 'f', ꓟ: 'm', ꓠ: 'n', ꓡ: 'l', ꓢ: 's',
  ꓣ: 'r', ꓦ: 'v', ꓧ: 'h', ꓪ: 'w', ꓫ: 'x', ꓬ: 'y', ꓮ: 'a', ꓰ: 'e', ꓲ: 'i', ꓳ: 'o', ꓴ: 'u',
  // Coptic (U+2C80-2CFF), each small letter by its capital: ⲁ is Ⲁ (A)
  ⲁ: 'a', ⲃ: 'b', ⲅ: 'r', ⲍ: 'z', ⲏ: 'h', ⲓ: 'i', ⲕ: 'k', ⲙ: 'm', ⲛ: 'n', ⲟ: 'o', ⲣ: 'p', ⲥ: 'c', ⲧ: 't', ⲩ: 'y', ⲭ: 'x',
};
const NOT_ASCII = /\P{ASCII}/gu;
// The lunate sigma ϲ Ϲ, drawn as c and C, is σ Σ once compatibility forms are folded (NFKC, which personKey does
// first): it is read as c before that, or "ϲοϲο" would not be coco.
const LUNATE_SIGMA = /[\u03f2\u03f9]/gu;

/** `text` with the letters compatibility folding would turn into letters drawn otherwise read first (LUNATE_SIGMA). */
export function compatibilityLookAlikes(text: string): string {
  return text.replace(LUNATE_SIGMA, 'c');
}

/**
 * `text`, already in lower case (a name as personKey folds it), with each letter drawn as a Latin one replaced by that
 * Latin letter (LATIN_LOOK_ALIKES): "аlex" with a Cyrillic а, "ɑlex" with a Latin alpha, "bοb" with a Greek omicron
 * and the all-Cyrillic "асе" read as alex, alex, bob and ace. Text that was equal stays equal (a function of the text
 * alone).
 */
export function latinLookAlikes(text: string): string {
  return text.normalize('NFD').replace(NOT_ASCII, (letter) => LATIN_LOOK_ALIKES[letter] ?? letter).normalize('NFC');
}

// What is drawn as one upright stroke in the case it is written in, on a page, a receipt or a terminal in a sans-serif
// face: the capital I, the small l, the digit 1 and the vertical line | (refused in a name that arrives, but possibly in
// one an earlier version recorded), and the letters of other scripts and of Latin's own blocks drawn as them: the Latin
// dental click ǀ, capital iota Ɩ and small capital Ɪ, the Greek capital iota Ι, the Cyrillic capital і (І), palochka
// (ӏ Ӏ) and capital iota Ꙇ, the Lisu ꓲ and the Coptic capital iota Ⲓ. A dotted small i (i, the Cyrillic і, Cherokee Ꭵ)
// is not one, nor is a capital with a dot (İ, met decomposed as I and a dot above), nor a dotless small i (ı, the Greek
// ι, the Latin ɩ and ɪ, the Coptic ⲓ), shorter than an l: each is read as i. The capital L is not one: its foot tells it
// from I. The lateral click ǁ, a Latin letter, is drawn as two.
const A_STROKE = /[Il1|\u01c0\u0196\ua7ae\u0399\u0406\u04c0\u04cf\ua646\ua4f2\u2c92](?!\u0307)/gu;
const TWO_STROKES = /\u01c1/gu;

/** What uprightStrokes reads every upright stroke as: the vertical line, which no letter is folded to. */
export const UPRIGHT_STROKE = '|';

/**
 * `text`, with its case as written (before case is folded), decomposed (NFD), and with every character drawn as one
 * upright stroke in that case (A_STROKE) read as UPRIGHT_STROKE: "AIex" with a capital i, "alex", "a1ex" and the
 * all-Cyrillic "аӏех" (its palochka ӏ) all read as a|ex, "aǁen" as a||en; "Ian" and "lan" are |an, while "Lan", whose
 * L has a foot, stays Lan and "ian" ian. Accents stay on the stroke ("Ían" and "ĺan" are both |́an). For a comparison
 * only (four eyes, src/interlock.ts personStrokeKey); text with none of these characters is left as it was, decomposed.
 */
export function uprightStrokes(text: string): string {
  return text.normalize('NFD').replace(TWO_STROKES, UPRIGHT_STROKE.repeat(2)).replace(A_STROKE, UPRIGHT_STROKE);
}

// Every script Unicode names (its Script property values, Unicode 17), so a name's letters can be told apart by
// script. A runtime whose Unicode is older does not know the newest ones: they are left out there, as its letters are
// unassigned code points there (script Unknown), which is listed.
const SCRIPT_NAMES = [
  'Adlam', 'Ahom', 'Anatolian_Hieroglyphs', 'Arabic', 'Armenian', 'Avestan', 'Balinese', 'Bamum', 'Bassa_Vah', 'Batak', 'Bengali',
  'Beria_Erfe', 'Bhaiksuki', 'Bopomofo', 'Brahmi', 'Braille', 'Buginese', 'Buhid', 'Canadian_Aboriginal', 'Carian',
  'Caucasian_Albanian', 'Chakma', 'Cham', 'Cherokee', 'Chorasmian', 'Coptic', 'Cuneiform', 'Cypriot', 'Cypro_Minoan',
  'Cyrillic', 'Deseret', 'Devanagari', 'Dives_Akuru', 'Dogra', 'Duployan', 'Egyptian_Hieroglyphs', 'Elbasan', 'Elymaic',
  'Ethiopic', 'Garay', 'Georgian', 'Glagolitic', 'Gothic', 'Grantha', 'Greek', 'Gujarati', 'Gunjala_Gondi', 'Gurmukhi',
  'Gurung_Khema', 'Han', 'Hangul', 'Hanifi_Rohingya', 'Hanunoo', 'Hatran', 'Hebrew', 'Hiragana', 'Imperial_Aramaic',
  'Inscriptional_Pahlavi', 'Inscriptional_Parthian', 'Javanese', 'Kaithi', 'Kannada', 'Katakana', 'Kawi', 'Kayah_Li',
  'Kharoshthi', 'Khitan_Small_Script', 'Khmer', 'Khojki', 'Khudawadi', 'Kirat_Rai', 'Lao', 'Latin', 'Lepcha', 'Limbu',
  'Linear_A', 'Linear_B', 'Lisu', 'Lycian', 'Lydian', 'Mahajani', 'Makasar', 'Malayalam', 'Mandaic', 'Manichaean', 'Marchen',
  'Masaram_Gondi', 'Medefaidrin', 'Meetei_Mayek', 'Mende_Kikakui', 'Meroitic_Cursive', 'Meroitic_Hieroglyphs', 'Miao',
  'Modi', 'Mongolian', 'Mro', 'Multani', 'Myanmar', 'Nabataean', 'Nag_Mundari', 'Nandinagari', 'New_Tai_Lue', 'Newa', 'Nko',
  'Nushu', 'Nyiakeng_Puachue_Hmong', 'Ogham', 'Ol_Chiki', 'Ol_Onal', 'Old_Hungarian', 'Old_Italic', 'Old_North_Arabian',
  'Old_Permic', 'Old_Persian', 'Old_Sogdian', 'Old_South_Arabian', 'Old_Turkic', 'Old_Uyghur', 'Oriya', 'Osage', 'Osmanya',
  'Pahawh_Hmong', 'Palmyrene', 'Pau_Cin_Hau', 'Phags_Pa', 'Phoenician', 'Psalter_Pahlavi', 'Rejang', 'Runic', 'Samaritan',
  'Saurashtra', 'Sharada', 'Shavian', 'Siddham', 'Sidetic', 'SignWriting', 'Sinhala', 'Sogdian', 'Sora_Sompeng', 'Soyombo',
  'Sundanese', 'Sunuwar', 'Syloti_Nagri', 'Syriac', 'Tagalog', 'Tagbanwa', 'Tai_Le', 'Tai_Tham', 'Tai_Viet', 'Tai_Yo',
  'Takri', 'Tamil', 'Tangsa', 'Tangut', 'Telugu', 'Thaana', 'Thai', 'Tibetan', 'Tifinagh', 'Tirhuta', 'Todhri',
  'Tolong_Siki', 'Toto', 'Tulu_Tigalari', 'Ugaritic', 'Vai', 'Vithkuqi', 'Wancho', 'Warang_Citi', 'Yezidi', 'Yi',
  'Zanabazar_Square', 'Unknown',
] as const;

// What a name holds besides its letters, with any script, as the inside of a character class (a name is read with
// compatibility forms folded, NFKC, so a full-width or mathematical digit is its ASCII one here): printable ASCII but
// letters (digits, the space, punctuation: ASCII's own look-alikes, 0 and O, are as plain to a reader as its letters;
// I, l and 1, which are not, are one stroke where four eyes compares names: uprightStrokes; the vertical line |, drawn
// as they are, is refused, in its full-width form ｜ too, which NFKC folds to it), apostrophes (’ ‘ and the
// modifier letters ʻ ʼ ʾ ʿ, as in O’Brien, Hawaiʻi, Saʿid), the hyphen ‐, the middle dot · (米歇尔·福柯), combining marks
// (script Inherited: accents) and emoji (Extended_Pictographic and its skin tones, but © ® and the letters in squares,
// 🅰 🅾, which A_NAME_SIGN leaves out, so they are refused before the patterns below meet them). Every other character
// of no one script (Common) is a symbol and refused: APL's ⍺ ⍳ ⍴ and the estimated sign ℮ are drawn as a, i, p and e,
// and no table of them is complete. One class with the letters, never an alternative beside them: a mark that is both
// (U+0301 is Inherited, and Latin by its Script_Extensions) would make a failing match try every way to split a long
// run of them.
const NAME_SIGNS = String.raw`\x20-\x40\x5b-\x60\x7b-\x7e\u2018\u2019\u02bb\u02bc\u02be\u02bf\u2010\u00b7\p{Script=Inherited}\p{Emoji_Modifier}\p{Extended_Pictographic}`;
const A_NAME_SIGN = new RegExp(`^(?![\u00a9\u00ae\u{1f100}-\u{1f1ff}])[${NAME_SIGNS}]$`, 'u');

type Script = { name: string; letter: RegExp; usedIn: RegExp; only: RegExp };

/** A script's patterns, or null where this runtime's Unicode does not know it (a regular expression refuses the name). */
function scriptOf(name: string): Script | null {
  try {
    return {
      name: name.replace(/_/g, ' '),
      letter: new RegExp(`^\\p{Script=${name}}$`, 'u'),
      usedIn: new RegExp(`^\\p{Script_Extensions=${name}}$`, 'u'),
      only: new RegExp(`^[\\p{Script_Extensions=${name}}${NAME_SIGNS}]*$`, 'u'),
    };
  } catch {
    return null;
  }
}

const SCRIPTS: readonly Script[] = SCRIPT_NAMES.map(scriptOf).filter((script): script is Script => script !== null);
// Latin with a name's signs alone: nearly every name, answered without looking further.
const LATIN_ONLY = new RegExp(`^[\\p{Script_Extensions=Latin}${NAME_SIGNS}]*$`, 'u');
// The mixes UTS #39 allows at its "highly restrictive" level, as a name's usual writing: Japanese (Han, Hiragana and
// Katakana), Chinese with Bopomofo and Korean (Han and Hangul), each with Latin. Without Latin, what one word may mix.
const CJK_MIXES = ['\\p{Script_Extensions=Hiragana}\\p{Script_Extensions=Katakana}', '\\p{Script_Extensions=Bopomofo}', '\\p{Script_Extensions=Hangul}'];
const USUAL_MIXES = CJK_MIXES.map((mix) => new RegExp(`^[\\p{Script_Extensions=Latin}\\p{Script_Extensions=Han}${mix}${NAME_SIGNS}]*$`, 'u'));
const WORD_MIXES = CJK_MIXES.map((mix) => new RegExp(`^[\\p{Script_Extensions=Han}${mix}${NAME_SIGNS}]*$`, 'u'));
// A character of no one script (Common) that is not one of a name's signs: a symbol, which may be drawn as a letter.
const SYMBOL = /^\p{Script_Extensions=Common}$/u;

/** A character as a message names it: itself, and past ASCII its code point too, which a reader cannot tell by looking. */
const shownLetter = (letter: string) => (/^[\x21-\x7e]$/.test(letter) ? letter : `${letter} (U+${(letter.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')})`);

/** Whether `text` (folded as personKey folds it) is written in one script, its signs aside. */
function inOneScript(text: string): boolean {
  if (LATIN_ONLY.test(text)) return true;
  const first = [...text].find((char) => !A_NAME_SIGN.test(char));
  return first === undefined || SCRIPTS.some((script) => script.usedIn.test(first) && script.only.test(text));
}

/**
 * Readable problem with a person's name (an approver, a proposer) that could draw as another person's, or null. Its
 * letters must come from one script: letters of two scripts draw one person's name as another's ("bօb" with an
 * Armenian օ, "ꓲvan" with a Lisu ꓲ, or letters no look-alike table holds yet), and the four-eyes rule would take them
 * for two people. A name in one script, whichever (José, Łukasz, Νίκος, Сергей, 山田), is taken, as are the mixes a name
 * is usually written in (Japanese kanji and kana, Chinese with Bopomofo, Korean hanja and hangul, each with Latin: UTS
 * #39's "highly restrictive" level), Latin then in words of its own ("Alex 李", not "b〇b" with a Han 〇). Besides
 * letters, a name holds only its signs (NAME_SIGNS: digits, spaces, ASCII punctuation, apostrophes, hyphens, middle
 * dots, accents and emoji), which go with any script: another character of no one script is a symbol, and symbols are
 * drawn as letters (⍺, ℮, ⍳, ⍴). The name is read with compatibility forms folded (NFKC), as personKey reads it: a
 * mathematical 𝐚 or a full-width ａ is the Latin a, and a digit ０ the digit 0.
 */
export function mixedScriptProblem(name: string): string | null {
  const line = [...name].find((char) => char.normalize('NFKC').includes('|'));
  if (line !== undefined) return `holds ${shownLetter(line)}, a vertical line, which is drawn as the letter l or a capital I and would make one person's name read as another's (a|ex as alex): remove it`;
  if (PRINTABLE_ASCII.test(name)) return null;
  const symbols = new Set([...name].filter((char) => [...char.normalize('NFKC')].some((folded) => SYMBOL.test(folded) && !A_NAME_SIGN.test(folded))));
  if (symbols.size > 0) {
    return `holds ${[...symbols].map(shownLetter).join(', ')}, ${symbols.size === 1 ? 'a symbol' : 'symbols'} of no script, which can be drawn as a letter and make one person's name read as another's: a name is letters of one script with digits, spaces, ASCII punctuation, apostrophes (’ ʻ ʼ), hyphens (‐), middle dots (·), accents and emoji; remove ${symbols.size === 1 ? 'it' : 'them'}`;
  }
  const text = name.normalize('NFKC');
  if (inOneScript(text)) return null;
  const usual = USUAL_MIXES.some((mix) => mix.test(text));
  if (usual && text.split(' ').every((word) => inOneScript(word) || WORD_MIXES.some((mix) => mix.test(word)))) return null;
  const byScript = new Map<string, Set<string>>();
  for (const char of name) {
    const letter = [...char.normalize('NFKC')].find((folded) => !A_NAME_SIGN.test(folded));
    if (letter === undefined) continue;
    const script = (SCRIPTS.find((candidate) => candidate.letter.test(letter)) ?? SCRIPTS.find((candidate) => candidate.usedIn.test(letter)))?.name ?? 'Unknown';
    byScript.set(script, (byScript.get(script) ?? new Set()).add(char));
  }
  const scripts = [...byScript].map(([script, seen]) => `${script}: ${[...seen].map(shownLetter).join(' ')}`);
  const words = usual ? '; Japanese, Chinese and Korean letters go with Latin ones only as words of their own (Alex 李)' : '';
  return `mixes letters of more than one script (${scripts.join('; ')}): letters of two scripts can draw one person's name as another's; write the name in the letters of one script${words}`;
}

/** A person's name that arrives (an approver, a proposer): identifier(max), its letters from one script (mixedScriptProblem). */
export function personName(max: number) {
  return identifier(max).check((ctx) => {
    const problem = mixedScriptProblem(ctx.value);
    if (problem !== null) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  });
}

/**
 * The offset of the first byte of `bytes` that is not part of a UTF-8 character (bytes.length when all are), for
 * bytes a strict decoder refused, to say where. Read from the lenient decoding, which writes U+FFFD for each bad
 * sequence and decodes everything before the first exactly: every U+FFFD before that byte is one the bytes spelled
 * out (EF BF BD). A body, form or receipt file that is not UTF-8 is refused, never read leniently: the text recorded or
 * verified would not be the one sent, and bytes that differ would read as one text.
 */
export function firstByteNotUtf8(bytes: Buffer): number {
  const lenient = bytes.toString('utf8');
  let offset = 0;
  let from = 0;
  for (let at = lenient.indexOf('\ufffd'); at !== -1; at = lenient.indexOf('\ufffd', at + 1)) {
    offset += Buffer.byteLength(lenient.slice(from, at));
    if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) return offset;
    offset += 3;
    from = at + 1;
  }
  return bytes.length;
}
