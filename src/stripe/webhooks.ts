// The Stripe-Signature check of the webhook route (issue 10 §1), through the official SDK: the raw body against
// each of the endpoint's secrets (several while one is rotated), with Stripe's timestamp tolerance. The answer is
// a verdict, never an exception: the route turns a failed one into a 400 that says what was wrong.
import { isUtf8 } from 'node:buffer';
import type Stripe from 'stripe';
import { stripeSdk } from './sdk.js';
import type { StripeEvent, WebhookVerdict } from '../core/post-send.js';
import { InterlockError } from '../core/errors.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json.js';
import { firstByteNotUtf8 } from '../core/text.js';
import { listAll, readBudget, readCall } from './calls.js';
import type { StripeClient } from './client.js';

export type WebhookVerifierOptions = {
  /** Seconds a signature stays acceptable; Stripe's default is 300. */
  toleranceSeconds?: number;
  /** Unix seconds now (tests); the machine's clock otherwise. */
  nowSeconds?: () => number;
  /**
   * The mode of the service's Stripe key (StripeClient.mode: `sk_test_`/`rk_test_` and the sandbox are test): an event
   * of the other mode is refused. Unset, an event's mode is not checked (a process that knows no key).
   */
  mode?: 'test' | 'live' | null;
};

/**
 * A verified event with what the route checks besides what the facts worker reads: the mode it was sent in, and the
 * connected account of a Connect event (Stripe's `account`, absent on the platform's own events).
 */
export type SignedEvent = StripeEvent & { livemode?: boolean; account?: string };

/** The verifier's answer: WebhookVerdict, with the event as SignedEvent and one more refusal, an event of the other mode. */
export type SignedVerdict = { ok: true; event: SignedEvent } | Extract<WebhookVerdict, { ok: false }> | { ok: false; reason: 'livemode_mismatch'; message: string };

const SECRET = /^whsec_[A-Za-z0-9+/=]+$/;
/** Stripe's event ids; the id becomes the facts job's id, which BullMQ refuses with a `:` or as a bare integer. */
const EVENT_ID = /^evt_[A-Za-z0-9_]{1,250}$/;

/**
 * The `t=` of a Stripe-Signature header, read as the SDK reads it (an element named exactly `t`; the SDK takes the
 * last one, with parseInt), or `malformed` when the header holds no such element, more than one, or one that is not
 * all digits: with two, or with `t=123x`, our check and the SDK's would read different times, and an old captured
 * delivery would pass as fresh.
 */
function timestampOf(header: string): number | 'malformed' {
  let found: number | 'malformed' = 'malformed';
  let seen = 0;
  for (const part of header.split(',')) {
    const [name, value] = part.split('=');
    if (name !== 't') continue;
    seen += 1;
    found = value !== undefined && /^\d{1,12}$/.test(value) ? Number(value) : 'malformed';
  }
  return seen === 1 ? found : 'malformed';
}

function eventOf(value: unknown): SignedEvent | null {
  if (typeof value !== 'object' || value === null) return null;
  const event = value as { id?: unknown; type?: unknown; object?: unknown; created?: unknown; data?: unknown; livemode?: unknown; account?: unknown };
  if (typeof event.id !== 'string' || !EVENT_ID.test(event.id) || typeof event.type !== 'string' || event.type === '') return null;
  if (event.object !== undefined && event.object !== 'event') return null;
  const data = event.data as { object?: unknown; previous_attributes?: unknown } | null | undefined;
  if (typeof data !== 'object' || data === null || typeof data.object !== 'object' || data.object === null || Array.isArray(data.object)) return null;
  const parsed: SignedEvent = { id: event.id, type: event.type, data: { object: data.object as Record<string, unknown> } };
  // Kept as it came (any other shape is dropped): what a change touched, where no re-read can tell any more.
  const previous = data.previous_attributes;
  if (typeof previous === 'object' && previous !== null && !Array.isArray(previous)) parsed.data.previous_attributes = previous as Record<string, unknown>;
  if (typeof event.created === 'number' && Number.isFinite(event.created)) parsed.created = event.created;
  if (typeof event.livemode === 'boolean') parsed.livemode = event.livemode;
  // As `stripe listen` reads it: a non-empty account is a Connect event.
  if (typeof event.account === 'string' && event.account !== '') parsed.account = event.account;
  return parsed;
}

/** A verifier for the route; throws `invalid_config` at start when there is no usable secret. */
export function createWebhookVerifier(secrets: readonly string[], options: WebhookVerifierOptions = {}): (rawBody: Buffer, signature: string | undefined) => SignedVerdict {
  const usable = secrets.map((secret) => secret.trim()).filter((secret) => secret !== '');
  if (usable.length === 0) throw new InterlockError('invalid_config', 'No webhook signing secret is set: set STRIPE_WEBHOOK_SECRET to the whsec_… secret `stripe listen` prints (or the endpoint\'s, from the dashboard).');
  const malformed = usable.filter((secret) => !SECRET.test(secret));
  if (malformed.length > 0) throw new InterlockError('invalid_config', `STRIPE_WEBHOOK_SECRET holds ${malformed.length} value(s) that are not whsec_… secrets; separate several secrets with commas.`);
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const mode = options.mode ?? null;

  return (rawBody, signature) => {
    const header = signature?.trim() ?? '';
    if (header === '') return { ok: false, reason: 'missing_signature', message: 'The request has no Stripe-Signature header; only Stripe (or `stripe listen`) may post here.' };
    const at = now();
    const timestamp = timestampOf(header);
    if (timestamp === 'malformed') {
      return { ok: false, reason: 'bad_signature', message: 'The Stripe-Signature header needs exactly one t=<unix seconds> element (Stripe sends one): this one has none, several, or one that is not a number.' };
    }
    let verified: unknown = undefined;
    for (const secret of usable) {
      try {
        // The signature first, with no age check (tolerance 0): the timestamp is checked below, both ways, against our
        // own clock reading, and only for a signature that matched, so a forgery is always a bad signature, whatever
        // time it claims (an unsigned sender cannot choose which rejection an operator reads about).
        verified = stripeSdk().webhooks.constructEvent(rawBody, header, secret, 0);
        break;
      } catch (error) {
        // Only a signature that does not match under this secret goes on to the next one. Anything the SDK refuses
        // after the signature matched (a body that is not JSON; a thin event, `v2.core.event`, from an event
        // destination set to thin payloads) is signed by the right secret and is no event this route reads: saying
        // "check STRIPE_WEBHOOK_SECRET" would send the operator after a secret that is right.
        if ((error as { type?: unknown } | null)?.type === 'StripeSignatureVerificationError') continue;
        if (error instanceof SyntaxError) return { ok: false, reason: 'not_an_event', message: 'The body is signed but is not JSON.' };
        return { ok: false, reason: 'not_an_event', message: `The body is signed, but the Stripe SDK refused it as an event (${error instanceof Error ? error.message : String(error)}); this route reads snapshot events (an endpoint or \`stripe listen\`), not thin event notifications.` };
      }
    }
    if (verified === undefined) {
      return { ok: false, reason: 'bad_signature', message: `The Stripe-Signature does not match the body under any of the ${usable.length} configured secret(s): check STRIPE_WEBHOOK_SECRET against the one \`stripe listen\` printed.` };
    }
    if (Math.abs(at - timestamp) > tolerance) {
      // Stripe signs each attempt with its own time at that attempt: a signature from the past is a replay or this
      // host's clock ahead; one from the future, this host's clock behind (a replay cannot make it).
      const message = at > timestamp
        ? `The signature's timestamp is ${at - timestamp} s before this host's clock reads now (at most ${tolerance} s either way): a replay, or this host's clock is ahead.`
        : `The signature's timestamp is ${timestamp - at} s after this host's clock reads now (at most ${tolerance} s either way): this host's clock is behind.`;
      return { ok: false, reason: 'stale_timestamp', message };
    }
    // The SDK decodes the body leniently before it checks the signature, so bytes that are not UTF-8 verify as the
    // U+FFFD they read as. Stripe sends UTF-8 only: such a body, signed all the same, is no event of Stripe's, and what
    // would be recorded from it is not what was sent.
    if (!isUtf8(rawBody)) return { ok: false, reason: 'not_an_event', message: `The body is signed but is not UTF-8 (byte ${firstByteNotUtf8(rawBody)} is not part of a UTF-8 character), which no Stripe event is.` };
    const event = eventOf(verified);
    if (event === null) return { ok: false, reason: 'not_an_event', message: 'The body is signed but is not a Stripe event (it needs an evt_… id, a type and data.object).' };
    // Stripe's objects nest a dozen levels at most. A deeper body parses, but cannot be written into a queue's job
    // (serialising it overflows the stack): it is bad input, answered 400 once, not an outage Stripe retries for days.
    if (nestsDeeperThan(event.data.object, MAX_JSON_DEPTH) || (event.data.previous_attributes !== undefined && nestsDeeperThan(event.data.previous_attributes, MAX_JSON_DEPTH))) {
      return { ok: false, reason: 'not_an_event', message: `The body is signed, but its object nests deeper than ${MAX_JSON_DEPTH} levels, which no Stripe event does.` };
    }
    // An event of the other mode concerns other money than the key moves: a test refund's failure is not a live
    // refund's. Its signature verified, so an endpoint of that mode forwards here with a secret configured here; a
    // 400 shows up on that endpoint in the Dashboard (Stripe retries it, and warns of an endpoint that keeps failing),
    // where a 200 would hide the misrouting for good.
    if (mode !== null && event.livemode !== undefined && event.livemode !== (mode === 'live')) {
      const [sent, ours] = event.livemode ? ['live', 'test'] : ['test', 'live'];
      return { ok: false, reason: 'livemode_mismatch', message: `A ${sent}-mode event (${event.id}) reached a service using a ${ours}-mode Stripe key: it concerns no money this service moves. Check which endpoint (or \`stripe listen\`) forwards here and STRIPE_WEBHOOK_SECRET: only the ${ours}-mode endpoint's secret belongs there.` };
    }
    return { ok: true, event };
  };
}

/** A Stripe-Signature header for a body, as Stripe computes it (tests and the scenarios' own deliveries). */
export function signWebhookBody(body: string, secret: string, timestampSeconds?: number): string {
  return stripeSdk().webhooks.generateTestHeaderString({ payload: body, secret, ...(timestampSeconds === undefined ? {} : { timestamp: timestampSeconds }) });
}

/** Whether Stripe calls go to a stand-in on this machine (the sandbox), never to Stripe itself. */
export function isLocalApiBase(apiBase: string | null): boolean {
  if (apiBase === null) return false;
  try {
    return ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(apiBase).hostname);
  } catch {
    return false;
  }
}

export type LocalWebhook = { id: string; secret: string; remove(): Promise<void> };

/**
 * Registers `url` as a webhook endpoint for `events` at the sandbox and returns its signing secret, so `serve`
 * against a sandbox of its own needs no STRIPE_WEBHOOK_SECRET; `remove` deletes it again. Refused for Stripe itself:
 * there the endpoint (or `stripe listen`) and its secret are the operator's.
 */
export async function registerLocalWebhook(client: StripeClient, url: string, events: readonly string[]): Promise<LocalWebhook> {
  if (!isLocalApiBase(client.apiBase)) throw new InterlockError('invalid_config', `Not registering a webhook endpoint at ${client.apiBase}: only a sandbox on this machine gets one from serve. Set STRIPE_WEBHOOK_SECRET.`);
  const budget = readBudget(10_000);
  const endpoint = await readCall(client, budget, 'POST /v1/webhook_endpoints', (sdk, o) => sdk.webhookEndpoints.create({ url, enabled_events: [...events] as Stripe.WebhookEndpointCreateParams.EnabledEvent[], description: 'interlock serve' }, o));
  if (typeof endpoint.secret !== 'string' || !SECRET.test(endpoint.secret)) throw new InterlockError('invalid_config', `The webhook endpoint registered at ${client.apiBase} came back without a whsec_… secret; set STRIPE_WEBHOOK_SECRET.`);
  return {
    id: endpoint.id,
    secret: endpoint.secret,
    async remove() {
      await readCall(client, readBudget(5_000), `DELETE /v1/webhook_endpoints/${endpoint.id}`, (sdk, o) => sdk.webhookEndpoints.del(endpoint.id, {}, o));
    },
  };
}

/** What removeLeftWebhooks did: the endpoints it deleted, and those it could not. */
export type LeftWebhooks = { removed: string[]; kept: string[] };

/**
 * Deletes the endpoints at a sandbox on this machine that deliver to `url`. `serve` registers the route there at start
 * and deletes it when it stops; a start that was killed (SIGKILL, a crash, the machine lost) leaves its endpoint, with
 * a secret no process holds any more, so the sandbox delivers every event there too, is answered 400 bad_signature
 * and retries it for days. Reusing one is not possible (an endpoint's secret is shown only when it is created), so it
 * goes, and one endpoint per URL remains. The caller asks only when nothing listens on the route's port, so none of
 * them is a running service's; and only at a sandbox: at Stripe the endpoints are the operator's. A list that cannot
 * be read deletes nothing (the registration after it says what is wrong with the sandbox).
 */
export async function removeLeftWebhooks(client: StripeClient, url: string): Promise<LeftWebhooks> {
  const left: LeftWebhooks = { removed: [], kept: [] };
  if (!isLocalApiBase(client.apiBase)) return left;
  let endpoints: Array<{ id: string; url: string }>;
  try {
    endpoints = await listAll(client, readBudget(10_000), 'GET /v1/webhook_endpoints', (sdk, cursor, o) => sdk.webhookEndpoints.list(cursor, o));
  } catch {
    return left;
  }
  for (const endpoint of endpoints.filter((item) => item.url === url)) {
    try {
      await readCall(client, readBudget(5_000), `DELETE /v1/webhook_endpoints/${endpoint.id}`, (sdk, o) => sdk.webhookEndpoints.del(endpoint.id, {}, o));
      left.removed.push(endpoint.id);
    } catch {
      left.kept.push(endpoint.id);
    }
  }
  return left;
}
