// Model output made safe to record. What a model says ends up in signed journal entries and in Stripe objects,
// whose validation refuses lone surrogates and control characters (src/core/text.ts); a model can produce both.
// Nothing here refuses: the text is repaired and bounded, so validation never fails on what a model wrote.

// Tab, line feed and carriage return are layout and stay; every other C0 and C1 control character goes.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_BUT_LAYOUT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ANY_CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const LONE_SURROGATE = /\p{Surrogate}/gu;
/** What a decision's `text` may hold: well inside a proposal's limit for it (20,000), leaving room for the rest. */
export const DECISION_TEXT_MAX_CHARS = 4_000;

const REPLACEMENT = '\uFFFD';
const ELLIPSIS = '…';

/** Cuts to at most `max` UTF-16 units without splitting a surrogate pair, marking the cut with an ellipsis. */
function bounded(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - ELLIPSIS.length);
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${ELLIPSIS}`;
}

/** Free text (reasons, descriptions, what the model said): layout kept, other controls dropped, at most `max` units. */
export function cleanModelText(text: string, max: number): string {
  return bounded(text.replace(LONE_SURROGATE, REPLACEMENT).replace(CONTROL_BUT_LAYOUT, '').trim(), max);
}

/** One line (a model id): no control characters at all, no surrounding spaces; empty when nothing printable is left. */
export function cleanModelLine(text: string, max: number): string {
  return bounded(text.replace(LONE_SURROGATE, REPLACEMENT).replace(ANY_CONTROL, ' ').replace(/\s+/g, ' ').trim(), max).trim();
}
