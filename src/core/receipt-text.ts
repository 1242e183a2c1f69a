// A receipt as text: the one way a receipt file (or standard input) is read for verify(). verify() takes the parsed
// value, and JSON.parse keeps the last of two members with the same name, so a file whose PROPOSED effect reads
// `"amount": 999999, "amount": 2000` verified as the 2000 that was signed while a person reading the file (or a
// parser that keeps the first) sees 999999. Such a text is refused here, with the path of every name given twice.
import { membersNamedTwice, namesSomeMemberTwice } from './json-text.js';
import { verify, type Verification, type VerifyOptions } from './verify.js';

/**
 * Every member name given twice in one object of `text`, as a sentence naming its path. `text` must be JSON.
 */
export function duplicateMembers(text: string): string[] {
  return membersNamedTwice(text).map(({ name, path }) => `receipt names member ${JSON.stringify(name.slice(0, 60))} twice at ${path}: a JSON reader keeps one of the two values, so the file can show one nobody signed`);
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
