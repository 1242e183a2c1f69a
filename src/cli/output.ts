// What the CLI puts on the terminal. Recorded text comes from callers, models and Stripe (a refund's failure reason,
// a dispute's, a note), and a receipt file from anywhere: none of it reaches the terminal raw. Every character a
// terminal would act on or hide is written as its JSON escape (showable), so a hostile string can neither move the
// cursor, clear lines nor turn text around, and JSON output stays the same JSON.
import { redactSecrets } from '../core/redact.js';
import { showable } from '../core/text.js';

/** `value` as JSON on stdout: indented, or on one line (`compact`) for output read a line at a time. */
export function printJson(value: unknown, options: { compact?: boolean } = {}): void {
  process.stdout.write(`${showable(JSON.stringify(value, null, options.compact === true ? undefined : 2))}\n`);
}

/** One line of text on stdout; a line break inside it is written escaped, so it stays one line. */
export function printLine(text: string): void {
  process.stdout.write(`${showable(text, { lineBreaks: false })}\n`);
}

/**
 * One line of text on stderr, escaped as printLine's, with its secrets masked (redactSecrets): a problem may quote a
 * setting or an error that holds a key or a URL's password, and stderr goes to terminals and collected logs.
 */
export function printProblem(text: string): void {
  process.stderr.write(`${showable(redactSecrets(text), { lineBreaks: false })}\n`);
}

/** Most characters of a key id from a receipt or the journal that a message repeats. */
const KID_SHOWN_CHARS = 80;

/** A key id as a receipt gives it, fit for the terminal: a forger chooses it, control characters and length and all. */
export function shownKid(kid: string): string {
  const shown = showable(kid, { lineBreaks: false });
  return shown.length > KID_SHOWN_CHARS ? `${shown.slice(0, KID_SHOWN_CHARS)}…` : shown;
}

/** What a command that changes something did, said if its answer cannot be written (runProgram); null before it did anything. */
let outputLost: { done: string; outcomeKnown: boolean } | null = null;

/**
 * Notes what the command did, for the line said if stdout cannot take its answer: `done` names what was changed and
 * stands, and how to read it again; `outcomeKnown` false exits 4 (recorded, its outcome not known to whoever reads the
 * exit code). Noted, the command keeps the exit code its outcome set: a change that was made does not read as failed
 * to a script that would make it again.
 */
export function whenOutputLost(done: string, outcomeKnown: boolean): void {
  outputLost = { done, outcomeKnown };
}

/** What the command noted with whenOutputLost, or null (a read: its answer was its whole job). */
export function outputLostNote(): { done: string; outcomeKnown: boolean } | null {
  return outputLost;
}
