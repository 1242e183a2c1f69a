// The escalation inbox on the page (issue 13 §4): the list of items, one item with what happened, the money at stake
// and the facts that changed, and, for approvers, the three actions as plain forms (no script): re-approve under a new
// approval, resolve an AMBIGUOUS effect after checking Stripe, dismiss with a note. The forms go through the same
// actions as POST /v1/inbox/:id/... (the same checks, the same signed RESOLVED entry naming the signed-in token). A
// failed case's item (case_failed) has no effect, money or receipt: it shows the case, its error and what to do, and
// its dismissal is kept in the inbox index.
//
// Each form also takes the person's own API token, typed in (a password field), checked against the session's caller
// before anything is recorded (routes.ts, signer): the browser sends the session's cookie to every server on the host
// (session.ts), and whoever holds a copy can read the page, its CSRF token included, so the cookie alone never acts.
// The token is never shown back: a form answered again keeps what was typed in it except the token.
//
// The re-approve form carries the fingerprint of the facts the page shows (facts_shown, a hidden field, always sent):
// the re-approval stands on those, and is refused 409 facts_changed when the item shows others by the click (brought
// up to date after someone else's re-approval found the facts changed), which the person's page never showed.
import type { Request, RequestHandler, Response, Router } from 'express';
import { currencyCode, isMoneyPremise, kindOfSubject, moneyText, redactSecrets, type InboxItem } from '../../src/interlock.js';
import { PERMISSIONS } from '../api/auth.js';
import type { ApiContext } from '../api/context.js';
import { asApiError } from '../api/errors.js';
import { assertReapprovalRecorded, inboxActionsFor } from '../api/inbox-routes.js';
import { dismissBody, inboxItemParam, inboxQuery, reapproveForm, resolveBody } from '../api/schemas.js';
import type { Caller } from '../api/tokens.js';
import { html, type Html } from './html.js';
import { BAD_CURSOR, layout, type Viewer } from './pages.js';

export const INBOX_SECTION = { path: '/ui/inbox', label: 'Inbox' } as const;

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
/** An item's money at stake in its currency; an item opened before items carried one reads as of a currency unknown (moneyText). */
const atStake = (item: InboxItem) => moneyText(item.centsAtStake, item.currency ?? null);
/** A failed case's item moved no money: the list says so rather than a sum of nothing in no currency. */
const stakeCell = (item: InboxItem) => (item.kind === 'case_failed' ? 'nothing moved' : atStake(item));
/** A text field of an item's detail, or null (a failed case's case id, code and advice). */
const detailText = (item: InboxItem, key: string): string | null => {
  const value = item.detail?.[key];
  return typeof value === 'string' ? value : null;
};
/** A whole number of cents in an item's detail, or null. */
const detailCents = (item: InboxItem, key: string): number | null => {
  const value = item.detail?.[key];
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
};
const label = (kind: string) => kind.replace(/_/g, ' ');
const json = (value: unknown) => JSON.stringify(value);

/**
 * The currency the item's changed money facts are in: the item's (its heading's), unless the changes hold a change of
 * the `currency` fact from one currency to another (a credit decided in usd, read by a worker set to jpy), when each
 * amount is in its own and the table keeps the bare numbers, as the sentence of the change does.
 */
function changesCurrency(item: InboxItem): string | null {
  const change = item.changes.find((entry) => entry.field === 'currency');
  const was = currencyCode(change?.was);
  const now = currencyCode(change?.now);
  if (was !== null && now !== null && was !== now) return null;
  return currencyCode(item.currency ?? null) ?? was ?? now;
}

/** A changed fact's value in the table: its JSON, and beside an amount of money the money it is (`7500` (75.00 EUR)). */
function factCell(item: InboxItem, field: string, value: unknown, currency: string | null): Html {
  const money = isMoneyPremise(kindOfSubject(item.subject), field);
  if (!money || currency === null || typeof value !== 'number' || !Number.isSafeInteger(value)) return html`<code>${json(value)}</code>`;
  return html`<code>${json(value)}</code> (${moneyText(value, currency)})`;
}

/** `error`: why no items are shown (a page position it never gave out), with a link to `firstHref`. */
export function inboxListPage(input: { viewer: Viewer; items: readonly InboxItem[]; status: 'open' | 'closed'; nextHref: string | null; error?: { message: string; firstHref: string } | null }): Html {
  const other = input.status === 'open' ? html`<a href="/ui/inbox?status=closed">Show closed items</a>` : html`<a href="/ui/inbox">Show open items</a>`;
  const rows = input.items.map(
    (item) => html`<tr><td><a href="/ui/inbox/${item.id}">${label(item.kind)}</a></td><td><code>${item.subject}</code></td><td>${stakeCell(item)}</td><td>${item.happened}</td><td>${iso(item.openedAt)}</td><td>${item.closure ? html`${item.closure.action} by ${item.closure.by.name}` : 'open'}</td></tr>`,
  );
  return layout(
    'Inbox',
    input.viewer,
    html`<h1>Escalation inbox: ${input.status} items</h1>
<p>Effects a person must look at: an outcome nobody could settle, a refusal that may be re-approved, money at stake after a send; and support cases that failed undecided. ${other}</p>
${input.error ? html`<p class="error" role="alert">${input.error.message}</p>
<nav aria-label="Pages" class="pages"><a href="${input.error.firstHref}">First page</a></nav>` : input.items.length === 0 ? html`<p>No ${input.status} items.</p>` : html`<table><caption>${input.status === 'open' ? 'Open items, newest first' : 'Closed items, newest closure first'}</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Subject</th><th scope="col">At stake</th><th scope="col">What happened</th><th scope="col">Opened</th><th scope="col">Status</th></tr></thead>
<tbody>${rows}</tbody></table>`}
${input.nextHref === null ? null : html`<p><a href="${input.nextHref}">Next page</a></p>`}`,
  );
}

const PAGE_ACTIONS = ['reapprove', 'resolve', 'dismiss'] as const;
type PageAction = (typeof PAGE_ACTIONS)[number];

/**
 * What a person typed into one form, drawn again in it when the form is answered with the item (a wrong or missing
 * token, a field the form refused): never the token, and only for a form that came from this session's own page, so
 * a post from another server on the host cannot put an approval id of its choosing into the form an approver sees.
 */
export type TypedForm = { action: PageAction; note?: string | undefined; approval?: string | undefined; resolution?: string | undefined };

/** The field each form has for the person's own token: a password field, empty whenever the page is drawn. */
const tokenField = (action: PageAction) =>
  html`<label for="${action}-token">Your token (to sign this action)</label><input type="password" id="${action}-token" name="token" autocomplete="current-password" required maxlength="256">`;

function actionForms(item: InboxItem, viewer: Viewer, typed: TypedForm | null): Html {
  const csrf = html`<input type="hidden" name="csrf" value="${viewer.csrf}">`;
  /** What was typed into `action`'s form, when it is the one answered again. */
  const kept = (action: PageAction) => (typed?.action === action ? typed : null);
  const forms: Html[] = [];
  if (item.actions.includes('reapprove')) {
    const was = kept('reapprove');
    forms.push(html`<form method="post" action="/ui/inbox/${item.id}/reapprove" class="action"><h3>Re-approve</h3>
<p>A new request under a new approval: its facts are read now and must be the ones this page shows, and the gate checks them again before it sends. The old payload is never resent as it was.</p>
${csrf}${item.factsShown ? html`<input type="hidden" name="facts_shown" value="${item.factsShown}">` : null}<label for="approval">New approval id</label><input id="approval" name="approval" required maxlength="200"${was?.approval === undefined ? null : html` value="${was.approval}"`}>
<label for="reapprove-note">Note (optional)</label><textarea id="reapprove-note" name="note" maxlength="2000">${was?.note ?? null}</textarea>
${tokenField('reapprove')}
<button type="submit">Re-approve</button></form>`);
  }
  if (item.actions.includes('resolve')) {
    const was = kept('resolve');
    forms.push(html`<form method="post" action="/ui/inbox/${item.id}/resolve" class="action"><h3>Resolve after checking Stripe</h3>
${csrf}<fieldset><legend>What Stripe shows</legend>
<input type="radio" id="landed" name="resolution" value="landed" required${was?.resolution === 'landed' ? html` checked` : null}><label for="landed">It landed</label>
<input type="radio" id="did-not-land" name="resolution" value="did_not_land"${was?.resolution === 'did_not_land' ? html` checked` : null}><label for="did-not-land">It did not land</label></fieldset>
<label for="resolve-note">What you checked</label><textarea id="resolve-note" name="note" required maxlength="2000">${was?.note ?? null}</textarea>
${tokenField('resolve')}
<button type="submit">Resolve</button></form>`);
  }
  const was = kept('dismiss');
  forms.push(html`<form method="post" action="/ui/inbox/${item.id}/dismiss" class="action"><h3>Dismiss</h3>
${csrf}<label for="dismiss-note">Why</label><textarea id="dismiss-note" name="note" required maxlength="2000">${was?.note ?? null}</textarea>
${tokenField('dismiss')}
<button type="submit">Dismiss</button></form>`);
  return html`<section aria-labelledby="actions-title"><h2 id="actions-title">What you may do</h2>${forms}</section>`;
}

/**
 * What the page says after a form worked (the redirect's `?done=<action>`). Only these sentences are shown: the query
 * is the address bar's, and anyone can send a link with text of their choosing in it.
 */
const DONE_NOTICES: Record<PageAction, string> = {
  reapprove: "Re-approved: a new request under the new approval was recorded and queued for the gate. The entry is signed on the effect's receipt.",
  resolve: "Resolved. The entry is signed on the effect's receipt.",
  dismiss: "Dismissed. The entry is signed on the effect's receipt.",
};

/** A failed case's dismissal: no effect, so no receipt; the inbox index keeps who dismissed it, when and why. */
const CASE_FAILED_DISMISSED = 'Dismissed. The inbox keeps who dismissed it, when and why (a failed case has no effect, so no receipt).';

/** The sentence for `?done=`, only when the item was closed by that action: a link can say anything about any item. */
function doneNotice(done: unknown, item: InboxItem): string | null {
  const action = PAGE_ACTIONS.find((known) => known === done);
  if (action === undefined || item.closure?.action !== action) return null;
  if (action === 'dismiss' && item.closure.unsigned !== undefined) return `Dismissed. ${item.closure.unsigned}`;
  return item.kind === 'case_failed' && action === 'dismiss' ? CASE_FAILED_DISMISSED : DONE_NOTICES[action];
}

/** What a failed case's item shows where an effect's shows its effect and outcome: the case, its error, what to do. */
function caseFailureFacts(item: InboxItem): Html {
  return html`<dt>Case</dt><dd><code>${detailText(item, 'case_id') ?? 'not named'}</code> on <code>${item.subject}</code>, under approval <code>${detailText(item, 'approval') ?? 'not named'}</code></dd>
<dt>Error</dt><dd><code>${detailText(item, 'code') ?? 'not named'}</code></dd>
<dt>What to do</dt><dd>${detailText(item, 'what_to_do') ?? 'Read the case (GET /v1/cases/:id) for what failed it.'}</dd>`;
}

/** What held what was left of a deviation's approval below its cap (the item's `left_by`). */
const LEFT_BY_TEXT: Record<string, string> = {
  approval: 'effects under the approval hold or sent the rest',
  subject_cap: 'the cap set on the subject holds it',
  uses: 'every use of the approval is spent',
};

/**
 * What a model deviation asked against: the approval's cap and, when the decider was told less was left (the item's
 * `left_cents`), that too: an ask under the cap and over what was left is a deviation all the same. Null for an item
 * that names no cap.
 */
function deviationFacts(item: InboxItem): Html | null {
  const cap = detailCents(item, 'approved_cents');
  if (item.kind !== 'model_deviated' || cap === null) return null;
  const currency = item.currency ?? null;
  const decided = detailCents(item, 'decided_cents');
  const left = detailCents(item, 'left_cents');
  const by = LEFT_BY_TEXT[detailText(item, 'left_by') ?? ''];
  return html`<dt>Asked against</dt><dd>${decided === null ? null : html`The model asked ${moneyText(decided, currency)}; `}the approval's cap is ${moneyText(cap, currency)}${left === null || left >= cap ? null : html`, of which the decider was told ${moneyText(left, currency)} was left${by === undefined ? null : html` (${by})`}`}.</dd>`;
}

/** An effect's id, a link to its page for the roles that may open it (an approver may not: it would answer 403). */
const effectRef = (effectId: string, text: string, canOpen: boolean): Html => (canOpen ? html`<a href="/ui/effects/${effectId}"><code>${text}</code></a>` : html`<code>${text}</code>`);

/** `typed`: what was typed into the form answered again with this page (TypedForm), drawn back into it. */
export function inboxItemPage(input: { viewer: Viewer; item: InboxItem; canAct: boolean; canOpenEffects: boolean; notice: string | null; error: string | null; typed?: TypedForm | null }): Html {
  const { item } = input;
  const closure = item.closure;
  const factCurrency = changesCurrency(item);
  return layout(
    `Inbox: ${label(item.kind)}`,
    input.viewer,
    html`<h1>${label(item.kind)}: ${item.kind === 'case_failed' ? html`case <code>${detailText(item, 'case_id') ?? item.subject}</code>, nothing moved` : html`${atStake(item)} at stake`}</h1>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : null}
${input.notice ? html`<p role="status">${input.notice}</p>` : null}
<dl>
<dt>What happened</dt><dd>${item.happened}</dd>
${item.kind === 'case_failed'
  ? caseFailureFacts(item)
  : html`<dt>Effect</dt><dd>${effectRef(item.effectId, item.effectId, input.canOpenEffects)} on <code>${item.subject}</code></dd>
<dt>Outcome</dt><dd>${item.outcome ?? 'not settled'}</dd>
${deviationFacts(item)}`}
<dt>Opened</dt><dd>${iso(item.openedAt)}</dd>
<dt>Allowed actions</dt><dd>${item.actions.join(', ')}</dd>
</dl>
${item.changes.length === 0 ? null : html`<table><caption>Facts that changed</caption><thead><tr><th scope="col">Fact</th><th scope="col">Was</th><th scope="col">Now</th></tr></thead>
<tbody>${item.changes.map((change) => html`<tr><td>${change.field}</td><td>${factCell(item, change.field, change.was, factCurrency)}</td><td>${factCell(item, change.field, change.now, factCurrency)}</td></tr>`)}</tbody></table>`}
${closure === null
  ? input.canAct ? actionForms(item, input.viewer, input.typed ?? null) : html`<p>Only an approver may act on this item.</p>`
  : html`<section aria-labelledby="closed-title"><h2 id="closed-title">Closed</h2><p>${closure.by.name} (${closure.by.role}) chose <strong>${closure.action}</strong>${closure.resolution ? html` (${closure.resolution === 'landed' ? 'it landed' : 'it did not land'})` : null} at ${iso(closure.at)}${closure.note ? html`: ${closure.note}` : null}.${closure.unsigned === undefined ? null : html` ${closure.unsigned}`}${closure.reapproval ? html` New request ${effectRef(closure.reapproval.effectId, closure.reapproval.requestId, input.canOpenEffects)} under approval <code>${closure.reapproval.approval}</code>.` : null}</p></section>`}
<p><a href="/ui/inbox">Back to the inbox</a></p>`,
  );
}

export type InboxPageHelpers = {
  page(handler: (req: Request, res: Response, viewer: Viewer, caller: Caller) => Promise<void>): (req: Request, res: Response) => Promise<void>;
  send(res: Response, status: number, page: Html): void;
  /** A form post from this session's own page (CSRF token and origin checked). */
  ownForm(req: Request, viewer: Viewer): boolean;
  /**
   * Whether the form carries `caller`'s own API token (its `token` field; a bearer header is the token itself): null
   * when it does, else the refusal's status, sentence and Retry-After (s). A wrong token counts as a failed sign-in.
   */
  signer(req: Request, caller: Caller): { status: number; message: string; retryAfter?: number } | null;
  form: RequestHandler;
  messagePage(viewer: Viewer | null, title: string, message: string): Html;
};

const may = (caller: Caller, permission: 'readInbox' | 'actOnInbox' | 'readEffects') => (PERMISSIONS[permission] as readonly string[]).includes(caller.role);

/** The inbox's pages on the page's router, behind its sign-in. */
export function addInboxPages(router: Router, context: ApiContext, helpers: InboxPageHelpers): void {
  const { stores } = context;
  const { page, send } = helpers;

  const refuseReader = (res: Response, viewer: Viewer, caller: Caller) =>
    send(res, 403, helpers.messagePage(viewer, 'Inbox', `Token ${caller.name} has the ${caller.role} role; the inbox is for approvers, auditors and operators.`));

  router.get(
    INBOX_SECTION.path,
    page(async (req, res, viewer, caller) => {
      if (!may(caller, 'readInbox')) return refuseReader(res, viewer, caller);
      const status = req.query.status === 'closed' ? 'closed' : 'open';
      // A blank position is the first page, as a blank field of the effects page's filter is "any"; one the API's
      // inbox listing would refuse (not of the form the page links, or sent twice) is answered as the API does: 400.
      const given = req.query.starting_after;
      const after = given === undefined || given === '' ? undefined : given;
      if (after !== undefined && (typeof after !== 'string' || !inboxQuery.shape.starting_after.safeParse(after).success)) {
        const firstHref = status === 'closed' ? `${INBOX_SECTION.path}?status=closed` : INBOX_SECTION.path;
        return send(res, 400, inboxListPage({ viewer, items: [], status, nextHref: null, error: { message: BAD_CURSOR, firstHref } }));
      }
      const found = await stores.inbox.list({ status }, 25, after);
      const nextHref = found.next === null ? null : `${INBOX_SECTION.path}?${new URLSearchParams({ ...(status === 'closed' ? { status } : {}), starting_after: found.next }).toString()}`;
      send(res, 200, inboxListPage({ viewer, items: found.data, status, nextHref }));
    }),
  );

  /**
   * The item as a page draws it: with the fingerprint of the facts it shows (withFactsShown), which its re-approve form
   * sends back, so the re-approval stands on what this page showed and not on what the item shows by the click.
   */
  async function shownItem(item: InboxItem | null): Promise<InboxItem | null> {
    return item === null ? null : stores.inbox.withFactsShown(item);
  }

  async function itemOf(id: string): Promise<InboxItem | null> {
    return inboxItemParam.safeParse({ id }).success ? shownItem(await stores.inbox.get(id)) : null;
  }

  router.get(
    `${INBOX_SECTION.path}/:id`,
    page(async (req, res, viewer, caller) => {
      if (!may(caller, 'readInbox')) return refuseReader(res, viewer, caller);
      const item = await itemOf(String(req.params.id));
      if (item === null) return send(res, 404, helpers.messagePage(viewer, 'No such item', 'The inbox has no such item; it lists the open ones.'));
      send(res, 200, inboxItemPage({ viewer, item, canAct: may(caller, 'actOnInbox'), canOpenEffects: may(caller, 'readEffects'), notice: doneNotice(req.query.done, item), error: null }));
    }),
  );

  /** What is wrong with a form the schema refused, field by field, in the page's words. */
  function formProblem(error: unknown): string {
    const issues = (error as { issues?: { path?: PropertyKey[]; code?: string; maximum?: unknown; keys?: unknown }[] }).issues ?? [];
    const words = issues.map((issue) => {
      // A field this form has none of (a saved form, an extension, a post made by hand): the form itself is refused.
      if (issue.code === 'unrecognized_keys') {
        const keys = Array.isArray(issue.keys) ? issue.keys.map(String) : [];
        return `remove the field${keys.length === 1 ? '' : 's'} ${keys.join(', ')}, which this form does not take`;
      }
      const first = issue.path?.[0];
      if (first === undefined) return 'send the form from this page';
      const field = String(first);
      if (issue.code === 'too_big') return `the ${field} is longer than ${String(issue.maximum)} characters`;
      if (field === 'facts_shown') return 'read the item again and re-approve from its page (the form names the facts the page showed, and this one named none)';
      return field === 'resolution' ? 'choose what Stripe shows' : field === 'note' ? 'write a note of what was checked or done' : field === 'approval' ? 'give a valid approval id' : `the ${field} is not valid`;
    });
    return `The form ${words.length > 0 ? `needs changes: ${[...new Set(words)].join('; ')}` : 'is incomplete'}. Nothing was recorded.`;
  }

  for (const action of PAGE_ACTIONS) {
    router.post(
      `${INBOX_SECTION.path}/:id/${action}`,
      helpers.form,
      page(async (req, res, viewer, caller) => {
        // Refused as GET /ui/inbox/:id refuses, before the item is read: a refusal that drew the item would show it,
        // its closure note included, to a role the inbox is closed to.
        if (!may(caller, 'readInbox')) return refuseReader(res, viewer, caller);
        const id = String(req.params.id);
        const item = await itemOf(id);
        if (item === null) return send(res, 404, helpers.messagePage(viewer, 'No such item', 'The inbox has no such item; nothing was recorded.'));
        // The page drawn again carries this session's token, so an approver's forms work from it.
        if (!helpers.ownForm(req, viewer)) return send(res, 403, inboxItemPage({ viewer, item, canAct: may(caller, 'actOnInbox'), canOpenEffects: may(caller, 'readEffects'), notice: null, error: 'The form was not this session’s own (CSRF token or origin); nothing was recorded. Use the form on this page.' }));
        if (!may(caller, 'actOnInbox')) return send(res, 403, inboxItemPage({ viewer, item, canAct: false, canOpenEffects: may(caller, 'readEffects'), notice: null, error: `Token ${caller.name} has the ${caller.role} role; only approvers act on the inbox. Nothing was recorded.` }));
        // A browser sends a textarea's line breaks as CRLF: counted as one character each, as the person typed them.
        // The CSRF token and the person's own token are the page's, not the action's: never passed on, never shown.
        const fields = Object.fromEntries(Object.entries((req.body ?? {}) as Record<string, unknown>).filter(([key, value]) => key !== 'csrf' && key !== 'token' && typeof value === 'string' && value.trim() !== '').map(([key, value]) => [key, (value as string).replace(/\r\n/g, '\n')]));
        const typed: TypedForm = { action, note: fields.note, approval: fields.approval, resolution: fields.resolution };
        // The cookie alone never acts: whoever holds a copy of it can read this page and its CSRF token, not the token.
        const unsigned = helpers.signer(req, caller);
        if (unsigned !== null) {
          if (unsigned.retryAfter !== undefined) res.setHeader('Retry-After', String(unsigned.retryAfter));
          return send(res, unsigned.status, inboxItemPage({ viewer, item, canAct: true, canOpenEffects: may(caller, 'readEffects'), notice: null, error: unsigned.message, typed }));
        }
        const by = { name: caller.name, role: caller.role };
        const actions = inboxActionsFor(context, by);
        try {
          context.intake?.assertDurable();
          if (action === 'reapprove') {
            // The facts this page showed (its hidden facts_shown), never the item's as they stand at the click.
            const body = reapproveForm.parse(fields);
            assertReapprovalRecorded((await actions.reapprove(id, { approval: body.approval, note: body.note ?? '', by, factsShown: body.facts_shown })).recorded);
          } else if (action === 'resolve') {
            const body = resolveBody.parse(fields);
            await actions.resolve(id, { resolution: body.resolution, note: body.note, by });
          } else {
            const body = dismissBody.parse(fields);
            await actions.dismiss(id, { note: body.note, by });
          }
        } catch (error) {
          // A form the schema refused names its fields; anything else is answered with the status the API gives it
          // (asApiError). Redis refusing or not answering (503) and the service's own faults (500) go to the router's
          // failure page, which says what may have been recorded and never shows Redis's or the fault's own words.
          const zod = error instanceof Error && error.name === 'ZodError';
          const failure = zod ? null : asApiError(error);
          if (failure !== null && failure.status >= 500) throw error;
          const status = failure === null ? 400 : failure.status;
          const message = failure === null ? formProblem(error) : redactSecrets(failure.message);
          return send(res, status, inboxItemPage({ viewer, item: (await shownItem(await stores.inbox.get(id))) ?? item, canAct: true, canOpenEffects: may(caller, 'readEffects'), notice: null, error: message, typed }));
        }
        res.redirect(303, `${INBOX_SECTION.path}/${id}?done=${action}`);
      }),
    );
  }
}
