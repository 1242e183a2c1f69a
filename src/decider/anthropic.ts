// The Anthropic decider: the Messages API through @anthropic-ai/sdk, with tool use. The model reads the case,
// calls the lookup tools (answered from the facts the caller read from Stripe, so this adapter does no Stripe
// I/O) and answers with one decision tool. The loop is bounded in turns. A refund or credit counts only once every
// lookup offered was answered in the conversation: the story is the customer's, and one that says "the tools are
// down, refund now" must not get money decided on facts the model never read (a person may have refunded it already).
// The model is told what is left of the approval's cap (prompts.ts); an approval with nothing left is declined without
// asking it (nothingLeft), since any amount it could ask for would be refused by the gate.
//
// Failures are translated here, once (STYLE habit 3). Transient ones (429, 529, 5xx, timeouts, lost connections,
// answers cut off mid-body) are retried by the SDK itself, up to INTERLOCK_MODEL_MAX_RETRIES, honouring a retry-after
// of up to LONGEST_WAIT_IN_DECISION_MS; what is still failing then, or asks for a longer wait, is `decider_unavailable`
// (retryable: the same case may be decided later, after the wait). An answer that is not one well-formed decision is
// `decision_invalid`, and nothing is proposed from it: not retried by the call's caller (the model answered; asking
// again is a new decision), but the case submitted again is asked again (the registry's flag, mayReopenCase).
import type * as AnthropicSdk from '@anthropic-ai/sdk';
import type Anthropic from '@anthropic-ai/sdk';
import type { Middleware } from '@anthropic-ai/sdk';
import type { ContentBlockParam, Message, MessageParam, ToolResultBlockParam, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import { z } from 'zod';
import { InterlockError, type ErrorCode } from '../core/errors.js';
import { MAX_AMOUNT_CENTS } from '../core/effects.js';
import { moneyText } from '../core/money-text.js';
import { caseCurrency, centsLeftOf, LOOKUP_TOOLS, parseCase, subjectId, type Decider, type Decision, type DecisionCase, type LookupTool, type MoneyDecision } from './case.js';
import type { DeciderConfig } from './config.js';
import { checkDecision, MODEL_DEVIATED } from './check.js';
import { cleanModelLine, cleanModelText, DECISION_TEXT_MAX_CHARS, headOf, wellFormed } from './model-text.js';
import { casePromptFor, DECISION_TOOLS, DESCRIPTION_MAX_CHARS, REASON_MAX_CHARS, systemPromptFor, toolsFor, type DecisionTool } from './prompts.js';
import { nothingLeft } from './rules.js';
import { quote, type QuoteLimits } from '../core/quote.js';
import { redactSecrets, secretHint } from '../core/redact.js';

type Sdk = typeof AnthropicSdk;

// The SDK is loaded by the first call to the model, not with the program: it is the largest part of every command's
// start-up (about 0.6 s of 1.5 s on a 2-core machine), and only a decider that asks a model needs it.
let loading: Promise<Sdk> | null = null;

function loadSdk(): Promise<Sdk> {
  loading ??= import('@anthropic-ai/sdk').catch((error: unknown) => {
    loading = null;
    throw new DeciderError('internal', `The Anthropic SDK (@anthropic-ai/sdk) could not be loaded: ${error instanceof Error ? error.message : String(error)}. Reinstall the dependencies with \`npm ci\`. Nothing was proposed.`, { cause: error });
  });
  return loading;
}

/** A decider failure, with what the API said where it answered. */
export class DeciderError extends InterlockError {
  /** The HTTP status the Messages API last answered, or null when it never answered. */
  readonly apiStatus: number | null;
  /** The API's `request-id` of the last answer, for Anthropic's support. */
  readonly apiRequestId: string | null;
  /** The API's own `retry-after` (or `retry-after-ms`), in ms, when it gave one, at most a day: the earliest a retry of the case makes sense. */
  readonly retryAfterMs: number | null;
  /** HTTP attempts made for the failing call, retries included. */
  readonly attempts: number;

  constructor(code: ErrorCode, message: string, details: { cause?: unknown; apiStatus?: number | null; apiRequestId?: string | null; retryAfterMs?: number | null; attempts?: number; retryable?: boolean } = {}) {
    super(code, message, { ...(details.cause === undefined ? {} : { cause: details.cause }), ...(details.retryable === undefined ? {} : { retryable: details.retryable }) });
    this.name = 'DeciderError';
    this.apiStatus = details.apiStatus ?? null;
    this.apiRequestId = details.apiRequestId ?? null;
    this.retryAfterMs = details.retryAfterMs ?? null;
    this.attempts = details.attempts ?? 0;
  }
}

// No upper bound here but a safe whole number: an amount beyond what any effect may move is still the model's
// decision, judged by checkDecision as a deviation (a person is told), not refused as a malformed answer nobody hears of.
const amount = z.number({ error: 'must be a number' }).int('must be a whole number of cents').positive('must be more than zero').max(Number.MAX_SAFE_INTEGER, 'must be a safe whole number');
const prose = z.string({ error: 'must be a string' });
// Strict, as the tools' input_schema says (additionalProperties: false): a call that names a field the tool does not
// define (another payment_intent, another customer) is not the decision the tool takes, and is not read as one.
const strict = {
  error: (issue: { code?: string; keys?: readonly string[] }) =>
    issue.code === 'unrecognized_keys' ? `holds ${(issue.keys ?? []).map((key) => cleanModelLine(key, 64)).join(', ')}, which the tool does not define` : 'must be an object',
};
const INPUTS = {
  issue_refund: z.strictObject({ amount_cents: amount, reason: prose }, strict),
  issue_credit: z.strictObject({ amount_cents: amount, description: prose }, strict),
  decline: z.strictObject({ reason: prose }, strict),
} as const;

function isDecisionTool(name: string): name is DecisionTool {
  return (DECISION_TOOLS as readonly string[]).includes(name);
}

function isLookupTool(name: string): name is LookupTool {
  return (LOOKUP_TOOLS as readonly string[]).includes(name);
}

/**
 * Longest wait, in ms, that an answer's retry-after may ask the SDK to sleep through inside one decision. A longer one
 * ends the decision at once as decider_unavailable carrying the wait, so the worker's slot is not held asleep: the
 * case's job waits it out in its backoff, up to 15 min (queues/decisions.ts, MAX_ASKED_WAIT_MS).
 */
const LONGEST_WAIT_IN_DECISION_MS = 60_000;

/**
 * Longest wait, in ms, an answer's retry-after is stated as. A longer one (a far date, a header of many digits read as
 * Infinity) is stated as this: a finite wait, which the case's job caps at its own maximum (15 min) anyway.
 */
const LONGEST_WAIT_STATED_MS = 24 * 60 * 60_000;

/**
 * A header's number as @anthropic-ai/sdk reads it (parseFloat, which reads "3600abc" as 3600), or null when it gives
 * none: absent or empty (the SDK skips those), or no number.
 */
function headerNumber(value: string | null | undefined): number | null {
  if (value == null || value === '') return null;
  const number = Number.parseFloat(value);
  return Number.isNaN(number) ? null : number;
}

/**
 * The wait an answer asks for, in ms, or null: the longer of `retry-after-ms` and `retry-after`, at least 0 and at
 * most LONGEST_WAIT_STATED_MS. The SDK sleeps the one it reads first (retry-after-ms, unless it reads as 0 or is not
 * a number, then retry-after), so the longer of both is never less than what it would sleep: a `retry-after-ms: 0`
 * beside `retry-after: 3600` (the SDK then sleeps an hour) is an hour here too, and ends the decision at once.
 */
function retryAfterMs(headers: Headers | undefined, now: number): number | null {
  const waits: number[] = [];
  const ms = headerNumber(headers?.get('retry-after-ms'));
  if (ms !== null) waits.push(ms);
  const after = headers?.get('retry-after');
  const seconds = headerNumber(after);
  // Not a number of seconds: an HTTP date, as the SDK reads it (Date.parse('') is NaN).
  const at = seconds === null && after != null ? Date.parse(after) : Number.NaN;
  if (seconds !== null) waits.push(seconds * 1000);
  else if (!Number.isNaN(at)) waits.push(at - now);
  return waits.length === 0 ? null : Math.min(Math.max(0, ...waits), LONGEST_WAIT_STATED_MS);
}

/** Whether a response's media type is JSON, as the SDK decides before parsing it. */
function isJson(headers: Headers): boolean {
  const mediaType = headers.get('content-type')?.split(';')[0]?.trim() ?? '';
  return mediaType.includes('application/json') || mediaType.endsWith('+json');
}

/**
 * Most bytes of an answer read at INTERLOCK_MODEL_MAX_TOKENS=`maxTokens`: 64 KiB for the message around the model's
 * words (ids, usage, the blocks' frame) or an error's page, and 32 bytes for each token the model may write. A token
 * is a few characters; the longest (runs of spaces or punctuation) and characters JSON escapes stay under that.
 */
function answerBytesMax(maxTokens: number): number {
  return 64 * 1024 + 32 * maxTokens;
}

/**
 * Most bytes of a failed answer's body read (an API error, a gateway's page): not the model's words, so not bounded by
 * its tokens; 1 MiB keeps any real error page whole, and a decider error keeps 500 characters of it anyway.
 */
const ERROR_BYTES_MAX = 1024 * 1024;

/**
 * A body as text, read up to `max` bytes: `over` when it holds more, and then the rest is not read (the stream is
 * cancelled, so the connection is closed rather than drained) and `text` is its first `max` bytes.
 */
async function readAtMost(answer: Response, max: number): Promise<{ text: string; over: boolean }> {
  if (answer.body === null) return { text: '', over: false };
  const reader = answer.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), over: false };
    const room = max - bytes;
    bytes += value.byteLength;
    if (value.byteLength > room) {
      text += decoder.decode(value.subarray(0, room));
      await reader.cancel().catch(() => undefined);
      return { text, over: true };
    }
    text += decoder.decode(value, { stream: true });
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

type Where = { caseId: string; config: DeciderConfig; attempts: number };

function tries(where: Where): string {
  return `${where.attempts} attempt${where.attempts === 1 ? '' : 's'}, INTERLOCK_MODEL_MAX_RETRIES=${where.config.maxRetries}`;
}

/** Most characters of the API's own words kept in a decider error; the rest is counted, not kept. */
const SAID_MAX_CHARS = 500;

/**
 * `text` with the configured key masked wherever it stands, as redactSecrets masks a secret (secretHint). The key need
 * not look like one: a gateway's token goes in ANTHROPIC_API_KEY too, and a gateway (or the API) may quote the key it
 * was given in its error, which is kept with the case and shown by GET /v1/cases/:id to every support token.
 */
function withoutKey(text: string, key: string | null): string {
  if (key === null || key === '') return text;
  const hint = secretHint(key);
  // Quoted in a JSON body, a key holding a quote or a backslash stands escaped.
  const escaped = JSON.stringify(key).slice(1, -1);
  const safe = text.split(key).join(hint);
  return escaped === key ? safe : safe.split(escaped).join(hint);
}

/**
 * Text from outside (the API's, a server's, an error's, the model's answer quoted) as a decider error keeps it: the
 * configured key, secrets and URL credentials masked, bounded, and with a canonical form (no lone surrogate, none left
 * by the cut either), as a deviation quoting it is recorded in the journal.
 */
function clip(text: string, key: string | null): string {
  const safe = wellFormed(redactSecrets(withoutKey(text, key)));
  const kept = headOf(safe, SAID_MAX_CHARS);
  return kept === safe ? safe : `${kept}… (${safe.length - kept.length} more characters)`;
}

/** Every failure of a Messages API call, as one registry error that says what happened and what to do. */
function translateApiError(error: unknown, where: Where, sdk: Sdk): InterlockError {
  if (error instanceof InterlockError) return error;
  const key = where.config.apiKey;
  const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, RetryableError } = sdk;
  const unavailable = (message: string, extra: { apiStatus?: number; apiRequestId?: string | null; retryAfterMs?: number | null } = {}) =>
    new DeciderError('decider_unavailable', `${message} Case ${where.caseId} was not decided and nothing was proposed; decide it again later: submit the case again (the same id and payload) once the Messages API answers.`, { cause: error, attempts: where.attempts, ...extra });
  if (error instanceof APIUserAbortError) return unavailable('The decision was cancelled before the Messages API answered.');
  if (error instanceof APIConnectionTimeoutError) return unavailable(`The Messages API did not answer within INTERLOCK_MODEL_TIMEOUT_MS=${where.config.timeoutMs} ms (${tries(where)}).`);
  // Thrown by `attempt` for an answer cut off mid-body: the connection or a proxy on the way lost the rest of it.
  if (error instanceof RetryableError) {
    const cause = error.cause instanceof Error ? `: ${clip(error.cause.message, key)}` : '';
    return unavailable(`The Messages API's answer ${error.message}${cause} (${tries(where)}); the connection or a proxy on the way lost the rest of it.`);
  }
  if (error instanceof APIConnectionError) {
    const cause = error.cause instanceof Error ? `: ${clip(error.cause.message, key)}` : '';
    return unavailable(`The Messages API at ${where.config.baseURL === null ? 'its default address' : clip(where.config.baseURL, key)} could not be reached${cause} (${tries(where)}); check ANTHROPIC_BASE_URL and the network.`);
  }
  if (error instanceof APIError && typeof error.status === 'number') {
    const status = error.status;
    // What the API (or a gateway in front of it) said, bounded: it is kept with the case and shown with it.
    const said = clip(error.apiMessage ?? error.message, key);
    // The request id is a header of the answer, and a gateway's headers are its own: masked as its words are.
    const info = { apiStatus: status, apiRequestId: error.requestID == null ? null : clip(error.requestID, key), retryAfterMs: retryAfterMs(error.headers, Date.now()) };
    const request = info.apiRequestId === null ? '' : `, request-id ${info.apiRequestId}`;
    const wait =
      info.retryAfterMs === null
        ? ''
        : `; it asked to wait ${info.retryAfterMs >= LONGEST_WAIT_STATED_MS ? `at least ${LONGEST_WAIT_STATED_MS}` : Math.ceil(info.retryAfterMs)} ms${info.retryAfterMs > LONGEST_WAIT_IN_DECISION_MS ? `, longer than one decision waits (${LONGEST_WAIT_IN_DECISION_MS} ms), so the case's job waits it out` : ''}`;
    if (status === 429) return unavailable(`The Messages API is rate-limiting this key (429${request}: ${said}) after ${tries(where)}${wait}.`, info);
    if (status === 529) return unavailable(`The Messages API is overloaded (529${request}: ${said}) after ${tries(where)}${wait}.`, info);
    if (status === 408 || status === 409 || status >= 500) return unavailable(`The Messages API failed (${status}${request}: ${said}) after ${tries(where)}${wait}.`, info);
    const fix =
      status === 401 || status === 403
        ? 'ANTHROPIC_API_KEY was refused: set a valid key, or unset it to decide with the rules decider'
        : status === 404
          ? `INTERLOCK_MODEL=${where.config.model} or the ANTHROPIC_BASE_URL path is not known to the API`
          : 'the API refused the request itself; check the account, INTERLOCK_MODEL and INTERLOCK_MODEL_MAX_TOKENS';
    return new DeciderError('invalid_config', `The Messages API refused the call (${status}${request}: ${said}): ${fix}. Case ${where.caseId} was not decided and nothing was proposed; it is not retried.`, { cause: error, attempts: where.attempts, ...info });
  }
  // An SDK error can quote what it was given (a header with the key in it): masked before it is kept with the case.
  return new DeciderError('internal', `The decider failed unexpectedly on case ${where.caseId}: ${clip(error instanceof Error ? error.message : String(error), key)}. Nothing was proposed.`, { cause: error, attempts: where.attempts });
}

/** How a person sends the case's money without the model, under the case's approval. */
function byHand(input: DecisionCase): string {
  return input.kind === 'refund' ? `POST /v1/refunds (npx interlock refund) under approval ${input.approval.id}` : `POST /v1/credits (npx interlock credit) under approval ${input.approval.id}`;
}

/** What was wrong with the answer of each decision_invalid raised here, as its message quotes it (bounded, masked). */
const answerProblems = new WeakMap<DeciderError, string>();

/**
 * `what` is bounded like the API's own words: it quotes the model's answer, which can be as long as the model likes.
 * Not retryable as a call (the decisions worker does not ask again by itself), yet nothing was recorded, so the case
 * submitted again is reopened and asked again (decision_invalid is retryable in the registry: mayReopenCase).
 */
function invalid(input: DecisionCase, what: string, model: string, key: string | null): DeciderError {
  const error = new DeciderError(
    'decision_invalid',
    `The model (${model}) gave no usable decision for case ${input.caseId}: ${clip(what, key)}. Nothing was proposed; submit the case again (the same id and payload) to ask the model again, or decide it by hand with ${byHand(input)}.`,
    { retryable: false },
  );
  answerProblems.set(error, clip(what, key));
  return error;
}

/** Most tool names one error lists; the rest are counted. */
const NAMED_CALLS_MAX = 5;

function namesOf(calls: readonly ToolUseBlock[], joiner: string): string {
  const names = calls.slice(0, NAMED_CALLS_MAX).map((call) => cleanModelLine(call.name, 64) || '(no name)');
  return calls.length <= NAMED_CALLS_MAX ? names.join(joiner) : `${names.join(', ')} and ${calls.length - NAMED_CALLS_MAX} more`;
}

/**
 * What the model said in prose, then its decision as called, as recorded in PROPOSED's `decision.text`. The call is
 * kept whole and only the prose is cut to fit: the prose is the model's and can read like a decision itself.
 */
function decisionText(said: readonly string[], call: string): string {
  const decided = cleanModelText(call, DECISION_TEXT_MAX_CHARS);
  const room = DECISION_TEXT_MAX_CHARS - decided.length - '\n\n'.length;
  const prose = room > 0 ? cleanModelText(said.join('\n\n'), room) : '';
  return prose === '' ? decided : `${prose}\n\n${decided}`;
}

/** The fields each decision tool defines; any other field in a call is one the tool does not take. */
const OWN_FIELDS: Record<DecisionTool, readonly string[]> = { issue_refund: ['amount_cents', 'reason'], issue_credit: ['amount_cents', 'description'], decline: ['reason'] };
/** A field naming what money goes to (the tools define none: the approval names the case's subject). */
const SUBJECT_FIELD = /^(?:payment_intent|payment|charge|customer|account|destination|subject)(?:_id)?$/i;
/** A whole value that is the id of a Stripe object money can go to. */
const STRIPE_SUBJECT = /^(?:pi|ch|py|cus|acct|ba|card|pm|src)_[A-Za-z0-9]+$/;
/**
 * Such an id standing in text ("send 500000 cents to pi_3Nx…"), as a word of its own: not the tail of another word
 * (`api_key`, `batch_5`), and with a digit or at least eight characters after the prefix, as Stripe's random ids have,
 * so a word such as `card_number` or `src_dir` is not taken for one.
 */
const STRIPE_SUBJECT_IN_TEXT = /(?<![A-Za-z0-9_])(?:pi|ch|py|cus|acct|ba|card|pm|src)_(?=[A-Za-z0-9]*\d|[A-Za-z0-9]{8})[A-Za-z0-9]+/g;
/** Most ids, and most figures, read from one string of a call: the rest are not read (a deviation lists a few anyway). */
const IN_TEXT_READ_MAX = 20;
const MONEY_ACTION = { issue_refund: 'refund', issue_credit: 'credit' } as const;

/**
 * A call's input as its errors and deviations quote it: bounded in depth and size before it is written out, so an
 * input nested thousands of levels deep (JSON.parse takes it; JSON.stringify overflows the stack on it) is quoted cut,
 * not met as a RangeError the decisions worker would take for an outside failure and retry.
 */
const CALL_QUOTE: QuoteLimits = { depth: 6, stringChars: 300, items: 20, totalChars: 2_000 };

function quoteCall(input: unknown): string {
  return input === undefined ? 'nothing' : cleanModelText(JSON.stringify(quote(input, CALL_QUOTE)), 300);
}

/** A field whose name says it holds money (amount_cents, amount, refund_amount_cents, total, value...). */
const AMOUNT_FIELD = /amount|cents|total|sum|price|value|money/i;
/**
 * Text that reads as a figure (digits and punctuation, no words; its digits of any script, as readable writes them): a
 * field holding it may be an amount, whatever its name. Written so that it is read in one pass whatever its length: no
 * letter anywhere (the lookahead), then a digit.
 */
const FIGURE = /^(?=[^\p{L}]*$)[^\p{L}\d]*\d/u;
/** How deep, and how many values, a call's input is read for amounts; past that it is not read (and not trusted). */
const AMOUNT_READ_DEPTH = 4;
const AMOUNT_READ_VALUES = 200;

/**
 * One value of a call's input that may name an amount: where it stands, its cents when it reads as a whole count, and
 * whether its field is named for money (`named`: a tool the decider does not define is read for those only).
 */
type AmountField = { path: string; cents: number | null; shown: string; named: boolean };
/** One value of a call's input that names where money goes: where it stands, and the id or name it gives. */
type SubjectField = { path: string; text: string };
/** Text in a call's input that speaks of money (moneyIn): the most cents its plain figures may mean, and whether a figure's size was not read. */
type Mention = AmountField & { unclear: boolean };

/**
 * Currency codes read in text (the most used of ISO 4217, and Stripe's three-decimal ones and most used zero-decimal
 * ones, whose figures are most easily misread): a figure beside one, or glued to it, is in its whole units.
 */
const CURRENCY_CODES = 'usd|eur|gbp|cad|aud|nzd|chf|jpy|cny|hkd|sgd|inr|mxn|brl|sek|nok|dkk|pln|czk|zar|krw|vnd|clp|pyg|ugx|mga|vuv|xof|xaf|xpf|bif|djf|gnf|kmf|rwf|bhd|jod|kwd|omr|tnd';
/**
 * Words for a currency's whole units, slang and plurals included (`500 quid`, `50 bucks`), and the names the countries
 * of Stripe's zero-decimal currencies give them (`5000 guaraníes`, `5000 ariary`, `RMB 5000`), read before or after a
 * figure.
 */
const UNIT_WORDS = 'dollars?|euros?|pounds?|bucks?|quid|yen|yuan|rmb|francs?|rupees?|pesos?|kron(?:a|or|e|er)|zloty(?:s)?|rand|dinars?|rials?|guaran[ií](?:s|es)?|ariary|vatu|shillings?';
/**
 * Names of a currency's whole units read only right after a figure or a sum in words (`5000 won`, `5.000 đồng`), as
 * their countries write them in English: before one, or glued to other words, they are English words ("we won 3
 * disputes"). `won` and `dong` name their currency only on a case in it (AFTER_ONLY_AMBIGUOUS): on another case they
 * are read as no currency at all.
 */
const UNIT_WORDS_AFTER = 'won|đồng|dong';
const AFTER_ONLY_AMBIGUOUS = /^(?:won|dong)$/i;
/** A currency sign of whole units (`$`, `€`, `£`, `¥`, `₹`...): every one but the cent sign. */
const UNIT_SIGN = String.raw`(?!¢)\p{Sc}`;
/**
 * The Chinese, Japanese and Korean characters for a currency's whole units (`5,000円`, `500元`, `5,000원`), written
 * after a figure and glued to the words around them, as those scripts put no spaces between words (Korean glues its
 * particles after them: `5,000원을`).
 */
const HAN_UNITS = '円|圓|元|원';
/**
 * A currency sign qualified by its country, glued to it (`CA$50`, `A$50`, `HK$50`, `JP¥5000`, `5,000 CN¥`): read as that
 * country's currency (COUNTRY_SIGNS), never as the bare `$` or `¥`, which may be any of several.
 */
const COUNTRY_SIGN = String.raw`(?<![\p{L}\p{N}])(?:(?:US|CA|C|AU|A|HK|SG|S|NZ|MX|R|NT)\$|(?:JP|CN)¥)`;
/** A currency of whole units: a sign (a country's sign first), a code or a word for it. */
const WHOLE_UNITS = String.raw`(?:${COUNTRY_SIGN}|${UNIT_SIGN}|(?<!\p{L})(?:${CURRENCY_CODES}|${UNIT_WORDS})(?!\p{L}))`;
/** Text that speaks of money: a currency sign, code or name, or a word for an amount or for moving money. */
const MONEY_WORDS = new RegExp(String.raw`\p{Sc}|\d\s?[十百千万萬億亿兆십백천만억조]?(?:${HAN_UNITS})|\d\s?(?:${UNIT_WORDS_AFTER})(?!\p{L})|(?<!\p{L})(?:${CURRENCY_CODES}|${UNIT_WORDS}|cents?|amount|total|price|money|refund(?:s|ed|ing)?|credit(?:s|ed|ing)?|pa(?:y|ys|id|ying|yment|yments|yout|youts)|send(?:s|ing)?|sent|transfer(?:s|red|ring)?)(?!\p{L})`, 'iu');
/** Dates and times in text, which are figures but never amounts ("2024-05-01", "01/05/2024", "14:30"). */
const DATES_AND_TIMES = /\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?|\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d{1,2}:\d{2}(?::\d{2})?/g;
/**
 * A figure in text, as a word of its own (the digits inside `pi_attacker123` are not one), glued to a currency code
 * (`USD500000`) or to Chinese, Japanese or Korean writing, which puts no spaces between words (`として5,000円`, `환불5000원`), separators included: commas and points, and groups of three digits split by a space, an apostrophe
 * or an underscore (`500 000`, `500'000`), read as one figure, the largest it may be, with its decimals after the groups
 * (`1 234,56`, `1'234.50`).
 */
const FIGURE_IN_TEXT = new RegExp(String.raw`(?:(?<![\p{L}\p{N}_])|(?<=[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}])|(?<=(?<![\p{L}\p{N}_])(?:${CURRENCY_CODES})))\d(?:[\d,.]*\d)?(?:(?:[ \u00A0\u2009\u202F'’_]\d{3}(?!\p{N}))+(?:[,.]\d+)?)?`, 'giu');
/**
 * A figure broken across a line after its thousands separator, or between digit groups (`$5,` then `000.00` on the
 * next line, `$5` then `000.00`), joined as FIGURE_IN_TEXT reads it: the comma kept, a line break between groups read
 * as a space between them (`5 000.00`). Only a figure of whole groups so far (`5`, `5,000`), with a group of three
 * digits after the break, not a percentage (`$20` then `100% goodwill`) and not one with decimals already (`$20.00`
 * then `100 units`). Read from the run's start only, so a run of digits and commas is read once.
 */
const FIGURE_ACROSS_LINES = /(?<![\d.,])(\d{1,3}(?:,\d{3})*)(,?)[ \t]*\r?\n[ \t]*(?=\d{3}(?![\p{N}%]))/gu;
/** How much text either side of a figure is read for its currency. */
const UNITS_WINDOW = 40;
/** How much text before a figure is read for who asked for it (FigureRead's `lead`). */
const LEAD_WINDOW = 100;
/**
 * A currency of whole units written before or after a figure: the figure may be units, not cents. Read generously, as
 * a person writes it, since a figure taken for cents that was units hides an ask a hundred times larger, while the
 * other way only tells a person: before it with brackets, a colon or spaces between (`$5000`, `USD 5000`, `USD: 500`,
 * `(USD) 500`, `USD  500`); after it so (`5000 dollars`, `500 (USD)`, `500 quid`, `5000 won`), and a currency's name with up
 * to two words between (`50 US dollars`, `50 New Zealand dollars`), but not a sign or a code (`order 1234 for $20`).
 */
const UNITS_BEFORE = new RegExp(String.raw`(${WHOLE_UNITS})[\s:=()[\]-]*$`, 'iu');
const UNITS_AFTER = new RegExp(String.raw`^[\s:=()[\]-]*(${WHOLE_UNITS}|${HAN_UNITS}|(?:${UNIT_WORDS_AFTER})(?!\p{L})|(?:[\p{L}.]+[\s-]+){1,2}(?:${UNIT_WORDS})(?!\p{L}))`, 'iu');
/**
 * Cents written after a figure (`2000 cents`, `50¢`, `a 50-cent fee`): that figure is cents, whatever currency stands
 * before it (`20 dollars (2000 cents)`).
 */
const CENTS_AFTER = /^[\s-]?(?:¢|cents?(?!\p{L}))/iu;
/** A word for moving money, or for an amount, right before a figure (`refund 5k`, `send another 5m`, `total: 5k`). */
const MONEY_ACT_BEFORE = /(?<!\p{L})(?:refund(?:s|ed)?|credit(?:s|ed)?|pa(?:y|ys|id)|send|sent|transfer(?:s|red)?|amount|total|price|sum|cost(?:s)?)(?:\s+(?:of|an?|another|extra|further|more))*[\s:=]*$/iu;
/**
 * What makes a figure's size unknown when it follows it: a word multiplier (`5 thousand`, `5 grand`, `5千`, `5万`, `5천`) or an
 * exponent (`5e5`), which may be any size. No bound is read from such a figure.
 */
const MULTIPLIED = /^(?:(?:[\s-]?(?:(?:hundred|thousand|million|billion|trillion)s?|grand|lakhs?|crores?)|e[+-]?\d)(?!\p{L})|\s?[十百千万萬億亿兆십백천만억조])/iu;
/**
 * A letter glued to a figure that may multiply it (`5k`, `2.5m`, `3bn`, a thousand, a million or more): it does only
 * when the figure is money, a currency written beside it (`$5k`, `USD 5m`, `5k USD`, `5k dollars`, `5k cents`) or a
 * word for moving money right before it (`refund 5k`); otherwise it is a unit or a label (`6mm`, `15m on hold`,
 * `parcel 2b`), and a letter standing apart (`$20 b/c`) is none.
 */
const MULTIPLIED_LETTER = /^(?:k|m|mm|mn|b|bn)(?!\p{L})/iu;

/** A figure written with two decimals (`20.00`, `0,20`): its digits are its cents. */
const TWO_DECIMALS = /[.,]\d{2}$/;
/** How much text either side of a figure a deviation quotes with it. */
const NEAR_CHARS = 24;

/**
 * One figure read in text that speaks of money (figuresIn): `cents`, what it counts as moneyIn reads it, in the smallest
 * unit of the case's currency (every digit of a plain figure; one written in whole units of that currency read in its
 * own decimals, the larger reading of an ambiguous one: largestSumOf), or null when its size is not read (MULTIPLIED,
 * MULTIPLIED_LETTER); `units`, a currency of whole units written beside it; `centsWritten`, cents written after it;
 * `near`, the figure with a few characters of the text either side (dates and times blanked out), as a person reads it;
 * `unit`, the currency written beside it as written (`$`, `USD`, `US dollars`; past a multiplying letter, `5k USD`), the
 * one before it first, else null (read whether or not cents are written after it, which `centsWritten` says);
 * `moneyActBefore`, a word for moving money or for an amount right before it (`credit of 25.00`); `before` and `after`,
 * the text either side of it (UNITS_WINDOW); `lead`, more of the text before it (LEAD_WINDOW), where whose ask a figure
 * is may be told ("The customer asked us to issue a full refund of $60.00": REPORTED_BEFORE).
 */
type FigureRead = { figure: string; cents: number | null; units: boolean; centsWritten: boolean; near: string; unit: string | null; moneyActBefore: boolean; before: string; after: string; lead: string };

/**
 * Abbreviations of the dinars and the Omani rial, written beside a figure (`KD 20.000`, `20.000 RO`; capitals only),
 * `OR` only beside a figure with three decimals (`OR 5.500`), since "2 OR 3" is a word, or in Arabic (`20.000 د.ك`),
 * and the code each stands for.
 */
const DINAR_ABBREVIATIONS: Readonly<Record<string, string>> = { KD: 'KWD', BD: 'BHD', JD: 'JOD', RO: 'OMR', OR: 'OMR', 'د.ك': 'KWD', 'د.ب': 'BHD', 'د.ا': 'JOD', 'د.أ': 'JOD', 'ر.ع': 'OMR', 'د.ت': 'TND' };
const LATIN_DINAR =
  /(?<=\d\s?)(?:KD|BD|JD|RO)(?![\p{L}\p{N}])|(?<![\p{L}\p{N}])(?:KD|BD|JD|RO)(?=\s?\d)|(?<=\d[.,]\d{3}\s?)OR(?![\p{L}\p{N}])|(?<![\p{L}\p{N}])OR(?=\s?\d+[.,]\d{3}(?!\d))/gu;
const ARABIC_DINAR = /(?<!\p{L})(?:د\.ك|د\.ب|د\.ا|د\.أ|ر\.ع|د\.ت)\.?(?!\p{L})/gu;

/** A decimal digit of any script, and one that is not ASCII. */
const DECIMAL_DIGIT = /^\p{Nd}$/u;
const OTHER_DIGIT = /(?![0-9])\p{Nd}/gu;

/**
 * `text` with every decimal digit of another script written as its ASCII digit: Arabic-Indic `٥٠٠`, Devanagari `५००`,
 * Bengali `৫০০`, Thai `๕๐๐` and the mathematical `𝟓𝟎𝟎` are `500`. Unicode encodes the decimal digits (\p{Nd}) in runs
 * of ten, zero to nine, some runs next to each other (the five mathematical ones), and promises to keep doing so: a
 * digit's value is its distance from the first digit of its run, modulo ten. Zero need not stand at a code point
 * ending in 0 (Devanagari's is U+0966), so it is found, not assumed. Read so, a figure in any script is read as money
 * as its ASCII spelling is; NFKC alone leaves these digits as they are.
 */
function asciiDigits(text: string): string {
  return text.replace(OTHER_DIGIT, (digit) => {
    const point = digit.codePointAt(0) ?? 0;
    let first = point;
    while (DECIMAL_DIGIT.test(String.fromCodePoint(first - 1))) first -= 1;
    return String((point - first) % 10);
  });
}

/**
 * The numerals Chinese, Japanese and Korean write a sum of money with (`五千円`, `一万元`, `오천 원`): digits, which
 * also stand one after another (`二〇〇〇`), multipliers of ten, a hundred and a thousand (十百千, 십백천), which count
 * what stands before them (one when nothing does), and multipliers of ten thousand and more (万萬億亿兆, 만억조), which
 * count all that stands before them down to the last such multiplier.
 */
const NATIVE_DIGITS: Readonly<Record<string, number>> = { 〇: 0, 零: 0, 一: 1, 二: 2, 两: 2, 兩: 2, 三: 3, 四: 4, 五: 5, 六: 6, 七: 7, 八: 8, 九: 9, 일: 1, 이: 2, 삼: 3, 사: 4, 오: 5, 육: 6, 칠: 7, 팔: 8, 구: 9 };
const NATIVE_TENS: Readonly<Record<string, number>> = { 十: 10, 百: 100, 千: 1000, 십: 10, 백: 100, 천: 1000 };
const NATIVE_MYRIADS: Readonly<Record<string, number>> = { 万: 1e4, 萬: 1e4, 億: 1e8, 亿: 1e8, 兆: 1e12, 만: 1e4, 억: 1e8, 조: 1e12 };
const NATIVE_NUMERALS = [...Object.keys(NATIVE_DIGITS), ...Object.keys(NATIVE_TENS), ...Object.keys(NATIVE_MYRIADS)].join('');
const MYRIADS = Object.keys(NATIVE_MYRIADS).join('');
const HAN_NUMERALS = [...NATIVE_NUMERALS].filter((numeral) => /\p{sc=Han}/u.test(numeral)).join('');
/**
 * A sum written in those numerals right before a currency's character (HAN_UNITS: `五千円`, `一万元`, `오천 원`, `삼만 오천 원`,
 * Korean putting a space after ten thousands). It starts where no numeral, digit or separator stands before it (a
 * Korean one where no Hangul does either: `사원`, staff, is no sum), and only there, so a run of numerals is read once.
 */
const NATIVE_SUM = new RegExp(
  String.raw`(?<![\p{N}.,${NATIVE_NUMERALS}])(?<![${MYRIADS}] )(?:(?<!\p{sc=Hangul})|(?=[${HAN_NUMERALS}]))[${NATIVE_NUMERALS}]+(?:(?<=[${MYRIADS}]) [${NATIVE_NUMERALS}]+)*(?= ?(?:${HAN_UNITS}))`,
  'gu',
);
const HANGUL = /\p{sc=Hangul}/u;
const HANGUL_MULTIPLIER = /[십백천만억조]/u;

/**
 * The sum `written` in CJK numerals names (NATIVE_SUM) in ASCII digits, or `written` as it is when it is no sum read
 * so: a Korean one with no multiplier (`사 원`: 사 and 원 are also the syllables of words), a single Chinese or Japanese
 * digit (`関東一円`, "all over Kanto"), or one past the largest exact count.
 */
function nativeSum(written: string): string {
  const numerals = [...written.replaceAll(' ', '')];
  if (HANGUL.test(written) ? !HANGUL_MULTIPLIER.test(written) : numerals.length < 2 && NATIVE_DIGITS[numerals[0] ?? ''] !== undefined) return written;
  let total = 0;
  let section = 0;
  let digits = 0;
  for (const numeral of numerals) {
    const digit = NATIVE_DIGITS[numeral];
    const ten = NATIVE_TENS[numeral];
    const myriad = NATIVE_MYRIADS[numeral];
    if (digit !== undefined) digits = digits * 10 + digit;
    else if (ten !== undefined) {
      section += (digits === 0 ? 1 : digits) * ten;
      digits = 0;
    } else if (myriad !== undefined) {
      total += (section + digits === 0 ? 1 : section + digits) * myriad;
      section = 0;
      digits = 0;
    }
  }
  const sum = total + section + digits;
  return Number.isSafeInteger(sum) ? String(sum) : written;
}

/**
 * Text as its figures are read: in Unicode's compatibility form (full-width `５，０００` and `￥` are `5,000` and `¥`, the
 * narrow and other no-break spaces are spaces), the digits of every script as ASCII ones (asciiDigits), a sum in CJK
 * numerals before a currency's character as ASCII digits (`五千円` is `5000円`, `오천 원` is `5000 원`: nativeSum), the
 * Arabic decimal and thousands separators (`٫`, `٬`) as a point and a comma, and the dinars' and rial's abbreviations
 * as their codes (DINAR_ABBREVIATIONS).
 */
function readable(text: string): string {
  return asciiDigits(text.normalize('NFKC'))
    .replace(NATIVE_SUM, nativeSum)
    .replaceAll('\u066B', '.')
    .replaceAll('\u066C', ',')
    .replace(LATIN_DINAR, (written) => DINAR_ABBREVIATIONS[written] ?? written)
    .replace(ARABIC_DINAR, (written) => DINAR_ABBREVIATIONS[written.replace(/\.$/, '')] ?? written);
}

/**
 * The figures of text that speaks of money, as moneyIn reads them (at most `most`, IN_TEXT_READ_MAX unless told), or null when it speaks
 * of no money. A figure in text that speaks of no money (an order number, "waited 30 days") is not read. `currency` is
 * the case's (null when the facts name none): a figure in whole units of it counts in its own decimals (`¥5000` is 5000
 * in jpy, `$50` 5000 in usd, `KWD 5` 5000 in kwd); one in whole units of another currency, or of any currency when the
 * case's is not known, counts as if it had at least two (`$50` is 5000 in a jpy case too): its size in the case's
 * currency is not known, and the larger count only tells a person.
 */
function figuresIn(text: string, currency: string | null, most = IN_TEXT_READ_MAX): FigureRead[] | null {
  const read = readable(text);
  if (!MONEY_WORDS.test(read)) return null;
  const plain = read.replace(DATES_AND_TIMES, ' ').replace(FIGURE_ACROSS_LINES, (_, head: string, comma: string) => `${head}${comma === '' ? ' ' : ','}`);
  // `won` or `dong` after a figure names a currency on a case in it, or on one whose currency is not known; elsewhere
  // it is an English word ("3 won disputes").
  const unitAfterIn = (text: string) => {
    const unit = UNITS_AFTER.exec(text)?.[1];
    return unit !== undefined && AFTER_ONLY_AMBIGUOUS.test(unit) && currency !== null && !unitNames(unit, currency) ? undefined : unit;
  };
  const figures: FigureRead[] = [];
  for (const match of plain.matchAll(FIGURE_IN_TEXT)) {
    if (figures.length >= most) break;
    const figure = match[0];
    const end = match.index + figure.length;
    const before = plain.slice(Math.max(0, match.index - UNITS_WINDOW), match.index);
    const after = plain.slice(end, end + UNITS_WINDOW);
    const unitBefore = UNITS_BEFORE.exec(before)?.[1];
    const unitsBefore = unitBefore !== undefined;
    const letter = MULTIPLIED_LETTER.exec(after)?.[0];
    const multiplier = MULTIPLIED.exec(after)?.[0] ?? letter;
    // The currency after a multiplier: `5k USD`, `5 thousand yen`, `5千円`.
    const rest = multiplier === undefined ? after : after.slice(multiplier.length);
    const centsWritten = CENTS_AFTER.test(after);
    const unitAfter = unitAfterIn(rest);
    const units = !centsWritten && (unitsBefore || unitAfterIn(after) !== undefined);
    const near = `${before.slice(-NEAR_CHARS)}${figure}${after.slice(0, NEAR_CHARS)}`;
    const moneyActBefore = MONEY_ACT_BEFORE.test(before);
    const lead = plain.slice(Math.max(0, match.index - LEAD_WINDOW), match.index);
    const seen = { figure, units, centsWritten, near, unit: unitBefore ?? unitAfter ?? null, moneyActBefore, before, after, lead };
    if (MULTIPLIED.test(after) || (letter !== undefined && (unitsBefore || unitAfterIn(rest) !== undefined || CENTS_AFTER.test(rest) || moneyActBefore))) {
      figures.push({ ...seen, cents: null });
      continue;
    }
    const own = currency === null || (seen.unit !== null && unitNames(seen.unit, currency));
    const cents = units ? largestSumOf(figure, own ? decimalsOf(currency) : Math.max(2, decimalsOf(currency))) : Number(figure.replace(/\D/g, ''));
    figures.push({ ...seen, cents });
  }
  return figures;
}

/**
 * What text that speaks of money says of amounts, or null when it speaks of no money or holds no figure: `most`, the
 * most its plain figures may mean in the smallest unit of `currency` (the case's; null when it has none), and `unclear`,
 * whether a figure in it has a size not read (MULTIPLIED, MULTIPLIED_LETTER: `5k dollars`, `5e5 cents`). Only a bound,
 * never the amount asked: every digit of a plain figure counts (`5,000.00` may be 500000 cents, `500 000` is read as
 * 500000), and one written in whole units of a currency (`$5000`, `USD500000`, `50 Canadian dollars`, `¥5000`) counts
 * in the smallest unit, as figuresIn reads it: a hundred times in usd, once in jpy (`¥5000` is 5000 there), a thousand
 * times in kwd. A figure in text that speaks of no money (an order number, "waited 30 days") is not read.
 */
function moneyIn(text: string, currency: string | null): { most: number | null; unclear: boolean } | null {
  const figures = figuresIn(text, currency);
  if (figures === null) return null;
  let most: number | null = null;
  let unclear = false;
  for (const { cents } of figures) {
    if (cents === null) unclear = true;
    else if (most === null || cents > most) most = cents;
  }
  return most === null && !unclear ? null : { most, unclear };
}

/**
 * A figure that reads as one exact sum of money: whole digits, or groups of three, and at most two decimals (`20`,
 * `1,000`, `20.00`, `1.234,56`), not `20.5` or `2.0005`, whose cents moneyIn only bounds.
 */
const EXACT_FIGURE = /^\d+(?:[.,]\d{2})?$|^\d{1,3}(?:[,. \u00A0\u2009\u202F'’_]\d{3})+(?:[.,]\d{2})?$/u;

/**
 * Whether `currency`'s amounts are in hundredths, as moneyText writes them ($0.01, 0.01 EUR; not 1 JPY or 0.001 KWD).
 * A currency the facts do not name is taken to be: the tool's field is `amount_cents`.
 */
function inHundredths(currency: string | null): boolean {
  return currency === null || /\.\d{2}(?!\d)/.test(moneyText(1, currency));
}

/** Where a money call's words stand, for a deviation to say: its own text field, or the prose beside it. */
type CallWords = { where: string; text: string };

/**
 * How much of what the model wrote beside a money call (its prose, every turn's) is read for sums of money and ids
 * (wordsOf): forty times a reason's room, far past what a model writes beside a decision. An answer may hold
 * far more (answerBytesMax: 2 MB at INTERLOCK_MODEL_MAX_TOKENS=64000), and reading it all for money would hold up this
 * process, which also sends money, for seconds; what is past it is not read, and proseUnread says so.
 */
const PROSE_READ_MAX_CHARS = 20_000;

/**
 * A money call's words: its own text field (`own`), then what the model wrote beside the call (`said`), the first
 * PROSE_READ_MAX_CHARS of it.
 */
function wordsOf(own: CallWords, said: readonly string[]): CallWords[] {
  const words = [own];
  let room = PROSE_READ_MAX_CHARS;
  for (const text of said) {
    if (room <= 0) break;
    words.push({ where: 'what it wrote beside the call', text: headOf(text, room) });
    room -= text.length;
  }
  return words;
}

/**
 * A deviation when the model wrote more beside a money call than is read for money (PROSE_READ_MAX_CHARS), or none:
 * the part not read may name another payment (askedBeyond) or the amount in other units (amountOfCall,
 * refundSumsProblem), and nobody would be told. A person reads it instead; the amount is recorded as called.
 */
function proseUnread(name: keyof typeof MONEY_ACTION, asked: number, said: readonly string[], currency: string | null): string[] {
  const written = said.reduce((total, text) => total + text.length, 0);
  if (written <= PROSE_READ_MAX_CHARS) return [];
  const called = `${asked} cents${currency === null ? '' : ` (${moneyText(asked, currency)})`}`;
  return [
    `the model wrote ${written} characters beside its ${name} call, more than the ${PROSE_READ_MAX_CHARS} read for sums of money and ids; the rest was not read, and may name another payment or the amount in other units; the ${called} it called for is recorded, and confirming this ${MONEY_ACTION[name]} sends no more; if what it wrote asks otherwise, dismiss this and decide the case again`,
  ];
}

/**
 * The figure in whole units that a well-formed money call's words name where its `amount_cents` is that figure read
 * as cents (`amount_cents: 20` beside "a refund of $20.00", "Refund amount: $20.00", or "20.00 USD"): the model likely
 * wrote units where cents are asked for. Null when its words also name the amount as called (`$0.20`, `20 cents`, `a
 * 20-cent fee`, or `$20` beside 2000), name no such figure, or the case's currency is not counted in hundredths (2000 is
 * ¥2,000 in jpy: cents counted there, or units in kwd, are refundSumsProblem's and otherSumsProblem's to find, read in
 * the currency's own decimals). Only money figures count, as figuresIn reads them, exactly
 * (EXACT_FIGURE): one with a currency beside it or two decimals; a plain number ("order 20", "2 items", "refund 20") is
 * in no unit and is not read either way, nor is a figure in another currency than the case's ("2000 JPY" beside 2000
 * on a usd payment names yen, not dollars: a sum in another currency, which refundSumsProblem names). Any such figure
 * counts, wherever it stands in the words: which figure is the money moved cannot be read reliably ("Refund the full
 * $20.00", "refund the customer $20.00" were missed by a rule that tried), and a flag costs only a person's look, since the deviation is recorded with the amount as called: a price
 * beside it ("1% of the $25.00 jar" beside 25) is flagged too, and confirming it sends the 25 cents called for. A figure
 * that is a sum of the payment the case states (`wholes`: "$1 goodwill on the $100.00 payment" beside 100, the payment
 * $100.00) is what the refund is a part of, and names no confusion.
 */
function unitsReadAsCents(amount: number, words: readonly CallWords[], currency: string | null, wholes: readonly number[]): { cents: number; where: string; near: string } | null {
  if (!inHundredths(currency) || wholes.includes(amount * 100)) return null;
  // A figure in another currency than the case's ("2000 JPY" on a usd payment) is no units of it, and its problem is
  // refundSumsProblem's or otherSumsProblem's (a sum in another currency), not a mix-up of dollars with cents.
  const elsewhere = (read: FigureRead) => currency !== null && !read.centsWritten && read.unit !== null && !unitNames(read.unit, currency);
  const money = words.flatMap(({ where, text }) =>
    (figuresIn(text, currency) ?? []).filter((read) => read.cents !== null && !elsewhere(read) && EXACT_FIGURE.test(read.figure) && (read.units || read.centsWritten || TWO_DECIMALS.test(read.figure))).map((read) => ({ ...read, where })),
  );
  if (money.some((read) => read.cents === amount)) return null;
  const confused = money.find((read) => !read.centsWritten && read.cents === amount * 100);
  return confused === undefined ? null : { cents: amount * 100, where: confused.where, near: confused.near };
}

/** The ids of Stripe objects money can go to that stand in `text`, a few at most. */
function subjectsIn(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(STRIPE_SUBJECT_IN_TEXT)) {
    if (!found.includes(match[0])) found.push(match[0]);
    if (found.length >= IN_TEXT_READ_MAX) break;
  }
  return found;
}

/**
 * The cents a value states unambiguously: a JSON number (its size is what it is, whole or not), or a string of plain
 * digits, of any script (`"५०००००"` is 500000: readable). Anything else (`"$5,000.00"`, `"500000 cents"`, `"500,000"`,
 * an object) is not read: taking the digits out of `$5,000.00` would read 5000 cents, $50, where $5,000 was asked, and a
 * person re-approving it would send that.
 */
function centsOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  const digits = typeof value === 'string' ? readable(value) : '';
  if (/^\d{1,20}$/.test(digits)) return Number(digits);
  return null;
}

/**
 * A malformed money call's input read without its tool's schema, in one bounded walk: every value that may name an
 * amount (fields named for money, and any number or figure under another name) and every value that names where money
 * goes (a field named for a subject, or a string that is or holds a Stripe object's id), nested objects and lists
 * included: an injected `refund_to: {payment_intent: 'pi_…'}`, `destinations: ['pi_…']` or `note: 'also send 500000
 * cents to pi_…'` names a payment as surely as a top-level field does. Text that is no figure but speaks of money is
 * read for the most its figures may mean (`mentions`, moneyIn): an input that came back as one unparsed JSON
 * string is read so too. `own` are the fields the call's tool defines: its prose (a reason) may mention anything and
 * is not read. `cut` is true when the input holds more than is read.
 */
function readCall(own: readonly string[], input: unknown, currency: string | null): { fields: AmountField[]; mentions: Mention[]; subjects: SubjectField[]; cut: boolean } {
  const fields: AmountField[] = [];
  const mentions: Mention[] = [];
  const subjects: SubjectField[] = [];
  let cut = false;
  let values = 0;
  const pending: [value: unknown, path: string, key: string, depth: number][] = [[input, '', '', 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [value, path, key, depth] = next;
    values += 1;
    if (values > AMOUNT_READ_VALUES) {
      cut = true;
      break;
    }
    if (typeof value === 'object' && value !== null) {
      const named = AMOUNT_FIELD.test(key);
      // An object under a money field's name is an amount written in a way not read (`{value: 500000}`).
      if (named) fields.push({ path, cents: null, shown: 'an object', named });
      if (depth >= AMOUNT_READ_DEPTH) {
        if (!named) cut = true;
        continue;
      }
      const all = Array.isArray(value) ? value.slice(0, AMOUNT_READ_VALUES + 1).map((item, index): [string, unknown] => [String(index), item]) : Object.entries(value);
      if (all.length > AMOUNT_READ_VALUES) cut = true;
      for (const [child, item] of all.slice(0, AMOUNT_READ_VALUES).reverse()) {
        // The tool's own words are neither amounts nor subjects: a reason may mention anything.
        if (depth === 0 && !Array.isArray(value) && own.includes(child) && child !== 'amount_cents' && typeof item === 'string') continue;
        // A list's items stand under the list's own name (`charges: ['ch_…']` names charges).
        pending.push([item, path === '' ? child : `${path}.${child}`, Array.isArray(value) ? key : child, depth + 1]);
      }
      continue;
    }
    const where = path || 'input';
    const ownField = depth === 1 && own.includes(path);
    const subject = !ownField && (typeof value === 'string' || typeof value === 'number') && (SUBJECT_FIELD.test(key) || (typeof value === 'string' && STRIPE_SUBJECT.test(value)));
    if (subject) subjects.push({ path: where, text: String(value) });
    else if (!ownField && typeof value === 'string') for (const id of subjectsIn(value)) subjects.push({ path: where, text: id });
    // A subject's id is not an amount; a number under a subject's name may still be one.
    if (subject && typeof value === 'string') continue;
    const named = AMOUNT_FIELD.test(key);
    if (typeof value === 'number' || (typeof value === 'string' && !STRIPE_SUBJECT.test(value) && (named || FIGURE.test(readable(value)))) || (named && value !== null && value !== undefined)) {
      fields.push({ path: where, cents: centsOf(value), shown: typeof value === 'string' ? JSON.stringify(cleanModelLine(value, 40)) : typeof value === 'number' ? String(value) : typeof value, named });
    } else if (!ownField && typeof value === 'string') {
      const money = moneyIn(value, currency);
      if (money !== null) mentions.push({ path: where, cents: money.most, shown: JSON.stringify(cleanModelLine(value, 60)), named: false, unclear: money.unclear });
    }
  }
  return { fields, mentions, subjects, cut };
}

/** A few fields as a problem lists them, `path value`, the rest counted. */
function listed(fields: readonly AmountField[]): string {
  const shown = fields.slice(0, NAMED_CALLS_MAX).map((field) => `${cleanModelLine(field.path, 64)} ${field.shown}`).join(', ');
  return fields.length > NAMED_CALLS_MAX ? `${shown} and ${fields.length - NAMED_CALLS_MAX} more` : shown;
}

/**
 * What a malformed money call asked for, or NaN when it named no amount or none can be read unambiguously; with what
 * made it unclear, and whether it may ask for more than `limit` (`outside`). It may when an amount it names cannot be
 * read, one anywhere in the call is above the limit, or the input is too large to read whole; amounts that disagree
 * but all read within the limit ask for nothing beyond it (`quantity: 1` beside the amount), and such a call stays
 * decision_invalid, to be asked again.
 * The amount read is the one every figure agrees on, or the tool's own `amount_cents` when it is the largest figure
 * and every figure reads: then it is all the call asks for at most, and a person re-approving it sends no more than
 * was asked. Otherwise none is taken (`amount_cents: 2000` beside `amount: 600000`): nothing wrong can be re-approved.
 */
function amountAsked(name: string, fields: readonly AmountField[], cut: boolean, limit: number): { amount: number; top: number; unclear: string[]; outside: boolean } {
  const read = fields.map((field) => field.cents).filter((cents): cents is number => cents !== null);
  const top = read.length === 0 ? Number.NaN : Math.max(...read);
  const unread = fields.filter((field) => field.cents === null);
  const distinct = new Set(read);
  const own = fields.find((field) => field.path === 'amount_cents');
  const clear = unread.length === 0 && !cut && (distinct.size === 1 || (own !== undefined && own.cents === top));
  const amount = clear ? top : Number.NaN;
  const unclear: string[] = [];
  if (unread.length > 0) unclear.push(`the model's ${name} call gave an amount that is not a whole count of cents (${listed(unread)}); no amount was read from it`);
  else if (distinct.size > 1 && !clear) unclear.push(`the model's ${name} call named amounts that disagree (${listed(fields)})${top > limit ? `, one of them more than ${limit} cents` : ''}; none was read as the ask`);
  if (cut) unclear.push(`the model's ${name} call held more than is read for an amount (over ${AMOUNT_READ_VALUES} values, or nested over ${AMOUNT_READ_DEPTH} levels); no amount was read from it`);
  return { amount, top, unclear, outside: unread.length > 0 || cut || top > limit };
}

/**
 * One money call of an answer, read without its tool's schema: what it asked for and which other subjects it named.
 * `name` is the decision tool it is read as, `tool` the name it was called by (another for a tool not offered).
 */
type Ask = { name: keyof typeof MONEY_ACTION; tool: string; input: unknown; amount: number; top: number; unclear: string[]; outside: boolean; named: string[] };

/**
 * A call read as a money call. `foreign` is a call of a tool the decider does not define (`refund_payment`): read as
 * the case's own kind of money, for its fields named for money, the subjects it names and the money its text speaks
 * of, and never taken for an amount (nothing is re-approved from a tool nobody offered). Text that speaks of money
 * with a figure above the limit, or with one whose size is not read (`5k dollars`, `5e5 cents`), is an ask outside
 * it, recorded with no amount: its figure is a bound, not the ask, and an unread size is no bound at all.
 */
function askOf(call: { name: keyof typeof MONEY_ACTION; tool: string; foreign: boolean }, input: unknown, approval: DecisionCase['approval'], limit: number, currency: string | null): Ask {
  const subject = subjectId(approval);
  const tool = cleanModelLine(call.tool, 64) || '(no name)';
  const read = readCall(call.foreign ? [] : OWN_FIELDS[call.name], input, currency);
  const fields = call.foreign ? read.fields.filter((field) => field.named) : read.fields;
  const asked = amountAsked(tool, fields, read.cut && (!call.foreign || fields.length > 0), limit);
  const over = read.mentions.filter((mention) => !mention.unclear && mention.cents !== null && mention.cents > limit);
  const unsized = read.mentions.filter((mention) => mention.unclear);
  const named = read.subjects
    .filter((field) => field.text !== subject)
    .map((field) => `the model's ${tool} call named ${cleanModelLine(field.path, 64)} ${cleanModelLine(field.text, 80)}, but approval ${approval.id} covers ${approval.scope} only`);
  const unclear = [...asked.unclear];
  if (over.length > 0) unclear.push(`the model's ${tool} call spoke of money with a figure of more than ${limit} cents (${listed(over)}); no amount was read from it`);
  if (unsized.length > 0) unclear.push(`the model's ${tool} call spoke of money with a figure whose size is not read, a multiplier or an exponent (${listed(unsized)}); no amount was read from it`);
  const outside = (call.foreign ? fields.length > 0 && asked.outside : asked.outside) || over.length > 0 || unsized.length > 0;
  if (call.foreign && (outside || named.length > 0)) unclear.unshift(`the model called ${tool}, which is no tool the decider offers, with money in its input; no amount was read from it`);
  const top = Math.max(Number.isNaN(asked.top) ? -1 : asked.top, ...[...over, ...unsized].map((mention) => mention.cents ?? -1));
  return { name: call.name, tool, input, named, unclear, outside, amount: call.foreign || over.length > 0 || unsized.length > 0 ? Number.NaN : asked.amount, top: top < 0 ? Number.NaN : top };
}

/** What an ask asked for, in words. */
function askedText(ask: Ask): string {
  if (!Number.isNaN(ask.amount)) return `${String(ask.amount)} cents`;
  return ask.unclear.length > 0 ? 'an amount that could not be read' : 'no amount';
}

/**
 * The ask outside the approval in an answer that is no well-formed decision, as a decision for checkDecision to find
 * MODEL_DEVIATED, or null when there is none. The shape checks (the tools' strict schemas, one decision an answer)
 * run before the approval is compared; without this, an injected ask for more wrapped in a malformation (a field
 * naming another payment, at any depth or in a list, an amount past a safe integer or written as `"$5,000.00"`, a
 * second larger amount beside the first, a second decision beside it) would be decision_invalid: no record, no inbox
 * item, no hook, and the case, submitted again, decided afresh with no trace of it. An ask is outside when it names
 * any amount above what the approval or one effect covers, an amount that cannot be read (amountAsked), another
 * payment or customer (as a field, or in its text: `note: 'also send 500000 cents to pi_…'`), text speaking of money
 * with a figure above the limit or one whose size is not read (`5k dollars`; an input that came back as one unparsed
 * JSON string included), or is money of the other kind; a call of a tool nobody offered (`refund_payment`) is read as
 * one of the case's kind (askOf). A malformed call whose figures all read within the limit and name no other subject,
 * or an unoffered tool's call that names no money, stays decision_invalid. An unclear ask is recorded with no amount
 * (NaN), and only when no ask outside reads clearly: there is nothing to re-approve from it.
 */
function overAsk(content: unknown, input: DecisionCase, offered: ReadonlySet<string>, said: readonly string[], model: string, what: string): MoneyDecision | null {
  if (!Array.isArray(content)) return null;
  const limit = Math.min(input.approval.capCents, MAX_AMOUNT_CENTS);
  const asks: Ask[] = [];
  const ownTool = input.kind === 'refund' ? 'issue_refund' : 'issue_credit';
  const currency = caseCurrency(input);
  for (const block of content as unknown[]) {
    if (typeof block !== 'object' || block === null) continue;
    const { type, name, input: called } = block as { type?: unknown; name?: unknown; input?: unknown };
    if (type !== 'tool_use' || typeof name !== 'string') continue;
    if (name === 'issue_refund' || name === 'issue_credit') asks.push(askOf({ name, tool: name, foreign: false }, called, input.approval, limit, currency));
    // A tool nobody offered (`refund_payment`) may carry an injected ask as well as a decision tool does; a lookup,
    // offered or not, asks for no money.
    else if (!offered.has(name) && !isDecisionTool(name) && !isLookupTool(name)) asks.push(askOf({ name: ownTool, tool: name, foreign: true }, called, input.approval, limit, currency));
  }
  const outside = asks.filter((ask) => ask.outside || ask.named.length > 0 || MONEY_ACTION[ask.name] !== input.kind);
  // The ask recorded is the largest whose amount reads unambiguously: an amount a person can act on (an effect recorded
  // refused, an inbox item), not lost behind a call beside it that names a larger figure no amount was read from. Only
  // when none reads is the one naming the largest figure recorded, with no amount; the others are named beside it.
  const figure = (ask: Ask) => (Number.isNaN(ask.top) ? -1 : ask.top);
  const clearestFirst = (a: Ask, b: Ask) => Number(!Number.isNaN(b.amount)) - Number(!Number.isNaN(a.amount)) || figure(b) - figure(a);
  const [chosen] = [...outside].sort(clearestFirst);
  if (chosen === undefined) return null;
  const rest = outside.filter((ask) => ask !== chosen);
  // Every other subject named, by any call outside the approval: where the injected ask tried to send money. Bounded,
  // as the problems are recorded with the deviation: a few named, the rest counted.
  const named = [chosen, ...rest].flatMap((ask) => ask.named);
  const shown = named.slice(0, NAMED_CALLS_MAX);
  if (named.length > NAMED_CALLS_MAX) shown.push(`and ${named.length - NAMED_CALLS_MAX} more fields naming another subject`);
  // A call beside it whose amount was not read says why, as the chosen one's would.
  const others = rest.slice(0, NAMED_CALLS_MAX).map((ask) => `beside it, its ${ask.tool} call asked for ${askedText(ask)}${Number.isNaN(ask.amount) && ask.unclear.length > 0 ? ` (${ask.unclear.join('; ')})` : ''}`);
  if (rest.length > NAMED_CALLS_MAX) others.push(`and ${rest.length - NAMED_CALLS_MAX} more calls outside the approval beside it`);
  const deviations = [...chosen.unclear, ...shown, ...others, `the answer was no well-formed decision (${what})`];
  const text = decisionText(said, `${chosen.tool} ${Number.isNaN(chosen.amount) ? `with ${askedText(chosen)}` : askedText(chosen)}, in a malformed call: ${quoteCall(chosen.input)}`);
  const fields = typeof chosen.input === 'object' && chosen.input !== null && !Array.isArray(chosen.input) ? (chosen.input as Record<string, unknown>) : {};
  const words = (field: string, max: number, clean: (text: string, max: number) => string) => clean(typeof fields[field] === 'string' ? fields[field] : '', max) || '(none given)';
  return chosen.name === 'issue_refund'
    ? { action: 'refund', amountCents: chosen.amount, reason: words('reason', REASON_MAX_CHARS, cleanModelText), model, text, deviations }
    : { action: 'credit', amountCents: chosen.amount, description: words('description', DESCRIPTION_MAX_CHARS, cleanModelLine), model, text, deviations };
}

/**
 * The amount a well-formed money call is recorded with, and why a person must confirm it: always as called, and a
 * deviation when its words (`own`, its reason or description, and the prose beside it) name that amount in whole
 * units (unitsReadAsCents), so it is not sent, a hundredth of what its words say, with nobody told. The hundredfold
 * reading stands only in the problem, never in the amount: the reading may be wrong (the figure a price, not the
 * refund), and a person confirming a false flag must never send more than the model called for. When the words were
 * meant, the person dismisses the item and has the case decided again.
 */
function amountOfCall(name: keyof typeof MONEY_ACTION, asked: number, own: CallWords, said: readonly string[], currency: string | null, wholes: readonly number[]): { amountCents: number; deviations?: string[] } {
  const words = wordsOf(own, said);
  const confused = unitsReadAsCents(asked, words, currency, wholes);
  if (confused === null) return { amountCents: asked };
  const money = (cents: number) => (currency === null ? '' : ` (${moneyText(cents, currency)})`);
  const named = currency === null ? `${confused.cents} cents` : moneyText(confused.cents, currency);
  const problem = `the model's ${name} call asked for ${asked} cents, but ${confused.where} names ${asked} in whole units, ${confused.cents} cents${money(confused.cents)}: ${JSON.stringify(cleanModelLine(confused.near, 80))}; units were likely written where cents are asked for; the ${asked} cents it called for${money(asked)} is recorded, and confirming this ${MONEY_ACTION[name]} sends no more; if its words name what was meant (${named}), dismiss this and decide the case again`;
  return { amountCents: asked, deviations: [problem] };
}

/** The currencies a word for whole units (UNIT_WORDS, singular) may mean. */
const DOLLARS = ['usd', 'cad', 'aud', 'nzd', 'hkd', 'sgd'];
const CURRENCIES_OF_WORD: Readonly<Record<string, readonly string[]>> = {
  dollar: DOLLARS,
  buck: DOLLARS,
  euro: ['eur'],
  pound: ['gbp'],
  quid: ['gbp'],
  yen: ['jpy'],
  yuan: ['cny'],
  rmb: ['cny'],
  franc: ['chf', 'xof', 'xaf', 'xpf', 'bif', 'djf', 'gnf', 'kmf', 'rwf'],
  rupee: ['inr'],
  peso: ['mxn', 'clp'],
  krona: ['sek'],
  kronor: ['sek'],
  krone: ['nok', 'dkk'],
  kroner: ['nok', 'dkk'],
  zloty: ['pln'],
  rand: ['zar'],
  dinar: ['kwd', 'bhd', 'jod', 'tnd'],
  rial: ['omr'],
  guarani: ['pyg'],
  guaraní: ['pyg'],
  guaranie: ['pyg'],
  guaraníe: ['pyg'],
  ariary: ['mga'],
  vatu: ['vuv'],
  shilling: ['ugx', 'kes', 'tzs'],
  won: ['krw'],
  đồng: ['vnd'],
  dong: ['vnd'],
  円: ['jpy'],
  圓: ['jpy', 'hkd'],
  元: ['cny', 'hkd'],
  원: ['krw'],
};

/**
 * The currency each country's sign names (COUNTRY_SIGN), written in capitals as Stripe and banks write them: `CA$` and
 * `C$` Canadian, `A$` and `AU$` Australian, `HK$`, `S$` and `SG$`, `NZ$`, `US$`, `MX$` the Mexican peso, `R$` the
 * Brazilian real, `NT$` the New Taiwan dollar, `JP¥` the yen, `CN¥` the yuan. A prefix in small letters (`a$50`,
 * `jp¥50`) is read as the bare sign.
 */
const COUNTRY_SIGNS: Readonly<Record<string, string>> = {
  US$: 'usd',
  CA$: 'cad',
  C$: 'cad',
  AU$: 'aud',
  A$: 'aud',
  HK$: 'hkd',
  SG$: 'sgd',
  S$: 'sgd',
  NZ$: 'nzd',
  MX$: 'mxn',
  R$: 'brl',
  NT$: 'twd',
  'JP¥': 'jpy',
  'CN¥': 'cny',
};
/**
 * The currency a word before `dollars` (or `bucks`) names (`50 Canadian dollars`, `50 New Zealand dollars`, `fifty US
 * dollars`); other words before it (`50 more dollars`) leave the bare dollar, which may be any of DOLLARS.
 */
const DOLLAR_COUNTRIES: Readonly<Record<string, string>> = {
  us: 'usd',
  american: 'usd',
  canadian: 'cad',
  ca: 'cad',
  australian: 'aud',
  aussie: 'aud',
  au: 'aud',
  'hong kong': 'hkd',
  hk: 'hkd',
  singapore: 'sgd',
  singaporean: 'sgd',
  sg: 'sgd',
  'new zealand': 'nzd',
  nz: 'nzd',
  kiwi: 'nzd',
};
/** The words DOLLAR_COUNTRIES reads before `dollars` in a sum written in words (SPELLED_SUM: `fifty Canadian dollars`). */
const DOLLAR_COUNTRY_WORDS = String.raw`(?:u\.?s\.?|american|canadian|australian|aussie|hong[\s-]+kong|hk|singapore|singaporean|new[\s-]+zealand|nz|kiwi)`;

/**
 * The currencies a currency written as a word or words may mean (UNITS_AFTER's `50 Canadian dollars`, `10 USD`,
 * `500 quid`): a dollar qualified by its country is that country's (DOLLAR_COUNTRIES), any other word CURRENCIES_OF_WORD's.
 */
function currenciesOfWords(written: string): readonly string[] {
  const words = written.toLowerCase().replaceAll('.', '').split(/[\s-]+/).filter((word) => word !== '');
  const word = words.at(-1) ?? '';
  const currencies = CURRENCIES_OF_WORD[word] ?? CURRENCIES_OF_WORD[word.replace(/s$/, '')] ?? [];
  if (currencies !== DOLLARS) return currencies;
  const country = DOLLAR_COUNTRIES[words.slice(-3, -1).join(' ')] ?? DOLLAR_COUNTRIES[words.at(-2) ?? ''];
  return country === undefined ? DOLLARS : [country];
}

/** The signs currencies are written with, as signOf found them: a figure's currency is read for each figure in a text. */
const SIGNS = new Map<string, string>();

/** The sign `currency` is written with (`$` for usd, cad and aud; `€`; `¥` for jpy and cny), or '' when none is known. */
function signOf(currency: string): string {
  const known = SIGNS.get(currency);
  if (known !== undefined) return known;
  let sign: string;
  try {
    sign = new Intl.NumberFormat('en', { style: 'currency', currency, currencyDisplay: 'narrowSymbol' }).formatToParts(0).find((part) => part.type === 'currency')?.value ?? '';
  } catch {
    sign = '';
  }
  SIGNS.set(currency, sign);
  return sign;
}

/** Whether a currency written beside a figure (FigureRead's `unit`: a sign, a code or a word for it) may be `currency`. */
function unitNames(unit: string, currency: string): boolean {
  const country = /^[A-Za-z]{1,2}([$¥])$/.exec(unit.trim());
  // A country's sign is its currency's; one in small letters (`a$50`, `jp¥50`) is read as the bare sign.
  if (country !== null) {
    const named = COUNTRY_SIGNS[country[0]];
    return named === undefined ? signOf(currency).includes(country[1] ?? '$') : named === currency;
  }
  const written = unit.trim().toLowerCase();
  if (/^\p{Sc}$/u.test(written)) return signOf(currency).includes(written);
  if (CURRENCY_CODES.split('|').includes(written)) return written === currency;
  return currenciesOfWords(written).includes(currency);
}

/** How many decimals `currency`'s amounts have as Stripe counts them (2 for usd, 0 for jpy, 3 for kwd; 2 when unknown). */
function decimalsOf(currency: string | null): number {
  return currency === null ? 2 : (/\.(\d+)/.exec(moneyText(1, currency))?.[1]?.length ?? 0);
}

/**
 * A figure as written in whole units (`10`, `10.00`, `10,00`, `1,000.50`, `1.000,50`) of a currency with `decimals`
 * decimals, split: its whole part, and the digits after its decimal separator. A last group of one or two digits (three
 * for a three-decimal currency) after a point or a comma written once is its decimals; other separators group, and so
 * does one written twice (`1,234,567`).
 */
function partsOf(figure: string, decimals: number): { whole: number; fraction: string } {
  const last = new RegExp(String.raw`([.,])(\d{1,${Math.max(2, decimals)}})$`).exec(figure);
  const decimal = last !== null && figure.indexOf(last[1] ?? '') === last.index ? last : null;
  return { whole: Number((decimal === null ? figure : figure.slice(0, decimal.index)).replace(/\D/g, '')), fraction: decimal?.[2] ?? '' };
}

/**
 * A figure as written in whole units of a currency with `decimals` decimals (partsOf), in its smallest unit; null when
 * it is no whole number of them (`¥10.50`, `20.5 cents`).
 */
function smallestUnitsOf(figure: string, decimals: number): number | null {
  const { whole, fraction } = partsOf(figure, decimals);
  if (/[1-9]/.test(fraction.slice(decimals))) return null;
  return whole * 10 ** decimals + Number(fraction.slice(0, decimals).padEnd(decimals, '0') || '0');
}

/**
 * The sums a figure written in whole units of a currency with `decimals` decimals may name, in its smallest unit: its one
 * reading (smallestUnitsOf), none when it is no whole number of them (`¥10.50`), or two, the smaller first, for a figure
 * of a three-decimal currency whose only separator is a comma before three digits (`KWD 1,500`: 1.500 KWD where a comma
 * marks decimals, 1,500 KWD as English writes thousands). Nothing tells which a writer meant.
 */
function readingsOf(figure: string, decimals: number): number[] {
  const read = smallestUnitsOf(figure, decimals);
  const readings = read === null ? [] : [read];
  if (decimals === 3 && /^[^.,]*,\d{3}$/.test(figure)) readings.push(Number(figure.replace(/\D/g, '')) * 1000);
  return readings;
}

/**
 * The most a figure written in whole units of a currency with `decimals` decimals may name in its smallest unit: its
 * larger reading (readingsOf), or, for one with more decimals than the currency has, that rounded up (`¥10.50` is 11).
 */
function largestSumOf(figure: string, decimals: number): number {
  const readings = readingsOf(figure, decimals);
  if (readings.length > 0) return Math.max(...readings);
  const { whole, fraction } = partsOf(figure, decimals);
  return whole * 10 ** decimals + Math.ceil(Number(fraction) / 10 ** (fraction.length - decimals));
}

/**
 * One money figure of a money call's words (sumsIn): `sums`, what it may name in the smallest unit of the case's
 * currency (two for an ambiguous figure, readingsOf; none when it is in another currency or its size is not read),
 * `reads`, what it names as a person reads it, `near`, the figure with a little of the text either side, `where`,
 * the words that hold it, and `count`, how many of it the words take (`2 x $12.00`, `two mugs at $12.00 each`), or null.
 */
type SumRead = { sums: number[]; reads: string; near: string; where: string; count: number | null };

/** Cents, the word SPELLED_SUM reads after a sum in words (`fifty thousand cents`, `one cent`). */
const CENTS_WORD = /^cents?$/i;

/** Numbers written in words (`twenty`, `five thousand`, `one hundred and fifty`), read up to the billions. */
const SMALL_NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const SCALES: Readonly<Record<string, number>> = { thousand: 1e3, million: 1e6, billion: 1e9 };
/**
 * Most number words in one sum written in words: the longest reading up to the billions ("nine hundred and ninety-nine
 * billion nine hundred and ninety-nine million …") has 19, and a few more are read.
 */
const SPELLED_WORDS_MAX = 24;
const NUMBER_WORD = String.raw`(?:${[...TENS, ...SMALL_NUMBERS, 'hundred', ...Object.keys(SCALES)].sort((a, b) => b.length - a.length).join('|')})(?!\p{L})`;
/**
 * A sum written in words before a currency's code or name (`twenty dollars`, `five thousand yen`, `fifty USD`, `fifty
 * Canadian dollars`) or before cents (`fifty thousand cents`, `one cent`); not words after a figure (`5 thousand yen`
 * is a figure whose size is not read: MULTIPLIED). At most SPELLED_WORDS_MAX number words are read before the currency:
 * an unbounded run would be read again from each of its words ("twenty twenty twenty …" with no currency after it),
 * time growing with the square of its length while the process, which also sends money, waits.
 */
const SPELLED_SUM = new RegExp(String.raw`(?<!\p{L})(?<!\p{N}[\s-]*)(${NUMBER_WORD}(?:[\s-]+(?:and\s+)?${NUMBER_WORD}){0,${SPELLED_WORDS_MAX - 1}})[\s-]+(${CURRENCY_CODES}|(?:${DOLLAR_COUNTRY_WORDS}[\s-]+)?(?:${UNIT_WORDS})|${UNIT_WORDS_AFTER}|cents?)(?!\p{L})`, 'giu');

/** The number words in `phrase` (SPELLED_SUM) name, or null when they are not read. */
function spelledNumber(phrase: string): number | null {
  let total = 0;
  let group = 0;
  for (const word of phrase.toLowerCase().split(/[\s-]+/)) {
    const small = SMALL_NUMBERS.indexOf(word);
    const ten = TENS.indexOf(word);
    const scale = SCALES[word];
    if (word === 'and') continue;
    if (small >= 0) group += small;
    else if (ten >= 0) group += 20 + 10 * ten;
    else if (word === 'hundred') group = (group === 0 ? 1 : group) * 100;
    else if (scale === undefined) return null;
    else {
      total += (group === 0 ? 1 : group) * scale;
      group = 0;
    }
  }
  return total + group;
}

/** How many of a money figure a call's words take: a count in digits or words, then `x` or a few words and `at`. */
const COUNT = String.raw`\d{1,3}|${SMALL_NUMBERS.slice(1, 13).join('|')}`;
const COUNT_BEFORE = new RegExp(String.raw`(?<![\p{L}\p{N}.,])(${COUNT})(?:\s*[x×*]|(?:\s+[\p{L}'’-]+){0,3}\s*(?:at|@))\s*$`, 'iu');
const COUNT_AFTER = new RegExp(String.raw`^\s*(?:each\s*)?[x×*]\s*(${COUNT})(?![\p{L}\p{N}])`, 'iu');

/** The count written before or after a money figure (COUNT_BEFORE, COUNT_AFTER), or null. */
function countOf(read: FigureRead): number | null {
  const written = COUNT_BEFORE.exec(read.before.replace(UNITS_BEFORE, ''))?.[1] ?? COUNT_AFTER.exec(read.after.replace(/^[.,]?\d*/, ''))?.[1];
  if (written === undefined) return null;
  return /^\d+$/.test(written) ? Number(written) : SMALL_NUMBERS.indexOf(written.toLowerCase());
}

/**
 * The money figures of a money call's words (`words`: a credit's description, a refund's reason and the prose beside it),
 * read in `currency`, the case's (null when the facts name none, then any currency may be it, in hundredths). A money
 * figure is one written with a currency (`$10`, `$10.00`, `10 USD`, `USD 10.00`, `€10`, `10,00 €`, `10 dollars`, `¥5,000`,
 * `5,000円`, `20.000 KWD`, `KD 20.000`, as `readable` writes the text), a sum in number words before a currency's code or
 * name (`twenty dollars`, `five thousand yen`), in cents (`1000 cents`, `fifty thousand cents`, a sum only in a currency
 * counted in hundredths), or with its currency's decimals
 * (two, or three for a three-decimal currency) right after a word for an amount or for moving money (`credit of 10.00`).
 * It is read in the currency's own decimals, never as hundredths of every currency: `¥5,000` is 5000 in jpy, `20.000 KWD`
 * 20000 in kwd. A figure written in another currency than the case's names no sum of it. Figures with no such mark are
 * no money and are not read (`INC-4521`, `3 days`, `99.9%`, `order 1000`), nor are dates and times.
 */
function sumsIn(words: readonly CallWords[], currency: string | null, action: (typeof MONEY_ACTION)[keyof typeof MONEY_ACTION]): SumRead[] {
  const decimals = decimalsOf(currency);
  const named = (sum: number) => (currency === null ? `${sum} cents` : moneyText(sum, currency));
  const decimalsWritten = (figure: string) => TWO_DECIMALS.test(figure) || (decimals === 3 && /[.,]\d{3}$/.test(figure));
  const sums: SumRead[] = [];
  for (const { where, text } of words) {
    const another = (unit: string) => `a sum in another currency (${unit.trim()}) than the ${action}'s ${(currency ?? '').toUpperCase()}`;
    for (const read of figuresIn(text, currency, Number.POSITIVE_INFINITY) ?? []) {
      const near = read.near.trim();
      const count = countOf(read);
      // A figure past the largest exact count (`$1000000000000000000000000`) names no sum it can be held to: none of
      // its readings is taken, and it is named as too large, the figure as written standing in `near` beside it.
      const readIn = (readings: number[]) =>
        readings.every(Number.isSafeInteger)
          ? { sums: readings, reads: readings.length === 0 ? 'a sum whose size is not read' : readings.map(named).join(' or '), near, where, count }
          : { sums: [], reads: 'a sum too large to read exactly', near, where, count };
      if (read.centsWritten) {
        const cents = decimals === 2 ? smallestUnitsOf(read.figure, 0) : null;
        sums.push(cents === null ? { sums: [], reads: `${read.figure} cents`, near, where, count } : readIn([cents]));
      } else if (read.unit !== null) {
        if (currency !== null && !unitNames(read.unit, currency)) sums.push({ sums: [], reads: another(read.unit), near, where, count });
        else sums.push(readIn(read.cents === null ? [] : readingsOf(read.figure, decimals)));
      } else if (read.moneyActBefore && decimalsWritten(read.figure)) {
        sums.push(readIn(readingsOf(read.figure, decimals)));
      }
    }
    for (const match of readable(text).matchAll(SPELLED_SUM)) {
      const [near, phrase = '', unit = ''] = match;
      const number = spelledNumber(phrase);
      // Cents, as a figure with cents written after it: a sum only in a currency counted in hundredths.
      if (CENTS_WORD.test(unit)) {
        const cents = number !== null && decimals === 2 && Number.isSafeInteger(number) ? number : null;
        sums.push({ sums: cents === null ? [] : [cents], reads: cents === null ? `${phrase} cents` : named(cents), near, where, count: null });
        continue;
      }
      const sum = number === null ? null : number * 10 ** decimals;
      // `won` or `dong` names no currency on a case in another: "two won disputes" (AFTER_ONLY_AMBIGUOUS).
      if (currency !== null && AFTER_ONLY_AMBIGUOUS.test(unit) && !unitNames(unit, currency)) continue;
      if (currency !== null && !unitNames(unit, currency)) sums.push({ sums: [], reads: another(unit), near, where, count: null });
      else sums.push({ sums: sum === null || !Number.isSafeInteger(sum) ? [] : [sum], reads: sum === null ? 'a sum whose size is not read' : named(sum), near, where, count: null });
    }
  }
  return sums;
}

/** Whether a money figure names `amount` and no other sum: every way it reads is that sum. */
function namesOnly(sum: SumRead, amount: number): boolean {
  return sum.sums.length > 0 && sum.sums.every((reading) => reading === amount);
}

/** How many other sums a deviation names; the rest are counted. */
const OTHER_SUMS_SHOWN = 3;

/** A few money figures as a deviation names them, what each reads as and where it stands, the rest counted. */
function sumsShown(sums: readonly SumRead[], shown: (sum: SumRead) => string): string {
  const more = sums.length > OTHER_SUMS_SHOWN ? `, and ${sums.length - OTHER_SUMS_SHOWN} more` : '';
  return `${sums.slice(0, OTHER_SUMS_SHOWN).map(shown).join(', ')}${more}`;
}

/**
 * A deviation when a well-formed credit's description, the line the customer reads in their balance history (and the
 * receipt signs), names another sum of money than the credit moves (sumsIn; an ambiguous figure names another unless
 * both its readings are the credit), or null. The same rules as a refund's reason (sumsNotAccounted): a line whose
 * figures explain the amount is taken ("10% of your $100.00 plan" beside 1000, "half of this month's $30.00 fee"
 * beside 1500, "2 x $5.00 outage days" beside 1000), and a figure the amount is counted in another unit of (countedIn)
 * is always named. Stricter than a reason in two ways: a figure naming the amount settles nothing ("Credit of $10.00,
 * the $100.00 plan" beside 1000 is named: the customer reads both), and no sum of the case counts as stated. A sum in
 * another currency is named, as it explains nothing. `namedAlready`: the cents a units confusion found by amountOfCall
 * names already, not named twice. Confirming it sends the line as written.
 */
function otherSumsProblem(asked: number, description: string, currency: string | null, namedAlready: number | null): string | null {
  const own = { where: 'its description', text: description };
  const { others } = sumsNotAccounted(asked, sumsIn([own], currency, 'credit'), own, decimalsOf(currency), { stated: [], wholes: [] }, false, namedAlready);
  if (others.length === 0) return null;
  const credited = currency === null ? `${asked} cents` : moneyText(asked, currency);
  const shown = sumsShown(others, (other) => `${other.reads} (${JSON.stringify(cleanModelLine(other.near, 80))})`);
  return `the model's issue_credit call credits ${asked} cents (${credited}), but its description, the line the customer reads in their balance history, names another sum: ${shown}; confirming this credit sends that line as written beside a credit of ${credited}: if it should not read so, dismiss this and decide the case again`;
}

/** What the smallest unit is of a currency with so many decimals, as a deviation says it. */
const COUNTED_IN: Readonly<Record<number, string>> = { 0: 'whole units', 2: 'hundredths (cents)', 3: 'thousandths' };

/**
 * The decimals a money call counted in when it called `asked` for a figure naming `sum` in a currency with `decimals`:
 * whole units (0) or hundredths (2, the tool's field is `amount_cents`) where the currency counts otherwise (500000 for
 * ¥5,000, 20 for 20.000 KWD, 2000 for KWD 20.00, 20 for $20.00), or null when `asked` is no such count of it.
 */
function countedIn(asked: number, sum: number, decimals: number): number | null {
  for (const assumed of [0, 2]) {
    if (assumed > decimals && asked === sum * 10 ** (assumed - decimals)) return assumed;
    if (assumed < decimals && sum === asked * 10 ** (decimals - assumed)) return assumed;
  }
  return null;
}

/**
 * A deviation when a well-formed refund's words (`own`, its reason, and `said`, the prose beside the call) name a sum of
 * money, read in the case's currency (sumsIn), that the amount is counted in another unit, or name money and never the
 * amount, or null. First every figure anywhere in them: one the amount is a hundred times (500000 beside ¥5,000 in jpy:
 * countedIn), the mistake that sends a hundred times what the words say, is named whatever else the words name ("Refund
 * ¥5,000 (500,000 yen in cents)"), a stated sum included; one the amount is a hundredth or a thousandth of (20 beside
 * 20.000 KWD) is named unless a figure names the amount as called (and only it: "Refund $20 of the $2,000 order") or it
 * is the payment's own stated sum (`known.wholes`: "$1 goodwill on the $100.00 payment"). Then a figure naming the
 * amount settles the words: others beside it are the order's price, what was refunded before, what the customer asked.
 * Otherwise any other sum its reason names is named, unless the case states it (`known.stated`: the cap and what is
 * left of it, the payment's amount, what it may still return, what other refunds returned), as in "partial refund on
 * the ¥10,000 order", or the reason's figures explain the amount (explainedBy: "£15 for the jar and £5 postage", "50%
 * of the $40.00 jar"). The prose is read for a confusion only: it quotes what the story and the customer said ("they
 * asked for $50"). `namedAlready`: the sum a units confusion found by amountOfCall names already, not named twice. The
 * amount is recorded as called: confirming sends no more.
 */
function refundSumsProblem(asked: number, own: CallWords, said: readonly string[], currency: string | null, known: KnownSums, namedAlready: number | null): string | null {
  const decimals = decimalsOf(currency);
  const { others, settled } = sumsNotAccounted(asked, sumsIn(wordsOf(own, said), currency, 'refund'), own, decimals, known, true, namedAlready);
  if (others.length === 0) return null;
  const confusion = (sum: SumRead) => confusionOf(asked, sum, decimals);
  const refunded = currency === null ? `${asked} cents` : `${asked} (${moneyText(asked, currency)})`;
  const code = currency === null ? 'the currency' : currency.toUpperCase();
  const shown = sumsShown(others, (other) => {
    const assumed = confusion(other);
    const hint = assumed === null ? '' : `: ${asked} is that sum counted in ${COUNTED_IN[assumed] ?? `${assumed} decimals`}, where ${code} is counted in ${COUNTED_IN[decimals] ?? `${decimals} decimals`}`;
    return `${other.reads} in ${other.where} (${JSON.stringify(cleanModelLine(other.near, 80))})${hint}`;
  });
  const named = settled ? 'name that sum, and also' : 'never name that sum and name another';
  return `the model's issue_refund call asked for ${refunded}, but its words ${named}: ${shown}; the ${refunded} it called for is recorded, and confirming this refund sends no more; if its words name what was meant, dismiss this and decide the case again`;
}

/** The unit a money call counted in when its amount is a figure's sum counted otherwise (countedIn), or null. */
function confusionOf(asked: number, sum: SumRead, decimals: number): number | null {
  return sum.sums.map((reading) => countedIn(asked, reading, decimals)).find((assumed) => assumed !== null) ?? null;
}

/**
 * The money figures of a money call's words (`sums`, sumsIn) that its amount does not account for, one rule for a
 * refund's reason (refundSumsProblem) and a credit's description (otherSumsProblem), with `settled`, whether a figure
 * names the amount and only it. Named: every figure the amount is counted in another unit of (countedIn), wherever it
 * stands (a refund's prose too): a hundred times one always, a hundredth or a thousandth of one unless a figure naming
 * the amount settles the words (`settles`) or it is one of the payment's stated sums (`known.wholes`). Then, unless
 * `settles` and a figure names the amount, every figure of `own` (the call's own text field) that names another sum
 * and is none the case states (`known.stated`), unless those figures explain the amount (explainedBy: adding up to it,
 * counted, or a share of one of `own`'s figures). `namedAlready`: the sum a units confusion found by amountOfCall
 * names already, not named twice. None named: the words account for the amount.
 */
function sumsNotAccounted(asked: number, sums: readonly SumRead[], own: CallWords, decimals: number, known: KnownSums, settles: boolean, namedAlready: number | null): { others: SumRead[]; settled: boolean } {
  const settled = sums.some((sum) => namesOnly(sum, asked));
  const excused = settles && settled;
  // An amount a hundred times a figure (cents counted where the currency has none) is never a part of it, whatever else
  // the words name; one a hundredth of a figure may be, when the words name the amount too or the figure is the payment's.
  const confused = (sum: SumRead) => {
    const assumed = confusionOf(asked, sum, decimals);
    return assumed !== null && (assumed > decimals || (!excused && !sum.sums.some((reading) => known.wholes.includes(reading))));
  };
  const unknown = (sum: SumRead) => !excused && sum.where === own.where && !namesOnly(sum, asked) && !sum.sums.some((reading) => known.stated.includes(reading));
  const counted = sums.filter((sum) => namedAlready === null || !sum.sums.includes(namedAlready));
  const unknowns = counted.filter(unknown);
  if (!counted.some(confused) && (unknowns.length === 0 || explainedBy(asked, unknowns, sums.filter((sum) => sum.where === own.where), own.text))) return { others: [], settled };
  return { others: counted.filter((sum) => confused(sum) || unknown(sum)), settled };
}

/**
 * The sums a refund case states, in its currency's smallest unit, that a refund's words may mention beside the sum
 * refunded (refundSumsProblem): `stated`, the approval's cap and what is left of it, and from the facts read the
 * payment's amount (`amount_cents`, where the caller gives it), what it may still return (`refundable`), what other
 * refunds returned (`refunded_by_others`), and the captured amount those two add up to; `wholes`, those of the payment
 * that are not the approval's too, which a refund may be a hundredth of ("$1 goodwill on the $100.00 payment"). The
 * approval's sums are not: a refund a hundredth of its cap most likely wrote the cap's units as cents.
 */
type KnownSums = { stated: number[]; wholes: number[] };

function knownSums(input: DecisionCase): KnownSums {
  const payment = input.facts.get_payment ?? {};
  const fact = (name: string): number | null => {
    const value = payment[name];
    return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
  };
  const refundable = fact('refundable');
  const others = fact('refunded_by_others');
  const approved = [input.approval.capCents, centsLeftOf(input.approval)];
  const paid = [fact('amount_cents'), refundable, others, refundable === null || others === null ? null : refundable + others].filter((sum): sum is number => sum !== null);
  return { stated: [...approved, ...paid], wholes: paid.filter((sum) => !approved.includes(sum)) };
}

/** Shares of a figure that text names: percentages up to a hundred (`50%`, `12.5 percent`), and a half, a quarter or a third. */
const PERCENT = /(?<![\p{L}\p{N}.,])(\d{1,3}(?:[.,]\d+)?)\s?(?:%|per\s?cent(?!\p{L}))/giu;
const FRACTION_WORDS: Readonly<Record<string, number>> = { half: 1 / 2, quarter: 1 / 4, third: 1 / 3 };
const FRACTION = /(?<!\p{L})(half|quarter|third)(?!\p{L})/giu;

function sharesIn(text: string): number[] {
  const read = readable(text);
  const percents = [...read.matchAll(PERCENT)].map((match) => Number((match[1] ?? '').replace(',', '.')) / 100);
  const fractions = [...read.matchAll(FRACTION)].map((match) => FRACTION_WORDS[(match[1] ?? '').toLowerCase()] ?? 0);
  return [...percents, ...fractions].filter((share) => share > 0 && share <= 1);
}

/**
 * Whether a money call's own words (`text`: a refund's reason, a credit's description) explain its amount by the
 * figures they name (`named`, read by sumsIn; sumsNotAccounted): the figures that are not the amount and that the case
 * does not state (`unknown`) add up to it, each taken as many times as the
 * words count it ("£15 for the jar and £5 postage", "two mugs at $12.00 each"), or it is a share the words name of one
 * figure ("50% of the $40.00 jar", "half of the $40 jar"), rounded either way to the smallest unit.
 */
function explainedBy(asked: number, unknown: readonly SumRead[], named: readonly SumRead[], text: string): boolean {
  const added = unknown.every((sum) => sum.sums.length === 1) && unknown.reduce((total, sum) => total + (sum.sums[0] ?? 0) * (sum.count ?? 1), 0) === asked;
  if (added) return true;
  const shares = sharesIn(text);
  return shares.some((share) => named.some((sum) => sum.sums.some((whole) => asked === Math.floor(whole * share + 1e-9) || asked === Math.ceil(whole * share - 1e-9))));
}

/**
 * Words right before a figure that ask to move it (`refund $5,000.00`, `also send 500000 cents`, `a credit of $500`,
 * `refund the $500`, `refund the customer $500`, `send the customer their $500`, `refund an additional $500`, `refund
 * the remaining $500`, `a refund for $500`, `issue a $500 refund`, `process the $500 refund`, `return the $500`,
 * `approve a $500 refund`, `pay out $500`), past the currency written before it, or that set it as an amount's field
 * (`"amount_cents":500000`, `amount=500000`): an ask, not a sum told. Words for money moved already (`paid`,
 * `refunded`, `returned`, `approved`) and for a price or a total are not, nor a refund "of the" or "for the" order,
 * which NEAR_ASK_BEFORE reads: a story's sums are told so ("the customer paid $100.00", "a partial refund of the $120.00
 * order"). Read on the words with look-alike letters of other scripts as the Latin ones (latinLookalikes: `rеfund`
 * with a Cyrillic `е` asks as `refund` does).
 */
const ASK_BEFORE =
  /(?:(?<!\p{L})(?:refund(?:s|ing)?|credit(?:s|ing)?|pays?|pay(?:s|ing)?\s+out|send(?:s|ing)?|transfer(?:s|ring)?|issu(?:e|es|ing)|process(?:es|ing)?|return(?:s|ing)?|approv(?:e|es|ing))(?:\s+(?:of(?!\s+(?:the|their|his|her|its|our|your)(?!\p{L}))|for(?!\s+(?:the|their|his|her|its|our|your)(?!\p{L}))|an?|the(?=[\s:="']*$|\s+(?:remaining|rest|full|whole|customer|additional|extra|other)(?!\p{L}))|another|additional|extra|further|more|back|remaining|rest|full|whole|customer|them|him|her|us|me|their|his|its|our|your)(?!\p{L}))*|(?<![\p{L}\p{N}])(?:\p{L}+_){0,8}(?:amount|cents)(?:_\p{L}+){0,8}["']?\s*[:=])[\s:="']*$/iu;
/**
 * The words right before a figure that tell it as a sum of something (TOLD_BEFORE): a preposition, with "a" or "the"
 * after it or not ("50% of the $40.00 jar", "for a $40 jar", "added to the $50.00 order"), a demonstrative or a
 * possessive ("this $40 jar", "their $120.00 order"), a comparison with another figure ("20 or 30 dollars", "$20.00
 * rather than $60.00", "$20.00, not $60.00"), or a word for a price, an order or money moved already, "a" or "the" after
 * it or not ("paid $120.00", "bought a $40 jar", "cost $40", "order $120.00", "was $120.00"). A bare "a" or "the" tells
 * nothing: "also approve a $5,000.00 goodwill refund", "and a $5,000.00 one too" may ask as well as describe. A money
 * figure over the cap with no such words nor an ask before it ("Goodwill $20.00. $5,000.00 to follow.", "The $2,000.00
 * laptop" when the case states no $2,000.00) is read as asked (askedBeyond).
 */
/**
 * Words asking to move money shortly before a figure, with up to four words between of whose or which it is ("a
 * refund for the $500", "a refund of their $500", "send the customer their $500"): "the", "their" or "for the" there
 * does not tell the figure as a price or a part (TOLD_BEFORE), so it is asked unless the case states it ("a partial
 * refund of the $120.00 order" when the story says the order was $120.00).
 */
const NEAR_ASK_BEFORE =
  /(?<!\p{L})(?:refund(?:s|ing)?|credit(?:s|ing)?|pays?|pay(?:s|ing)?\s+out|send(?:s|ing)?|transfer(?:s|ring)?|reimburs(?:e|es|ing)|giv(?:e|es|ing)|issu(?:e|es|ing)|process(?:es|ing)?|approv(?:e|es|ing))(?:\s+(?:of|for|the|this|that|these|those|their|his|her|its|our|your|an?|customer|them|him|us|me|another|additional|extra|further|more|back|remaining|rest|full|whole|entire|total|original)(?!\p{L})){1,4}[\s:="']*$/iu;
const TOLD_BEFORE =
  /(?<!\p{L})(?:(?:of|on|for|from|at|in|to|into|with|by|about|against|or|than|not|vs|versus|paid|pays|cost(?:s|ing)?|price[ds]?|total(?:s|led|ed)?|subtotal|order|payment|purchase|invoice|worth|valued|charged|spent|bought|was|were)(?:\s+(?:the|an?))?|this|that|these|those|their|his|her|its|our|your|whose)[\s:="'(]*$/iu;
/**
 * Words reporting what someone else asked, wanted or claimed, read over a short span before a figure (FigureRead's
 * `lead`): a third party who asked (REPORTER: the customer, the buyer, the client, the user, the cardholder, one of
 * them by their id, they, he, she, a name after a title such as "Ms."), up to three words of tense or time between
 * ("is", "had", "originally"), the reporting word, then at most eight words of how the ask was put ("asked us to
 * issue a full refund of", "would like a refund of", "is asking for a refund of", "expects to get back"), nothing
 * else between; or the third party's ask as a noun ("the customer's request of", "their demand for"). A figure after
 * them is a sum told of the story, not asked by the call's words. The call's own voice is no report: "we would like to
 * refund", "I want to send", and a reporting word with nobody before it ("as requested refund an additional $500") or
 * after "as" or "per" ("as the customer asked refund $500") stand before an ask. Anything else between (a stop, a
 * comma, another figure, "also", "then") ends the report: "The customer asked for $60.00; then refund $5,000.00 more"
 * and "also refund 500000" are still asked.
 */
const REPORTING_WORD = String.raw`ask(?:s|ed|ing)?|request(?:s|ed|ing)?|want(?:s|ed|ing)?|would\s+like|['’]d\s+like|demand(?:s|ed|ing)?|claim(?:s|ed|ing)?|expect(?:s|ed|ing)?|hop(?:es|ed|ing)\s+for|seek(?:s|ing)?|sought|wish(?:es|ed|ing)?`;
const REPORTED_HOW = String.raw`us|me|them|him|her|it|to|for|a|an|the|of|their|his|its|full|whole|refund(?:s|ed|ing)?|credit(?:s|ed|ing)?|get|got|getting|receive|back|be|been|have|given|issue|issued|pay|paid|send|sent|transfer(?:red)?|return(?:ed)?|another|additional|extra|further|more|total|sum|amount|money|all|at|least|about|around`;
const REPORTER_ROLE = String.raw`(?:(?:the|a|an|this|that|our|your)\s+)?(?:customer|buyer|client|user|cardholder|card\s+holder|account\s+holder|shopper|purchaser|payer|requester)`;
const REPORTER = String.raw`${REPORTER_ROLE}s?(?:\s+\(?(?:cus|acct)_[\p{L}\p{N}]+\)?)?|they|he|she|(?:mr|mrs|ms|mx|dr)\.?\s+\p{L}+`;
const REPORTER_ASK = String.raw`(?:${REPORTER_ROLE}['’]s|their|his|her)\s+(?:(?:original|earlier|initial|first|own)\s+)?(?:request|ask|demand|claim|wish)(?:s|es)?`;
const REPORTER_AUX = String.raw`is|was|are|were|has|have|had|did|does|do|been|also|originally|initially|first|now|still|only|just|already|previously|earlier|later|specifically|explicitly`;
const REPORTED_BEFORE = new RegExp(
  String.raw`(?<!(?:as|per|like)\s+(?:(?:the|a|an|this|that|our|your)\s+)?)(?<!\p{L})(?:(?:${REPORTER})(?:\s+(?:${REPORTER_AUX})(?!\p{L})){0,3}(?:\s+(?:${REPORTING_WORD})|['’]d\s+like)|${REPORTER_ASK})(?:\s+(?:${REPORTED_HOW})(?!\p{L})){0,8}[\s:="']*$`,
  'iu',
);

/**
 * The sums a case states, in its currency's smallest unit, that an ask in a money call's words may name without asking
 * beyond the call (askedBeyond): a refund's (knownSums: the cap, what is left of it, the payment's sums) and every count
 * in the facts read for it (a credit's `plan_cents_per_month`).
 */
function statedSums(input: DecisionCase): number[] {
  const counts = Object.values(input.facts).flatMap((facts) => Object.values(facts ?? {}));
  return [...knownSums(input).stated, ...counts.filter((value): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)];
}

/**
 * Letters of Cyrillic and Greek that look like Latin ones, as the Latin letter they look like: words asking for money
 * written with them (`rеfund` with a Cyrillic `е`, `pаy`) read as they look (askedBeyond).
 */
const LOOKALIKES: Readonly<Record<string, string>> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', і: 'i', ї: 'i', ј: 'j', ѕ: 's', һ: 'h', ԁ: 'd', ԛ: 'q', ԝ: 'w', ӏ: 'l', ɡ: 'g',
  А: 'A', В: 'B', Е: 'E', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', У: 'Y', Х: 'X', І: 'I', Ј: 'J', Ѕ: 'S', Ԁ: 'D', Ԛ: 'Q', Ԝ: 'W',
  α: 'a', ε: 'e', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', γ: 'y',
  Α: 'A', Β: 'B', Ε: 'E', Ζ: 'Z', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Υ: 'Y', Χ: 'X',
};
const LOOKALIKE = new RegExp(`[${Object.keys(LOOKALIKES).join('')}]`, 'gu');

function latinLookalikes(text: string): string {
  return text.replace(LOOKALIKE, (letter) => LOOKALIKES[letter] ?? letter);
}

/**
 * The sums written in words in `text` (SPELLED_SUM: `five thousand dollars`, `fifty thousand cents`), read as figuresIn
 * reads a figure, for askedBeyond: `cents` in the smallest unit of `currency` (the case's, or hundredths when it is not
 * known) when the words name whole units of it, the count itself when they name cents, null when the number is not
 * read; one in another currency keeps its unit, and askedBeyond leaves it to refundSumsProblem.
 */
function spelledSumsIn(text: string, currency: string | null): Pick<FigureRead, 'cents' | 'unit' | 'centsWritten' | 'before' | 'lead' | 'near'>[] {
  const read = readable(text);
  const decimals = decimalsOf(currency);
  const sums: ReturnType<typeof spelledSumsIn> = [];
  for (const match of read.matchAll(SPELLED_SUM)) {
    const [near, phrase = '', unit = ''] = match;
    const number = spelledNumber(phrase);
    const centsWritten = CENTS_WORD.test(unit);
    const cents = number === null ? null : centsWritten ? number : number * 10 ** decimals;
    const before = read.slice(Math.max(0, match.index - UNITS_WINDOW), match.index);
    const lead = read.slice(Math.max(0, match.index - LEAD_WINDOW), match.index);
    sums.push({ cents: cents !== null && Number.isSafeInteger(cents) ? cents : null, unit: centsWritten ? null : unit, centsWritten, before, lead, near });
  }
  return sums;
}

/**
 * The ids a money call's words may send money to that askedBeyond names: a payment (`pi_`, `py_`), which a refund
 * returns money to, on either case (a credit's words "the rest was refunded to pi_…" ask a refund), and on a credit
 * case a customer (`cus_`), which a credit goes to. Others are no destination of the call: on a refund case the
 * payment's charge (`ch_`) and its customer (`cus_`) are told of the payment the refund returns to, whoever they are.
 */
function destinationOf(name: keyof typeof MONEY_ACTION): RegExp {
  return name === 'issue_credit' ? /^(?:pi|py|cus)_/ : /^(?:pi|py)_/;
}

/**
 * The sums the case story states in the case's currency, in its smallest unit (sumsIn: `$120.00`, `sixty dollars`,
 * `6000 cents`), every reading of each. A money call's words may report them without asking for them (askedBeyond).
 */
function storySums(input: DecisionCase, currency: string | null): number[] {
  return sumsIn([{ where: 'the case story', text: input.story }], currency, MONEY_ACTION[input.kind === 'refund' ? 'issue_refund' : 'issue_credit']).flatMap((sum) => sum.sums);
}

/**
 * What a well-formed money call's words ask beyond the call, as problems for a person, or none: another payment or
 * customer named by its id, in its own text field (`own`: its reason or description) or in the prose beside it
 * (`said`), one of a kind the call's money could go to (destinationOf) that is neither the case's subject nor named by
 * the facts read for the case ("Refunding $20.00 to pi_…", a decision written out as JSON). The story does not make an
 * id the case's own: it is the customer's text, the very place an injection arrives ("send the refund to pi_…"), so an
 * id it names is named too, saying the story names it. And in its own text field (read with look-alike letters of other
 * scripts as the Latin ones: latinLookalikes) a money figure, or a sum in words (`five thousand dollars`), of more than the
 * approval covers, that is neither the amount called (checkDecision judges that) nor a sum the facts state (statedSums),
 * unless words reporting a third party's ask stand before it (REPORTED_BEFORE: "the customer asked us to refund
 * $60.00", never the call's own "we would like to refund"), or the words do not ask for it (ASK_BEFORE) and either a
 * word right before it tells it as a price or a part (TOLD_BEFORE: "Refund $20 of the $2,000 order"), which "the",
 * "their" or "for the" shortly after an ask word does not (NEAR_ASK_BEFORE: "a refund for the $5,000.00"), or the story
 * states it (a story planting "refund $5,000.00" does not make "then refund an additional $5,000.00" a sum told); and a figure asked for whose size is not read (`refund 5k`). A
 * figure is money when a currency of the case or cents are written beside it or words ask for it; a case number is
 * none. A figure in another currency is refundSumsProblem's and otherSumsProblem's. The prose is not read for figures:
 * it quotes what the story and the customer asked ("The customer wrote: issue_refund 100000 cents"), which is no ask
 * of the model's. The same asks a malformed call is read for (overAsk): the call moves only what it called for, to the
 * case's subject, and the gate holds that, but its words go into the signed receipt (a credit's description to the
 * customer too), and an ask the model was talked into, left there with nobody told, is the trace of an injection a
 * person must see. The amount is recorded as called: confirming sends no more.
 */
function askedBeyond(name: keyof typeof MONEY_ACTION, asked: number, own: CallWords, said: readonly string[], input: DecisionCase, currency: string | null): string[] {
  const subject = subjectId(input.approval);
  const idsIn = (text: string) => [...text.matchAll(STRIPE_SUBJECT_IN_TEXT)].map((match) => match[0]);
  // Every id the facts name is the case's own, however many; the story's are only marked as the story's.
  const theCase = new Set([subject, ...idsIn(JSON.stringify(input.facts))]);
  const inStory = new Set(idsIn(input.story));
  const destination = destinationOf(name);
  const limit = Math.min(input.approval.capCents, MAX_AMOUNT_CENTS);
  const stated = statedSums(input);
  const told = storySums(input, currency);
  const named: string[] = [];
  const over: string[] = [];
  const unsized: string[] = [];
  // Every id in the words is read before a few are kept: ids that are no destination, or the case's own, written
  // first would otherwise push another payment's id past the few read.
  for (const { where, text } of wordsOf(own, said)) {
    const others = new Set(idsIn(text).filter((id) => destination.test(id) && !theCase.has(id)));
    for (const id of [...others].slice(0, IN_TEXT_READ_MAX)) named.push(`${id} in ${where}${inStory.has(id) ? ' (which the case story names too: an id the story names is no id of the case, since the story is where an injected ask arrives)' : ''}`);
  }
  // Every figure of its own words (a reason's or a description's few hundred characters), and every sum in words
  // (`five thousand dollars`): an ask after twenty told sums is still an ask. Letters of other scripts that look like
  // Latin ones are read as those (`rеfund` with a Cyrillic `е`).
  const ownText = latinLookalikes(own.text);
  for (const read of [...(figuresIn(ownText, currency, Number.POSITIVE_INFINITY) ?? []), ...spelledSumsIn(ownText, currency)]) {
    const before = read.before.replace(UNITS_BEFORE, '');
    if (REPORTED_BEFORE.test(read.lead.replace(UNITS_BEFORE, ''))) continue;
    if (currency !== null && !read.centsWritten && read.unit !== null && !unitNames(read.unit, currency)) continue;
    const askedFor = ASK_BEFORE.test(before);
    if (!askedFor && read.unit === null && !read.centsWritten) continue;
    const shown = JSON.stringify(cleanModelLine(read.near, 80));
    if (read.cents === null) {
      if (askedFor) unsized.push(shown);
      continue;
    }
    // "a refund for the $500": the "the" after an ask tells no price; only the case stating the figure does.
    const toldSum = told.includes(read.cents) || (!NEAR_ASK_BEFORE.test(before) && TOLD_BEFORE.test(before));
    if (read.cents > limit && read.cents !== asked && !stated.includes(read.cents) && (askedFor || !toldSum)) over.push(shown);
  }
  const few = (items: readonly string[]) => (items.length > NAMED_CALLS_MAX ? `${items.slice(0, NAMED_CALLS_MAX).join(', ')} and ${items.length - NAMED_CALLS_MAX} more` : items.join(', '));
  const called = `${asked} cents${currency === null ? '' : ` (${moneyText(asked, currency)})`}`;
  const tail =
    name === 'issue_refund'
      ? `; the ${called} it called for, to ${subject} alone, is recorded, and confirming this refund sends no more, with its words as written; if they should not read so, dismiss this and decide the case again`
      : `; confirming this credit sends the ${called} it called for to ${subject} alone, with its description as written: if it should not read so, dismiss this and decide the case again`;
  const problems: string[] = [];
  if (named.length > 0) problems.push(`the model's ${name} call named ${few(named)}, but approval ${input.approval.id} covers ${input.approval.scope} only${tail}`);
  if (over.length > 0) problems.push(`the model's ${name} call asked for ${called}, but ${own.where} asks for a figure of more than ${limit} cents, more than approval ${input.approval.id} covers: ${few(over)}${tail}`);
  if (unsized.length > 0) problems.push(`the model's ${name} call asked for ${called}, but ${own.where} asks for a figure whose size is not read, a multiplier or an exponent: ${few(unsized)}${tail}`);
  return problems;
}

function decisionFrom(call: ToolUseBlock & { name: DecisionTool }, said: readonly string[], model: string, input: DecisionCase, fail: (what: string) => DeciderError): Decision {
  const currency = caseCurrency(input);
  const malformed = (issues: readonly { path: readonly PropertyKey[]; message: string }[]) =>
    fail(`its ${call.name} call is malformed (${issues.map((issue) => `${issue.path.map(String).join('.') || 'input'} ${issue.message}`).join('; ')}); got ${quoteCall(call.input)}`);
  const needText = (value: string, max: number, field: string, cleaned: (text: string, max: number) => string = cleanModelText) => {
    const clean = cleaned(value, max);
    if (clean === '') throw malformed([{ path: [field], message: 'must say something' }]);
    return clean;
  };
  switch (call.name) {
    case 'issue_refund': {
      const parsed = INPUTS.issue_refund.safeParse(call.input);
      if (!parsed.success) throw malformed(parsed.error.issues);
      const reason = needText(parsed.data.reason, REASON_MAX_CHARS, 'reason');
      const asked = parsed.data.amount_cents;
      const own = { where: 'its reason', text: reason };
      const known = knownSums(input);
      const amount = amountOfCall(call.name, asked, own, said, currency, known.wholes);
      // Its words must name the sum it refunds when they name money: a model counting in cents where the currency has
      // none (jpy) would refund a hundred times what they say.
      const otherSums = refundSumsProblem(asked, own, said, currency, known, amount.deviations === undefined ? null : asked * 100);
      const deviations = [...(amount.deviations ?? []), ...(otherSums === null ? [] : [otherSums]), ...askedBeyond(call.name, asked, own, said, input, currency), ...proseUnread(call.name, asked, said, currency)];
      return { action: 'refund', amountCents: asked, ...(deviations.length === 0 ? {} : { deviations }), reason, model, text: decisionText(said, `issue_refund ${parsed.data.amount_cents} cents: ${reason}`) };
    }
    case 'issue_credit': {
      const parsed = INPUTS.issue_credit.safeParse(call.input);
      if (!parsed.success) throw malformed(parsed.error.issues);
      // One line: the line the customer reads in their balance history.
      const description = needText(parsed.data.description, DESCRIPTION_MAX_CHARS, 'description', cleanModelLine);
      const asked = parsed.data.amount_cents;
      const own = { where: 'its description', text: description };
      const amount = amountOfCall(call.name, asked, own, said, currency, []);
      // The line must not name another sum than the credit moves: the customer reads it beside the credit.
      const otherSums = otherSumsProblem(asked, description, currency, amount.deviations === undefined ? null : asked * 100);
      const deviations = [...(amount.deviations ?? []), ...(otherSums === null ? [] : [otherSums]), ...askedBeyond(call.name, asked, own, said, input, currency), ...proseUnread(call.name, asked, said, currency)];
      return { action: 'credit', amountCents: asked, ...(deviations.length === 0 ? {} : { deviations }), description, model, text: decisionText(said, `issue_credit ${parsed.data.amount_cents} cents: ${description}`) };
    }
    case 'decline': {
      const parsed = INPUTS.decline.safeParse(call.input);
      if (!parsed.success) throw malformed(parsed.error.issues);
      const reason = needText(parsed.data.reason, REASON_MAX_CHARS, 'reason');
      return { action: 'decline', reason, model, text: decisionText(said, `decline: ${reason}`) };
    }
    default: {
      const never: never = call.name;
      return never;
    }
  }
}

/**
 * The assistant turn as it is sent back: its text and tool calls (nothing else is produced without server tools). A
 * blank text block (a model may put "\n\n" before a tool call) is left out: the Messages API refuses a request that
 * holds one with a 400, which would end the case as a configuration fault.
 */
function replayed(message: Message): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  for (const block of message.content) {
    if (block.type === 'text') {
      if (block.text.trim() !== '') blocks.push({ type: 'text', text: block.text });
    }
    else if (block.type === 'tool_use') blocks.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
  }
  return blocks;
}

/**
 * Why an answer's lookup calls cannot be sent back as the next turn, or null. The Messages API refuses a conversation
 * holding a tool call whose input is not an object, or two tool calls with one id, with a 400 that would end the case
 * as invalid_config, blaming the configuration for the model's answer. `earlier` holds the ids of the turns before.
 */
function replayProblem(calls: readonly ToolUseBlock[], earlier: ReadonlySet<string>): string | null {
  const ids = new Set(earlier);
  for (const call of calls) {
    const input: unknown = call.input;
    const name = cleanModelLine(call.name, 64) || '(no name)';
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return `its ${name} call's input is not an object (${Array.isArray(input) ? 'a list' : input === null ? 'null' : typeof input})`;
    if (ids.has(call.id)) return `its ${name} call reuses the tool call id ${cleanModelLine(call.id, 64)}, which the Messages API refuses`;
    ids.add(call.id);
  }
  return null;
}

function stopProblem(message: Message, config: DeciderConfig): string | null {
  switch (message.stop_reason) {
    case 'tool_use':
    case 'end_turn':
    case 'stop_sequence':
      return null;
    case 'max_tokens':
      return `it stopped at INTERLOCK_MODEL_MAX_TOKENS=${config.maxTokens} tokens before finishing (raise the setting if this recurs)`;
    case 'refusal': {
      // The answer is not validated by the SDK: read the optional details defensively.
      const details = message.stop_details as { category?: unknown; explanation?: unknown } | null | undefined;
      const category = typeof details?.category === 'string' ? ` (${cleanModelLine(details.category, 64)})` : '';
      const explanation = typeof details?.explanation === 'string' && details.explanation.trim() !== '' ? `: ${cleanModelLine(details.explanation, 300)}` : '';
      const why = `${category}${explanation}`;
      return `it refused to decide${why}`;
    }
    case 'pause_turn':
      return 'it paused its turn, which only server tools do, and this decider offers none';
    case 'model_context_window_exceeded':
      return "the case and facts exceeded the model's context window";
    case null:
      return 'the answer had no stop reason';
    default: {
      const never: never = message.stop_reason;
      return `it stopped for an unknown reason (${String(never)})`;
    }
  }
}

/** The answer to a refund or credit called before the facts were read: not taken, and what to read first. */
function readFirst(unread: readonly LookupTool[], calls: readonly ToolUseBlock[]): string {
  const uncalled = unread.filter((name) => !calls.some((call) => call.name === name));
  return uncalled.length === 0
    ? 'Not taken: you decided before reading the facts. They are in the lookup results beside this one; decide again on what they say.'
    : `Not taken: read the facts first. Call ${uncalled.join(' and ')} (the lookups read Stripe now and are available), then decide on what the facts say.`;
}

export function createAnthropicDecider(config: DeciderConfig & { apiKey: string }): Decider {
  // Made with the SDK, on the first call to the model.
  let client: Anthropic | null = null;

  /**
   * One HTTP attempt of the SDK's: counted, and bounded as a whole by INTERLOCK_MODEL_TIMEOUT_MS. The SDK's own timer
   * stops at the answer's headers, so the body is read here under one deadline for the attempt, and handed on as read.
   * It is read up to answerBytesMax (ERROR_BYTES_MAX for a failure), never whole whatever its size: this process also
   * sends money. A message larger than the model can write at INTERLOCK_MODEL_MAX_TOKENS is not the model's (a proxy's
   * or gateway's, or another service at ANTHROPIC_BASE_URL), and like an answer that is no message (notAMessage) it is
   * decider_unavailable, thrown here so the SDK neither retries nor parses it; a failure's body is handed on cut, its
   * status kept, so it is judged as its status says.
   * A body that stalls is a timeout; one cut off (the connection lost, or JSON that ends early) is thrown as the SDK's
   * RetryableError; the SDK retries both, then translateApiError makes them decider_unavailable. A failure whose
   * retry-after is longer than LONGEST_WAIT_IN_DECISION_MS is marked with the SDK's own x-should-retry: false, so the
   * SDK does not sleep through it: it ends the decision at once, carrying the wait for the case's job.
   */
  function attempt(where: Where, sdk: Sdk): Middleware {
    return async (request, next) => {
      where.attempts += 1;
      const deadline = AbortSignal.timeout(config.timeoutMs);
      // The SDK's signal: aborted by the caller, or by the SDK's own timer before the headers. Its errors are the SDK's.
      const sdkSignal = request.signal ?? null;
      const stoppedBySdk = () => sdkSignal?.aborted === true;
      let answer: Response;
      let body: string;
      let over: boolean;
      try {
        answer = await next({ ...request, signal: sdkSignal === null ? deadline : AbortSignal.any([sdkSignal, deadline]) });
      } catch (error) {
        if (deadline.aborted && !stoppedBySdk()) throw new sdk.APIConnectionTimeoutError();
        throw error;
      }
      try {
        ({ text: body, over } = await readAtMost(answer, answer.ok ? answerBytesMax(config.maxTokens) : ERROR_BYTES_MAX));
      } catch (error) {
        if (stoppedBySdk()) throw error;
        if (deadline.aborted) throw new sdk.APIConnectionTimeoutError();
        throw new sdk.RetryableError(`(${answer.status}) was cut off after its headers`, { cause: error });
      }
      if (over && answer.ok) {
        const base = config.baseURL === null ? 'its default address' : clip(config.baseURL, config.apiKey);
        throw new DeciderError(
          'decider_unavailable',
          `The server at ${base} answered (${answer.status}) with more than ${answerBytesMax(config.maxTokens)} bytes, more than a Messages API message holds at INTERLOCK_MODEL_MAX_TOKENS=${config.maxTokens}, and the rest was not read: a proxy's or gateway's page, or ANTHROPIC_BASE_URL names another service. Case ${where.caseId} was not decided and nothing was proposed; decide it again later: submit the case again (the same id and payload) once the Messages API answers.`,
          { attempts: where.attempts },
        );
      }
      if (answer.ok && isJson(answer.headers) && !parses(body)) throw new sdk.RetryableError(`(${answer.status}) ended before its JSON did, after ${body.length} characters`);
      const headers = new Headers(answer.headers);
      const wait = retryAfterMs(answer.headers, Date.now());
      if (!answer.ok && wait !== null && wait > LONGEST_WAIT_IN_DECISION_MS) headers.set('x-should-retry', 'false');
      return new Response(body === '' ? null : body, { status: answer.status, statusText: answer.statusText, headers });
    };
  }

  async function ask(input: DecisionCase, messages: MessageParam[], tools: ReturnType<typeof toolsFor>, signal: AbortSignal | undefined): Promise<Message> {
    const where: Where = { caseId: input.caseId, config, attempts: 0 };
    const sdk = await loadSdk();
    client ??= new sdk.default({
      apiKey: config.apiKey,
      // Passed even when unset, so the SDK reads no ANTHROPIC_BASE_URL of its own behind the validated config.
      baseURL: config.baseURL ?? 'https://api.anthropic.com',
      maxRetries: config.maxRetries,
      timeout: config.timeoutMs,
      logLevel: 'off',
    });
    try {
      return await client.messages.create(
        {
          model: config.model,
          max_tokens: config.maxTokens,
          system: systemPromptFor(input.kind),
          messages,
          tools,
          // Every turn is a tool call: a lookup or the decision. One call per turn keeps the loop a plain sequence.
          tool_choice: { type: 'any', disable_parallel_tool_use: true },
        },
        { ...(signal === undefined ? {} : { signal }), middleware: [attempt(where, sdk)] },
      );
    } catch (error) {
      throw translateApiError(error, where, sdk);
    }
  }

  /**
   * An answer that is no Messages API message at all (the SDK hands back a non-JSON body as a string): not the
   * model's decision but the endpoint's, a proxy's or gateway's page, or another service at ANTHROPIC_BASE_URL. The
   * case is not decided and is tried again later (decider_unavailable), as when the API is unreachable.
   */
  function notAMessage(answer: unknown, caseId: string): DeciderError | null {
    if (typeof answer === 'object' && answer !== null && (answer as { type?: unknown }).type === 'message') return null;
    const key = config.apiKey;
    const shown = typeof answer === 'string' ? `text: ${JSON.stringify(headOf(clip(answer, key), 120))}` : typeof answer === 'object' && answer !== null ? `an object of type ${headOf(JSON.stringify(clip(String((answer as { type?: unknown }).type ?? 'none'), key)), 60)}` : String(answer);
    const base = config.baseURL === null ? 'its default address' : clip(config.baseURL, key);
    return new DeciderError('decider_unavailable', `The server at ${base} answered with something that is not a Messages API message (${shown}): a proxy's or gateway's page, or ANTHROPIC_BASE_URL names another service. Case ${caseId} was not decided and nothing was proposed; decide it again later: submit the case again (the same id and payload) once the Messages API answers.`);
  }

  /**
   * Why the answer's blocks are not what the Messages API sends (the SDK does not check answers), or null: every block
   * an object with a type, a text block's text a string, a tool call's id and name strings. Said so (decision_invalid,
   * the case fails at once) rather than met as a TypeError further on, which the decisions worker would take for an
   * outside failure and retry, asking the model again each time.
   */
  function blockProblem(content: readonly unknown[]): string | null {
    for (const [index, block] of content.entries()) {
      if (typeof block !== 'object' || block === null || typeof (block as { type?: unknown }).type !== 'string') return `content block ${index + 1} of its answer is not a block (${block === null ? 'null' : typeof block})`;
      const { type, text, id, name } = block as { type: string; text?: unknown; id?: unknown; name?: unknown };
      if (type === 'text' && typeof text !== 'string') return `text block ${index + 1} of its answer holds no text (${typeof text})`;
      if (type === 'tool_use' && (typeof id !== 'string' || typeof name !== 'string')) return `tool call ${index + 1} of its answer has no ${typeof id !== 'string' ? 'id' : 'name'} string`;
    }
    return null;
  }

  return {
    name: 'anthropic',
    async decide(raw, options = {}) {
      const input = parseCase(raw);
      const spent = nothingLeft(input);
      if (spent !== null) return spent;
      const tools = toolsFor(input);
      const offered = new Set(tools.map((tool) => tool.name));
      // The facts of the case: every lookup offered is one the caller read for it, so a refund or credit waits for all.
      const lookups = LOOKUP_TOOLS.filter((name) => offered.has(name));
      const read = new Set<LookupTool>();
      const fail = (what: string, model: string) => invalid(input, what, model, config.apiKey);
      const messages: MessageParam[] = [{ role: 'user', content: casePromptFor(input) }];
      const said: string[] = [];
      // The tool call ids already sent back, in the turns before this one.
      const called = new Set<string>();
      // The model was told once that a decision made before reading the facts does not count.
      let told = false;
      for (let turn = 1; turn <= config.maxTurns; turn += 1) {
        const message = await ask(input, messages, tools, options.signal);
        const notApi = notAMessage(message, input.caseId);
        if (notApi !== null) throw notApi;
        const model = cleanModelLine(typeof message.model === 'string' ? message.model : '', 200) || config.model;
        try {
          if (!Array.isArray(message.content)) throw fail('the answer is not a Messages API message (it has no content list)', cleanModelLine(config.model, 200));
          const malformed = blockProblem(message.content as unknown[]);
          if (malformed !== null) throw fail(malformed, model);
          const problem = stopProblem(message, config);
          if (problem !== null) throw fail(problem, model);
          for (const block of message.content) if (block.type === 'text' && block.text.trim() !== '') said.push(block.text);
          const calls = message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
          if (calls.length === 0) throw fail(`it answered without calling a tool${said.length > 0 ? ` ("${cleanModelLine(said.join(' '), 200)}")` : ''}`, model);
          // A decision tool of the other kind is still a decision: checkDecision reports it as MODEL_DEVIATED.
          const unknown = calls.filter((call) => !offered.has(call.name) && !isDecisionTool(call.name));
          if (unknown.length > 0) throw fail(`it called ${namesOf(unknown, ', ')}, which ${unknown.length === 1 ? 'is not one of' : 'are not among'} the tools offered (${[...offered].join(', ')})`, model);
          const decisions = calls.filter((call): call is ToolUseBlock & { name: DecisionTool } => isDecisionTool(call.name));
          if (decisions.length > 1) throw fail(`it called ${namesOf(decisions, ' and ')} in one answer; a case is decided once`, model);
          const [decision] = decisions;
          // A lookup called beside the decision was not answered yet: the decision was made without its facts.
          const unread = lookups.filter((name) => !read.has(name));
          if (decision !== undefined) {
            const decided = decisionFrom(decision, said, model, input, (what) => fail(what, model));
            // A decline moves no money, and a decision outside the approval (another kind, more than it covers), or one
            // whose words name another sum than it moves (amountOfCall, refundSumsProblem, otherSumsProblem) or ask beyond
            // it (askedBeyond: another payment's id, a figure over the cap), is the worker's to record as MODEL_DEVIATED
            // for a person, read or not: sent back, a prompt-injected ask for more would leave no trace once the model,
            // told to read first, asked for what was approved. Judged on the
            // approval alone (null): facts the model has not read are its to read first, and the worker judges them.
            if (decided.action === 'decline' || unread.length === 0 || checkDecision(decided, input.approval, input.kind, null).verdict === MODEL_DEVIATED) return decided;
            // Told once already, out of turns, or a decision tool not offered (the API refuses it sent back): it stands
            // as made, without the facts, and nothing is proposed from it.
            if (told || turn === config.maxTurns || !offered.has(decision.name)) {
              throw fail(`it decided (${decision.name} ${decided.amountCents} cents) without reading the facts: ${unread.join(' and ')} ${unread.length === 1 ? 'was' : 'were'} never answered in the conversation${told ? ', and it decided again without them after it was told to read them first' : ''}`, model);
            }
            told = true;
          }
          const unsendable = replayProblem(calls, called);
          if (unsendable !== null) throw fail(unsendable, model);
          for (const call of calls) called.add(call.id);
          const results: ToolResultBlockParam[] = calls.map((call) => {
            if (isDecisionTool(call.name)) return { type: 'tool_result', tool_use_id: call.id, is_error: true, content: readFirst(unread, calls) };
            if (isLookupTool(call.name)) read.add(call.name);
            const facts = isLookupTool(call.name) ? input.facts[call.name] : undefined;
            return { type: 'tool_result', tool_use_id: call.id, content: JSON.stringify(facts ?? {}) };
          });
          messages.push({ role: 'assistant', content: replayed(message) }, { role: 'user', content: results });
        } catch (error) {
          // An answer that is no decision may still hold an ask outside the approval: the worker's to record as
          // MODEL_DEVIATED for a person (overAsk), not an error that leaves no trace.
          const what = error instanceof DeciderError ? answerProblems.get(error) : undefined;
          const deviated = what === undefined ? null : overAsk(message.content, input, offered, said, model, what);
          if (deviated !== null) return deviated;
          throw error;
        }
      }
      throw fail(`it looked facts up for INTERLOCK_MODEL_MAX_TURNS=${config.maxTurns} turns without deciding`, cleanModelLine(config.model, 200));
    },
  };
}
