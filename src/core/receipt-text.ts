// A receipt as text: the one way a receipt file (or standard input) is read for verify(). verify() takes the parsed
// value, and JSON.parse keeps the last of two members with the same name, so a file whose PROPOSED effect reads
// `"amount": 999999, "amount": 2000` verified as the 2000 that was signed while a person reading the file (or a
// parser that keeps the first) sees 999999. Such a text is refused here, with the path of every name given twice.
// Likewise a number: JSON.parse rounds `"amount": 1999.99999999999999999` (or `2e3`) to the 2000 that was signed, while
// a reader that keeps every digit (Python's Decimal, jq 1.7+, a person) sees another amount. Every receipt this project
// writes spells each number as the canonical form does (JSON.stringify), so any other spelling is refused, saying where.
import { closingQuote, COLON, membersNamedTwice, namesSomeMemberTwice, QUOTE } from './json-text.js';
import { verify, type Verification, type VerifyOptions } from './verify.js';

/**
 * Every member name given twice in one object of `text`, as a sentence naming its path. `text` must be JSON.
 */
export function duplicateMembers(text: string): string[] {
  return membersNamedTwice(text).map(({ name, path }) => `receipt names member ${JSON.stringify(name.slice(0, 60))} twice at ${path}: a JSON reader keeps one of the two values, so the file can show one nobody signed`);
}

/** Numbers spelled otherwise reported at most: one is enough to refuse the text. */
const MAX_NUMBERS_REPORTED = 10;
const MINUS = 45;
const ZERO = 48;
const NINE = 57;
const NEWLINE = 10;
/** Digits an integer may have and still be read exactly, whatever they are: 10^15 < 2^53. */
const EXACT_DIGITS = 15;

function isNumberPart(code: number): boolean {
  // Digits, '.', 'e', 'E', '+' and '-': all a JSON number holds after its first character.
  return (code >= ZERO && code <= NINE) || code === 46 || code === 101 || code === 69 || code === 43 || code === MINUS;
}

function isSpace(code: number): boolean {
  return code === 32 || code === NEWLINE || code === 13 || code === 9;
}

/** Where offset `at` of `text` is, as a person editing the file finds it: line and column, both from 1. */
function lineAndColumn(text: string, at: number): string {
  let line = 1;
  let lineStart = 0;
  for (let next = text.indexOf('\n'); next !== -1 && next < at; next = text.indexOf('\n', next + 1)) {
    line += 1;
    lineStart = next + 1;
  }
  return `line ${line}, column ${at - lineStart + 1}`;
}

/** The member whose value starts at `at`, when `text` from the string whose quotes are at `open` and `close` to `at` is a colon and spaces. */
function memberBefore(text: string, open: number, close: number, at: number): string | null {
  let colons = 0;
  for (let i = close + 1; i < at; i += 1) {
    const code = text.charCodeAt(i);
    if (code === COLON) colons += 1;
    else if (!isSpace(code)) return null;
  }
  return colons === 1 ? (JSON.parse(text.slice(open, close + 1)) as string) : null;
}

function shortened(written: string): string {
  return written.length > 60 ? `${written.slice(0, 60)}…` : written;
}

/**
 * Every number in `text` not written as the canonical form writes it (ECMAScript's spelling of the double JSON.parse
 * reads, RFC 8785 §3.2.2.3), as a sentence saying where and what it reads as. `text` must be JSON. One pass: strings
 * are skipped whole with indexOf, and a whole number of at most EXACT_DIGITS digits, what receipts mostly hold, is
 * its own spelling, so only the others are read and written back.
 */
export function numbersSpelledOtherwise(text: string): string[] {
  const found: string[] = [];
  // The last string passed: the member name, when a number is its value.
  let nameOpen = -1;
  let nameClose = -1;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      nameOpen = i;
      nameClose = closingQuote(text, i);
      i = nameClose + 1;
      continue;
    }
    if (code !== MINUS && (code < ZERO || code > NINE)) {
      i += 1;
      continue;
    }
    const start = i;
    let digitsOnly = true;
    i += 1;
    for (let part = text.charCodeAt(i); isNumberPart(part); part = text.charCodeAt(++i)) {
      if (part < ZERO || part > NINE) digitsOnly = false;
    }
    const digits = code === MINUS ? i - start - 1 : i - start;
    // "-0" is read as 0 and written "0"; any other whole number of few digits is written as it is read.
    if (digitsOnly && digits <= EXACT_DIGITS && !(code === MINUS && text.charCodeAt(start + 1) === ZERO)) continue;
    const written = text.slice(start, i);
    const reads = String(Number(written));
    if (reads === written || found.length >= MAX_NUMBERS_REPORTED) continue;
    const member = nameOpen !== -1 ? memberBefore(text, nameOpen, nameClose, start) : null;
    const what = member === null ? 'a number' : `member ${JSON.stringify(shortened(member))}`;
    const canonical = Number.isFinite(Number(written)) ? `written ${shortened(reads)} in a receipt as exported` : 'a number no receipt holds';
    found.push(`receipt writes ${what} as ${shortened(written)} at ${lineAndColumn(text, start)}, which JSON.parse reads as ${shortened(reads)}, ${canonical}: a reader that keeps what is written (every digit, an exponent) can see a value nobody signed; export the receipt again rather than edit it`);
  }
  return found;
}

/** A receipt's text, read: its JSON value and what is wrong with the text itself, or why it is not JSON at all. */
export type ReceiptText = { json: true; input: unknown; problems: string[] } | { json: false; error: string };

/** A UTF-8 byte order mark, as some editors write first in a file: no part of the JSON value, so it is passed over. */
const BYTE_ORDER_MARK = '\uFEFF';

/**
 * Why `text` is not one JSON value, in words that say what to do: several values one per line (what `interlock
 * receipt export` prints for several receipts) are named as such; anything else is the parser's own message.
 */
function notJsonBecause(text: string, error: unknown): string {
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  if (lines.length > 1 && lines.every(parsesAlone)) {
    return `it holds ${lines.length} JSON values, one per line, as \`interlock receipt export\` prints several receipts; a file holds one receipt: export them with --dir DIR (one file each) and verify DIR/*.json`;
  }
  return error instanceof Error ? error.message : String(error);
}

function parsesAlone(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

export function parseReceiptText(raw: string): ReceiptText {
  const text = raw.startsWith(BYTE_ORDER_MARK) ? raw.slice(BYTE_ORDER_MARK.length) : raw;
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    return { json: false, error: notJsonBecause(text, error) };
  }
  const duplicates = namesSomeMemberTwice(text, input) ? duplicateMembers(text) : [];
  return { json: true, input, problems: [...duplicates, ...numbersSpelledOtherwise(text)] };
}

/**
 * verify() of a receipt's text, as `interlock receipt verify` reads a file: a text that is not JSON is no receipt
 * (`json: false`); a member named twice, or a number spelled other than as its signed form spells it, makes the
 * receipt invalid, whatever the rest says.
 */
export function verifyReceiptText(text: string, options: VerifyOptions = {}): { json: true; verification: Verification } | { json: false; error: string } {
  const read = parseReceiptText(text);
  if (!read.json) return read;
  const verification = verify(read.input, options);
  if (read.problems.length === 0) return { json: true, verification };
  return { json: true, verification: { ...verification, valid: false, problems: [...read.problems, ...verification.problems] } };
}
