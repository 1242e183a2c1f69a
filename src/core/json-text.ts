// A JSON text's member names, read from the text itself: JSON.parse keeps the last of two members with the same name,
// and other readers keep the first, so a text naming one twice means different things to different readers. The
// receipts reader (receipt-text.ts) and the support API's body parser refuse such a text, naming where.

/** Names given twice reported at most: one is enough to refuse the text. */
const MAX_REPORTED = 10;
export const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;
const COMMA = 44;
export const COLON = 58;

/** An open object (its names so far, and whether a name comes next) or an open array (the index of its current element). */
type Level = { names: Set<string> | null; expectName: boolean; at: string | number };

/**
 * Where the JSON string opening at `open` in `text` ends: its closing quote, the first one not escaped; the end of
 * the text when none is left (text that is not the JSON its parser read must still end the scans, never restart them).
 */
export function closingQuote(text: string, open: number): number {
  let end = text.indexOf('"', open + 1);
  for (;;) {
    if (end === -1) return text.length;
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
 * Every member name given twice in one object of `text`, with the path of that object (at most MAX_REPORTED).
 * `text` must be JSON (JSON.parse accepted it), so the scan only tracks strings and brackets: one pass, each string
 * skipped with indexOf, a name decoded only when it holds an escape ("\u0061mount" is "amount").
 */
export function membersNamedTwice(text: string): { name: string; path: string }[] {
  const found: { name: string; path: string }[] = [];
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
          found.push({ name, path: pathOf(levels) });
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
 * some object names one twice. Counting both costs a fraction of membersNamedTwice, which says where (run only then).
 */
export function namesSomeMemberTwice(text: string, value: unknown): boolean {
  return namesIn(text) !== membersIn(value);
}
