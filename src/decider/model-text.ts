// Model output made safe to record. What a model says ends up in signed journal entries and in Stripe objects,
// whose validation refuses lone surrogates and control characters (src/core/text.ts); a model can produce both.
// Nothing here refuses: the text is repaired and bounded, so validation never fails on what a model wrote.
//
// Characters a reader does not see (a direction override, a zero-width space: core/text.ts's unseen ones) are dropped
// too: valid in free text, they would make a credit's description, which Stripe shows the customer and the receipt
// signs, read otherwise than it is recorded. A prompt-injected model can write them; nobody needs them from a model.
import { showable } from '../core/text.js';

// Tab, line feed and carriage return are layout and stay; every other C0 and C1 control character goes.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_BUT_LAYOUT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ANY_CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const LONE_SURROGATE = /\p{Surrogate}/gu;
// Every unseen character is outside ASCII; only those characters are asked about.
const NOT_ASCII = /\P{ASCII}/gu;
/** What a decision's `text` may hold: well inside a proposal's limit for it (20,000), leaving room for the rest. */
export const DECISION_TEXT_MAX_CHARS = 4_000;

const REPLACEMENT = '\uFFFD';
const ELLIPSIS = '…';

/**
 * The first `max` UTF-16 units of `text` at most, one fewer where the last would be the first half of a surrogate
 * pair: a cut there would leave a lone surrogate, which has no canonical form, and a journal entry or a Stripe
 * object holding the text would be refused.
 */
export function headOf(text: string, max: number): string {
  const end = Math.min(text.length, Math.max(0, max));
  const last = text.charCodeAt(end - 1);
  return text.slice(0, end < text.length && last >= 0xd800 && last <= 0xdbff ? end - 1 : end);
}

/** `text` with each lone surrogate replaced by U+FFFD, so it has a canonical form. */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, REPLACEMENT);
}

/** Cuts to at most `max` UTF-16 units without splitting a surrogate pair, marking the cut with an ellipsis. */
function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${headOf(text, max - ELLIPSIS.length)}${ELLIPSIS}`;
}

/** `text` without the characters core/text.ts's showable would not show as they are (unseen, or C1 controls). */
function withoutUnseen(text: string): string {
  return text.replace(NOT_ASCII, (char) => (showable(char) === char ? char : ''));
}

/** Free text (reasons, what the model said): layout kept, other controls and unseen characters dropped, at most `max` units. */
export function cleanModelText(text: string, max: number): string {
  return bounded(withoutUnseen(wellFormed(text).replace(CONTROL_BUT_LAYOUT, '')).trim(), max);
}

/**
 * One line (a model id, a credit's description): no control characters at all (line breaks and tabs become spaces),
 * no unseen characters, no surrounding spaces; empty when nothing printable is left.
 */
export function cleanModelLine(text: string, max: number): string {
  return bounded(withoutUnseen(wellFormed(text).replace(ANY_CONTROL, ' ')).replace(/\s+/g, ' ').trim(), max).trim();
}
