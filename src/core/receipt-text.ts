// A receipt as text: the one way a receipt file (or standard input) is read for verify(). verify() takes the parsed
// value, and JSON.parse keeps the last of two members with the same name, so a file whose PROPOSED effect reads
// `"amount": 999999, "amount": 2000` verified as the 2000 that was signed while a person reading the file (or a
// parser that keeps the first) sees 999999. Such a text is refused here, with the path of every name given twice.
import { verify, type Verification, type VerifyOptions } from './verify.js';

/** Names given twice reported at most: one is enough to refuse the receipt. */
const MAX_REPORTED = 10;
const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
const COLON = 58;

/** An open object (its names so far, and whether a name comes next) or an open array (the index of its current element). */
type Level = { names: Set<string> | null; expectName: boolean; at: string | number };

/** Where the JSON string opening at `open` in `text` ends: its closing quote, the first one not escaped. */
function closingQuote(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  for (;;) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes += 1;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
}

/** The path of the innermost open object: the member name or index each level around it is at. */
function pathOf(levels: readonly Level[]): string {
  // The outermost level is the document itself, and the innermost is the object: neither is a step of the path.
  const parts = levels.slice(1, -1).map((level) => String(level.at));
  return parts.length === 0 ? '(root)' : parts.join('.');
}

/**
 * Every member name given twice in one object of `text`, as a sentence naming its path (at most MAX_REPORTED).
 * `text` must be JSON (JSON.parse accepted it), so the scan only tracks strings and brackets: one pass, each string
 * skipped with indexOf, a name decoded only when it holds an escape ("\u0061mount" is "amount").
 */
export function duplicateMembers(text: string): string[] {
  const found: string[] = [];
  const levels: Level[] = [{ names: null, expectName: false, at: 0 }];
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const end = closingQuote(text, i);
      const level = levels[levels.length - 1] as Level;
      if (level.names !== null && level.expectName) {
        const raw = text.slice(i + 1, end);
        const name = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        if (level.names.has(name) && found.length < MAX_REPORTED) {
          found.push(`receipt names member ${JSON.stringify(name.slice(0, 60))} twice at ${pathOf(levels)}: a JSON reader keeps one of the two values, so the file can show one nobody signed`);
        }
        level.names.add(name);
        level.at = name;
        level.expectName = false;
      }
      i = end + 1;
      continue;
    }
    if (code === OPEN_OBJECT) levels.push({ names: new Set(), expectName: true, at: '' });
    else if (code === OPEN_ARRAY) levels.push({ names: null, expectName: false, at: 0 });
    else if (code === CLOSE_OBJECT || code === CLOSE_ARRAY) levels.pop();
    else if (code === COMMA) {
      const level = levels[levels.length - 1] as Level;
      if (level.names !== null) level.expectName = true;
      else level.at = (level.at as number) + 1;
    }
    i += 1;
  }
  return found;
}

/**
 * How many member names `text` holds, counting every object, even one inside a value a later name replaced. `text`
 * must be JSON, so a string is a name exactly when a colon is the next character outside whitespace, and the search
 * for the next string always starts outside one: each string is skipped whole, found with indexOf.
 */
function namesIn(text: string): number {
  let names = 0;
  let i = text.indexOf('"');
  while (i !== -1) {
    const end = closingQuote(text, i);
    let next = end + 1;
    let code = text.charCodeAt(next);
    while (code === 32 || code === 10 || code === 13 || code === 9) code = text.charCodeAt(++next);
    if (code === COLON) names += 1;
    i = text.indexOf('"', next);
  }
  return names;
}

/** How many members the objects of a parsed JSON value hold, all together (a loop, not recursion: any depth). */
function membersIn(value: unknown): number {
  let members = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item !== 'object' || item === null) continue;
    if (Array.isArray(item)) {
      for (const element of item) if (typeof element === 'object' && element !== null) pending.push(element);
      continue;
    }
    const values = Object.values(item as Record<string, unknown>);
    members += values.length;
    for (const member of values) if (typeof member === 'object' && member !== null) pending.push(member);
  }
  return members;
}

/**
 * Whether `text`, which JSON.parse read as `value`, names a member twice in one object. Every object kept in the
 * value holds one member per distinct name its text gives, and a name given twice either repeats one (a member
 * fewer) or drops a value holding more names: so the text holds more names than the value has members exactly when
 * some object names one twice. Counting both costs a fraction of duplicateMembers, which says where (run only then).
 */
function namesSomeMemberTwice(text: string, value: unknown): boolean {
  return namesIn(text) !== membersIn(value);
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
  return { json: true, input, problems: namesSomeMemberTwice(text, input) ? duplicateMembers(text) : [] };
}

/**
 * verify() of a receipt's text, as `interlock receipt verify` reads a file: a text that is not JSON is no receipt
 * (`json: false`); a member named twice makes the receipt invalid, whatever the rest says.
 */
export function verifyReceiptText(text: string, options: VerifyOptions = {}): { json: true; verification: Verification } | { json: false; error: string } {
  const read = parseReceiptText(text);
  if (!read.json) return read;
  const verification = verify(read.input, options);
  if (read.problems.length === 0) return { json: true, verification };
  return { json: true, verification: { ...verification, valid: false, problems: [...read.problems, ...verification.problems] } };
}
