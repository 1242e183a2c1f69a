// HTML built from template literals where every interpolated value is escaped unless it is already HTML made here.
// The journal holds agent and model text, Stripe's failure reasons and whatever a proposer wrote: none of it may
// ever become markup, so escaping is the default and there is no way to skip it except `html` itself. Nor may it
// change what the page shows around it: a direction override in a credit's description would draw the rest of its
// payload backwards, so characters a reader cannot see are shown as their escapes (showable), as the CLI shows them.
import { showable } from '../../src/interlock.js';

const MARK = Symbol('html');

/** A fragment of trusted HTML: made only by `html`, so its parts were escaped when it was made. */
export type Html = { readonly [MARK]: true; readonly text: string };

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: string): string {
  return showable(value).replace(/[&<>"'`]/g, (char) => ENTITIES[char] ?? char);
}

function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && (value as { [MARK]?: unknown })[MARK] === true;
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(value: Part): string {
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map((item: Part) => render(item)).join('');
  if (isHtml(value)) return value.text;
  return escapeHtml(String(value));
}

/** `html\`<p>${text}</p>\``: strings and numbers are escaped, arrays joined, fragments kept, null/false dropped. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let text = strings[0] ?? '';
  values.forEach((value, index) => {
    text += render(value) + (strings[index + 1] ?? '');
  });
  return { [MARK]: true, text };
}

export function toText(fragment: Html): string {
  return fragment.text;
}
