// The page's HTML (issue 13 §3): the sign-in form, the effects list with open alerts at the top, and one effect's
// receipt as a timeline. Plain HTML and CSS, readable without JavaScript; every value from the journal goes
// through `html`, which escapes it.
import { currencyCode, isMoneyPremise, moneyText, type Alert, type Entry, type EntrySignature, type Verification } from '../../src/interlock.js';
import type { EffectSummary } from '../api/effect-view.js';
import { html, type Html } from './html.js';

/** Where a Stripe id is shown: the Stripe dashboard (test or live mode) or the sandbox's own API. */
export type StripeLinks = { kind: 'dashboard'; mode: 'test' | 'live' } | { kind: 'sandbox'; baseUrl: string };

/** A section another part of the service adds to the page (the escalation inbox, issue 13 §4): a nav link and its page. */
export type UiSection = { path: string; label: string };

/** The signed-in caller; `sections` are the pages its role may open, in the navigation's order (the first is its home). */
export type Viewer = { name: string; role: string; csrf: string; sections: readonly UiSection[] };

const DASHBOARD: Record<string, string> = { pi: 'payments', ch: 'payments', py: 'payments', re: 'refunds', du: 'disputes', dp: 'disputes', cus: 'customers', evt: 'events' };
const SANDBOX: Record<string, string> = { pi: 'payment_intents', ch: 'charges', re: 'refunds', du: 'disputes', dp: 'disputes', cus: 'customers', evt: 'events' };
const STRIPE_ID = /^(pi|ch|py|re|du|dp|cus|cbtx|cn|evt)_[A-Za-z0-9]{1,250}$/;

export function stripeUrl(id: string, links: StripeLinks): string | null {
  const prefix = STRIPE_ID.exec(id)?.[1];
  if (prefix === undefined) return null;
  if (links.kind === 'dashboard') {
    const path = DASHBOARD[prefix];
    return path === undefined ? null : `https://dashboard.stripe.com${links.mode === 'test' ? '/test' : ''}/${path}/${encodeURIComponent(id)}`;
  }
  const path = SANDBOX[prefix];
  return path === undefined ? null : `${links.baseUrl.replace(/\/+$/, '')}/v1/${path}/${encodeURIComponent(id)}`;
}

/** Every Stripe object id anywhere in a value (an entry's result, facts, payload), in order of appearance. */
export function stripeIdsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    if (STRIPE_ID.test(value)) found.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) stripeIdsIn(item, found);
  } else if (value !== null && typeof value === 'object') {
    for (const item of Object.values(value)) stripeIdsIn(item, found);
  }
  return found;
}

function stripeLink(id: string, links: StripeLinks): Html {
  const url = stripeUrl(id, links);
  return url === null ? html`<code>${id}</code>` : html`<a href="${url}" rel="noreferrer noopener"><code>${id}</code></a>`;
}

const iso = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
/** An amount in `currency` (the effect's for its own money and an approval's cap, observedCurrency for a fact); null: unknown. */
const money = (cents: number | null, currency: string | null) => (cents === null ? '—' : moneyText(cents, currency));

/**
 * The currency of the amount a fact Stripe recorded states (an OBSERVED entry): the one it records (a balance
 * transaction labelled with the effect: a debit taking the credit back may be in another currency, and is then not
 * counted, src/facts/apply.ts). Else the effect's for objects of the effect's own money, which share it (its refund,
 * the payment's dispute and charge, its own balance credit recorded before facts named a currency), and a currency
 * unknown (null) for another party's compensation, which need not (a credit note, a balance credit not made by this
 * effect's send: their facts name none).
 */
function observedCurrency(entry: Extract<Entry, { kind: 'OBSERVED' }>, currency: string | null): string | null {
  return currencyCode(entry.currency) ?? (entry.objectType === 'credit_note' || entry.incident !== undefined ? null : currency);
}

/**
 * The amount a fact Stripe recorded states, as a person reads it. A customer balance transaction's amount is signed
 * from the merchant's side (negative: credit the customer holds; positive: a debit taking credit back), so it is
 * written as the credit or debit it is, `credit of $5.00`, not as a negative sum of money; other objects' amounts as they are.
 */
function observedAmount(entry: Extract<Entry, { kind: 'OBSERVED' }>, currency: string | null): string {
  const amount = entry.amount ?? 0;
  const of = observedCurrency(entry, currency);
  if (entry.objectType !== 'customer_balance_transaction' || amount === 0) return money(amount, of);
  return `${amount < 0 ? 'credit' : 'debit'} of ${money(Math.abs(amount), of)}`;
}
const json = (value: unknown) => JSON.stringify(value);

export function layout(title: string, viewer: Viewer | null, body: Html): Html {
  const nav =
    viewer === null
      ? null
      : html`<nav aria-label="Sections"><ul>
  ${viewer.sections.map((section) => html`<li><a href="${section.path}">${section.label}</a></li>`)}
  ${viewer.role === 'operator' ? html`<li><a href="/admin/queues">Queues</a></li>` : null}
  ${viewer.role === 'operator' || viewer.role === 'auditor' ? html`<li><a href="/metrics">Metrics</a></li>` : null}
</ul></nav>
<form method="post" action="/ui/sign-out" class="sign-out"><input type="hidden" name="csrf" value="${viewer.csrf}"><span>Signed in as <strong>${viewer.name}</strong> (${viewer.role})</span> <button type="submit">Sign out</button></form>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Interlock</title>
<link rel="stylesheet" href="/ui/style.css">
</head>
<body>
<a class="skip" href="#main">Skip to the content</a>
<header><p class="brand">Interlock for Stripe</p>${nav}</header>
<main id="main">
${body}
</main>
</body>
</html>
`;
}

export function signInPage(options: { error?: string | null; next?: string }): Html {
  return layout(
    'Sign in',
    null,
    html`<h1>Sign in</h1>
<p>Paste an API token (support, approver, auditor or operator). It is kept in a cookie this page cannot read from scripts, and sent only to this service.</p>
${options.error ? html`<p class="error" role="alert">${options.error}</p>` : null}
<form method="post" action="/ui/sign-in" class="sign-in">
<label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required minlength="16" maxlength="256">
<input type="hidden" name="next" value="${options.next ?? '/ui'}">
<button type="submit">Sign in</button>
</form>`,
  );
}

export function messagePage(viewer: Viewer | null, title: string, message: string): Html {
  // Back to a page the viewer may open: an approver's first is the inbox, the effects would answer it 403.
  const home = viewer === null ? { path: '/ui', label: 'Effects' } : viewer.sections[0];
  return layout(title, viewer, html`<h1>${title}</h1><p>${message}</p>${home === undefined ? null : html`<p><a href="${home.path}">Back to the ${home.label.toLowerCase()}</a></p>`}`);
}

/**
 * The page for a browser that sent the open sessions of several callers (`names`): it acts as none of them, and its
 * sign-out form (with the CSRF token of one of them, posted to `signOut`, under the page's own path) ends them all.
 */
export function mixedSessionsPage(names: string, csrf: string, signOut: string): Html {
  return layout(
    'Signed in twice',
    null,
    html`<h1>Signed in twice</h1>
<p role="alert">This browser sent the page sessions of several tokens: ${names}. Another server on this host can set a cookie for this page (browsers share cookies between the ports of a host), so which of them is yours cannot be told, and nothing is shown or done under either.</p>
<p>Sign out to end all of them, then sign in again with your token.</p>
<form method="post" action="${signOut}"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out of all of them</button></form>`,
  );
}

/** Open alerts the effects page lists; it is given one more, to say when there are more. */
export const ALERTS_SHOWN = 20;

function alertsSection(alerts: readonly Alert[] | null): Html | null {
  if (alerts === null) return null;
  if (alerts.length === 0) return html`<section aria-labelledby="alerts-title" class="alerts none"><h2 id="alerts-title">Open alerts</h2><p>No open alerts: no money is at stake after a send.</p></section>`;
  const shown = alerts.slice(0, ALERTS_SHOWN);
  const more = alerts.length > ALERTS_SHOWN;
  return html`<section aria-labelledby="alerts-title" class="alerts"><h2 id="alerts-title">Open alerts (${more ? `the ${ALERTS_SHOWN} newest of more than ${ALERTS_SHOWN}` : shown.length})</h2>
${more ? html`<p>More alerts are open than this page lists: see <code>npx interlock alerts</code> or <code>GET /v1/alerts</code> (up to 100 each).</p>` : null}
<ul>${shown.map(
    (alert) => html`<li><strong>${alert.kind.replace(/_/g, ' ')}</strong>: ${moneyText(alert.centsAtStake, alert.currency ?? null)} at stake on <code>${alert.subject}</code>. ${alert.sentence} <em>${alert.action}</em> <a href="/ui/effects/${alert.effectId}">Open the effect</a></li>`,
  )}</ul></section>`;
}

/**
 * A list page's answer to a page position (`starting_after`) it never gave out (a link edited by hand, cut short, or
 * from another list), as the API refuses such a cursor: 400, with a link to the first page, never the first page
 * shown as if it were the one asked for.
 */
export const BAD_CURSOR = 'The page position in this address (starting_after) is not one this page gave out, so no page was shown. Start again from the first page.';

export type ListFilters = { state?: string | undefined; outcome?: string | undefined; subject?: string | undefined; request?: string | undefined };

function option(value: string, label: string, selected: string | undefined): Html {
  return html`<option value="${value}"${selected === value ? html` selected` : null}>${label}</option>`;
}

export function effectsPage(input: {
  viewer: Viewer;
  alerts: readonly Alert[] | null;
  filters: ListFilters;
  states: readonly string[];
  outcomes: readonly string[];
  effects: readonly EffectSummary[];
  nextHref: string | null;
  firstHref: string | null;
  error: string | null;
}): Html {
  const { filters } = input;
  const rows = input.effects.map(
    (effect) => html`<tr>
<td><a href="/ui/effects/${effect.id}"><code>${effect.id.slice(0, 12)}…</code></a></td>
<td>${effect.created_at === null ? '—' : iso(Date.parse(effect.created_at))}</td>
<td>${effect.request_id ?? '—'}</td>
<td>${effect.kind ?? '—'}</td>
<td><code>${effect.subject}</code></td>
<td class="num">${money(effect.amount, effect.currency)}</td>
<td><span class="state state-${effect.state}">${effect.state}</span></td>
<td>${effect.outcome ?? '—'}</td>
</tr>`,
  );
  return layout(
    'Effects',
    input.viewer,
    html`${alertsSection(input.alerts)}
<h1>Effects</h1>
<form method="get" action="/ui" class="filters" aria-label="Filter the effects">
<div><label for="f-state">State</label><select id="f-state" name="state">${option('', 'any', filters.state ?? '')}${input.states.map((state) => option(state, state, filters.state))}</select></div>
<div><label for="f-outcome">Outcome</label><select id="f-outcome" name="outcome">${option('', 'any', filters.outcome ?? '')}${input.outcomes.map((outcome) => option(outcome, outcome, filters.outcome))}</select></div>
<div><label for="f-subject">Subject</label><input id="f-subject" name="subject" value="${filters.subject ?? ''}" placeholder="payment:pi_… or customer:cus_…"></div>
<div><label for="f-request">Request id</label><input id="f-request" name="request" value="${filters.request ?? ''}"></div>
<div><button type="submit">Filter</button> <a href="/ui">Clear</a></div>
</form>
${input.error ? html`<p class="error" role="alert">${input.error}</p>` : null}
${
  input.effects.length === 0 && input.error !== null
    ? // Refused (its filter or page position): nothing was looked for, so nothing is said to match or not.
      null
    : input.effects.length === 0
    ? // A page that stopped at the listing's scan budget (a filter few effects match) has no rows and a next page: the
      // effects after it were not looked at, so "none match" would be a false no.
      input.nextHref === null
      ? html`<p>No effects match.</p>`
      : html`<p>No match among the effects looked at so far, newest first; older effects remain to be looked at: <a href="${input.nextHref}">look further</a>.</p>`
    : html`<table>
<caption>Effects, newest first</caption>
<thead><tr><th scope="col">Effect</th><th scope="col">Created</th><th scope="col">Request</th><th scope="col">Kind</th><th scope="col">Subject</th><th scope="col">Amount</th><th scope="col">State</th><th scope="col">Outcome</th></tr></thead>
<tbody>${rows}</tbody>
</table>`
}
<nav aria-label="Pages" class="pages">${input.firstHref ? html`<a href="${input.firstHref}">First page</a>` : null} ${input.nextHref ? html`<a href="${input.nextHref}" rel="next">Next page</a>` : null}</nav>`,
  );
}

const SIGNATURE_WORDS: Record<EntrySignature['status'], string> = {
  signed: 'signed, verified',
  covered: 'covered by the signature of entry',
  altered: 'ALTERED: its content does not match its hash',
  bad_signature: 'BAD SIGNATURE',
  unknown_key: 'signed with an unknown key',
  unsigned: 'NOT SIGNED: no signature covers it',
};

function signatureCell(signature: EntrySignature | undefined): Html {
  if (signature === undefined) return html`<span class="sig sig-bad">not checked</span>`;
  const good = signature.status === 'signed' || signature.status === 'covered';
  const words = signature.status === 'covered' && signature.by !== null ? `${SIGNATURE_WORDS.covered} ${signature.by + 1}` : SIGNATURE_WORDS[signature.status];
  return html`<span class="sig ${good ? 'sig-ok' : 'sig-bad'}">${words}</span>${signature.kid ? html` <small>(key <code>${signature.kid}</code>)</small>` : null}`;
}

type PremiseChangeShown = { field: string; was: unknown; now: unknown };

/**
 * A changed premise's value: its JSON, and beside an amount of money (isMoneyPremise: a payment's refundable and
 * refunded_by_others, a customer's incident_compensation) the money it is in the effect's currency, as the change's
 * sentence states it; bare while the same changes move the currency itself (each amount is in its own then).
 */
function premiseValue(field: string, value: unknown, changes: readonly PremiseChangeShown[], currency: string | null): Html {
  const shown = changes.some((change) => change.field === 'currency') ? null : currency;
  if (shown === null || typeof value !== 'number' || !Number.isSafeInteger(value) || !isMoneyPremise(null, field)) return html`<code>${json(value)}</code>`;
  return html`<code>${json(value)}</code> (${moneyText(value, shown)})`;
}

function checksList(label: string, checks: { approvalLive: boolean; approvalProblems: string[]; violations: string[]; changes: PremiseChangeShown[] } | null, currency: string | null): Html | null {
  if (checks === null) return null;
  return html`<dt>${label}</dt><dd><ul>
<li>Approval ${checks.approvalLive ? 'live' : 'not live'}${checks.approvalProblems.length > 0 ? html`: ${checks.approvalProblems.join('; ')}` : null}</li>
${checks.violations.length === 0 ? html`<li>Premises held</li>` : null}
${checks.changes.map((change) => html`<li>Premise <code>${change.field}</code> changed: was ${premiseValue(change.field, change.was, checks.changes, currency)}, now ${premiseValue(change.field, change.now, checks.changes, currency)}</li>`)}
</ul></dd>`;
}

/** Who wrote an entry and what it says, as label/value pairs. */
function entryFacts(entry: Entry, currency: string | null): Html {
  switch (entry.kind) {
    case 'PROPOSED':
      return html`<dt>Who</dt><dd>${entry.agent}${typeof entry.request === 'object' && entry.request !== null && !Array.isArray(entry.request) && typeof entry.request.token === 'string' ? html` (token ${entry.request.token})` : null}</dd>
<dt>Approval</dt><dd>${entry.approval ?? 'none'}</dd>
<dt>Payload</dt><dd><code>${json(entry.effect)}</code></dd>
<dt>Premises decided on</dt><dd><code>${json(entry.premises)}</code></dd>
${entry.decision ? html`<dt>Decision (${entry.decision.model})</dt><dd class="quote">${entry.decision.text}</dd>` : null}`;
    case 'AUTHORIZED':
      return html`<dt>Who</dt><dd>approved by ${entry.approval.approver} (approval ${entry.approval.id})</dd>
<dt>Terms</dt><dd>up to ${money(entry.approval.capCents, currency)}, ${entry.approval.maxUses} use(s), on <code>${entry.approval.scope}</code>, until ${iso(entry.approval.expiresAt)}</dd>`;
    case 'DISPATCHED':
      return html`<dt>Who</dt><dd>worker ${entry.owner} (epoch ${entry.epoch})</dd>
<dt>Send deadline</dt><dd>${iso(entry.sendDeadline)}</dd>
${checksList('Checks before the send', entry.checks, currency)}`;
    case 'COMMITTED':
      return html`<dt>How</dt><dd>${entry.via} (epoch ${entry.epoch})</dd>${checksList('Re-checked at recovery', entry.rechecked, currency)}`;
    case 'REFUSED':
      return html`<dt>Code</dt><dd>${entry.code}</dd><dt>Reason</dt><dd>${entry.reason}</dd>
${entry.changes.map((change) => html`<dt>Premise change</dt><dd><code>${change.field}</code>: was ${premiseValue(change.field, change.was, entry.changes, currency)}, now ${premiseValue(change.field, change.now, entry.changes, currency)}</dd>`)}
${checksList('Checks', entry.checks, currency)}${checksList('Re-checked at recovery', entry.rechecked, currency)}`;
    case 'AMBIGUOUS':
      return html`<dt>Reason</dt><dd>${entry.reason}</dd>${checksList('Re-checked at recovery', entry.rechecked, currency)}`;
    case 'LATE_RESULT':
      return html`<dt>Who</dt><dd>fenced-out worker ${entry.owner} (epoch ${entry.epoch})</dd><dt>Its answer</dt><dd>${entry.outcome}${entry.error ? html`: ${entry.error}` : null}</dd>`;
    case 'OBSERVED':
      return html`<dt>Source</dt><dd>${entry.source === 'webhook' ? `Stripe webhook ${entry.eventType}` : `re-read from Stripe (${entry.eventType})`}</dd>
<dt>What Stripe says</dt><dd>${entry.objectType} ${entry.status ?? entry.disputeStatus ?? ''}${entry.amount === null ? null : html`, ${observedAmount(entry, currency)}`}${entry.failureReason ? html`, failure: ${entry.failureReason}` : null}${entry.disputeReason ? html`, reason: ${entry.disputeReason}` : null}</dd>`;
    case 'RESOLVED':
      return html`<dt>Who</dt><dd>${entry.by.name} (${entry.by.role})</dd>
<dt>Action</dt><dd>${entry.action}${entry.resolution ? html`: ${entry.resolution === 'landed' ? 'landed' : 'did not land'}` : null} (inbox item <code>${entry.item}</code>)</dd>
${entry.reapproval ? html`<dt>New proposal</dt><dd>request <code>${entry.reapproval.requestId}</code> under approval ${entry.reapproval.approval}, effect <code>${entry.reapproval.effectId}</code></dd>` : null}
<dt>Note</dt><dd class="quote">${entry.note}</dd>`;
    default: {
      const never: never = entry;
      return never;
    }
  }
}

const ANSWER_FROM: Record<string, string> = { gate: 'the gate\'s outcome', operator: 'a person\'s finding after checking Stripe' };

function answerLine(detail: { answer: string | null; answer_from: string | null; answer_matches_final_money: boolean | null }): Html {
  if (detail.answer === null) return html`<dt>Answer</dt><dd data-testid="answer">nobody can say yet</dd>`;
  const disagreement = detail.answer_matches_final_money === false ? html` <strong>Stripe holds otherwise now (the status below).</strong>` : null;
  return html`<dt>Answer</dt><dd data-testid="answer">${detail.answer.replace(/_/g, ' ')} (${ANSWER_FROM[detail.answer_from ?? ''] ?? 'unknown'})${disagreement}</dd>`;
}

function moneySection(detail: { final_money: Record<string, unknown>; exposure: Record<string, unknown> | null; answer: string | null; answer_from: string | null; answer_matches_final_money: boolean | null }, links: StripeLinks, currency: string | null): Html {
  const final = detail.final_money;
  const refunds = Array.isArray(final.refunds) ? (final.refunds as { id?: unknown; status?: unknown; amount?: unknown }[]) : [];
  const disputes = Array.isArray(final.disputes) ? (final.disputes as { id?: unknown; status?: unknown; amount?: unknown }[]) : [];
  const exposure = detail.exposure;
  return html`<section aria-labelledby="money-title" class="money"><h2 id="money-title">Final money</h2>
<dl>
${answerLine(detail)}
<dt>Status</dt><dd data-testid="final-money-status">${String(final.status ?? 'unknown').replace(/_/g, ' ')}</dd>
${refunds.length > 0 ? html`<dt>Refunds</dt><dd><ul>${refunds.map((refund) => html`<li>${stripeLink(String(refund.id), links)} ${String(refund.status ?? '')} ${typeof refund.amount === 'number' ? money(refund.amount, currency) : ''}</li>`)}</ul></dd>` : null}
${typeof final.failure_reason === 'string' ? html`<dt>Failure reason</dt><dd>${final.failure_reason}</dd>` : null}
${disputes.length > 0 ? html`<dt>Disputes</dt><dd><ul>${disputes.map((dispute) => html`<li>${stripeLink(String(dispute.id), links)} ${String(dispute.status ?? '')} ${typeof dispute.amount === 'number' ? money(dispute.amount, currency) : ''}</li>`)}</ul></dd>` : null}
<dt>Exposure</dt><dd data-testid="exposure">${exposure === null ? 'none' : typeof exposure.sentence === 'string' ? exposure.sentence : 'see its figures below'}</dd>
${exposure === null ? null : html`<dt>Exposure figures</dt><dd data-testid="exposure-figures"><code>${json(exposure)}</code></dd>`}
</dl></section>`;
}

export function effectPage(input: {
  viewer: Viewer;
  summary: EffectSummary;
  detail: { journal: readonly { kind: string; at_ms: number }[]; final_money: Record<string, unknown>; exposure: Record<string, unknown> | null; answer: string | null; answer_from: string | null; answer_matches_final_money: boolean | null; receipt_valid: boolean | null };
  /**
   * The receipt's own entries (what a download holds, and what the signatures are over), each one's signature and
   * its verification; null for a role that may not read receipts, which sees what GET /v1/effects/:id shows it:
   * each entry's kind and time, and whether the receipt is valid.
   */
  receipt: { entries: readonly Entry[]; signatures: readonly EntrySignature[]; verification: Verification } | null;
  links: StripeLinks;
  canDownload: boolean;
}): Html {
  const { summary, receipt } = input;
  const items =
    receipt === null
      ? input.detail.journal.map(
          (entry, index) => html`<li class="entry kind-${entry.kind.toLowerCase()}">
<h3><span class="n">${index + 1}.</span> ${entry.kind} <time datetime="${new Date(entry.at_ms).toISOString()}">${iso(entry.at_ms)}</time></h3>
</li>`,
        )
      : receipt.entries.map((entry, index) => {
          const ids = [...stripeIdsIn(entry)];
          return html`<li class="entry kind-${entry.kind.toLowerCase()}">
<h3><span class="n">${index + 1}.</span> ${entry.kind} <time datetime="${new Date(entry.at).toISOString()}">${iso(entry.at)}</time></h3>
<dl>
${entryFacts(entry, summary.currency)}
${ids.length > 0 ? html`<dt>Stripe</dt><dd>${ids.map((id, at) => html`${at > 0 ? ', ' : ''}${stripeLink(id, input.links)}`)}</dd>` : null}
<dt>Signature</dt><dd>${signatureCell(receipt.signatures[index])}</dd>
</dl>
</li>`;
        });
  const valid = (value: boolean | null) => (value === true ? 'verifies' : value === false ? 'does NOT verify' : 'could not be authenticated');
  const verification = receipt?.verification ?? null;
  const verdict =
    verification === null
      ? html`<p class="verdict ${input.detail.receipt_valid === true ? 'sig-ok' : 'sig-bad'}">Receipt ${valid(input.detail.receipt_valid)}. Its entries, signatures and verification are shown to auditors and operators.</p>`
      : html`<p class="verdict ${verification.valid === true ? 'sig-ok' : 'sig-bad'}">Receipt ${valid(verification.valid)}: ${verification.entries} entries, chain ${verification.chainIntact ? 'intact' : 'broken'}, happened ${String(verification.happened)}, once ${verification.happenedOnce ? 'yes' : 'no'}.</p>
${verification.problems.length > 0 ? html`<ul class="error">${verification.problems.map((problem) => html`<li>${problem}</li>`)}</ul>` : null}`;
  return layout(
    `Effect ${summary.id.slice(0, 12)}`,
    input.viewer,
    html`<p><a href="/ui">← All effects</a></p>
<h1>Effect <code>${summary.id.slice(0, 12)}…</code></h1>
<dl class="summary">
<dt>Effect id</dt><dd><code>${summary.id}</code></dd>
<dt>Request</dt><dd>${summary.request_id ?? '—'}</dd>
<dt>What</dt><dd>${summary.kind ?? '—'} of ${money(summary.amount, summary.currency)} on ${stripeLink(summary.subject.replace(/^(payment|customer):/, ''), input.links)}</dd>
<dt>Proposed by</dt><dd>${summary.agent ?? '—'} under approval ${summary.approval ?? 'none'}</dd>
<dt>State</dt><dd><span class="state state-${summary.state}">${summary.state}</span></dd>
<dt>Outcome</dt><dd data-testid="outcome">${summary.outcome ?? 'not settled yet'}</dd>
<dt>In words</dt><dd>${summary.sentence}</dd>
${summary.reason === null ? null : html`<dt>Why</dt><dd data-testid="reason">${summary.reason}</dd>`}
</dl>
${verdict}
${input.canDownload ? html`<p><a class="button" href="/ui/effects/${summary.id}/receipt" download="receipt-${summary.id.slice(0, 12)}.json">Download the receipt</a> (verify it with <code>npx interlock receipt verify FILE</code>)</p>` : null}
${moneySection(input.detail, input.links, summary.currency)}
<section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>
<ol class="timeline">${items}</ol></section>`,
  );
}

export const STYLESHEET = `
:root { color-scheme: light; --ink: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --link: #0b4fa8; --ok: #0d5e23; --bad: #a3111b; --bg: #ffffff; --panel: #f4f5f7; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
a { color: var(--link); }
a:focus, button:focus, input:focus, select:focus { outline: 3px solid #f0b400; outline-offset: 2px; }
.skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: 1rem; background: #fff; padding: .5rem; }
header { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; padding: .75rem 1.25rem; background: var(--panel); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; margin: 0; }
nav ul { list-style: none; display: flex; gap: 1rem; margin: 0; padding: 0; }
.sign-out { margin-left: auto; display: flex; gap: .5rem; align-items: center; }
main { padding: 1rem 1.25rem 3rem; max-width: 72rem; }
h1 { font-size: 1.6rem; margin: .5rem 0 1rem; } h2 { font-size: 1.25rem; margin: 1.5rem 0 .5rem; } h3 { font-size: 1.05rem; margin: 0 0 .25rem; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: .9em; overflow-wrap: anywhere; }
button, .button { font: inherit; padding: .35rem .9rem; border: 1px solid #1f3f7a; background: #1f3f7a; color: #fff; border-radius: 4px; text-decoration: none; display: inline-block; cursor: pointer; }
label { display: block; font-weight: 600; }
input, select { font: inherit; padding: .3rem .4rem; border: 1px solid #6b6b6b; border-radius: 4px; background: #fff; color: var(--ink); }
.sign-in { display: grid; gap: .5rem; max-width: 28rem; }
.filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: end; margin-bottom: 1rem; }
table { border-collapse: collapse; width: 100%; } td { overflow-wrap: anywhere; } caption { text-align: left; color: var(--muted); padding-bottom: .25rem; }
th, td { text-align: left; border-bottom: 1px solid var(--line); padding: .4rem .5rem; vertical-align: top; } td.num { text-align: right; }
.state { font-weight: 600; } .state-committed { color: var(--ok); } .state-refused, .state-ambiguous { color: var(--bad); }
.alerts { border: 2px solid var(--bad); padding: .5rem 1rem; border-radius: 6px; } .alerts.none { border-color: var(--line); }
.error { color: var(--bad); font-weight: 600; }
.timeline { list-style: none; padding: 0; } .entry { border-left: 4px solid var(--line); padding: .5rem 1rem; margin-bottom: .75rem; background: var(--panel); }
.kind-committed { border-left-color: var(--ok); } .kind-refused, .kind-ambiguous { border-left-color: var(--bad); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .25rem 0; } dt { font-weight: 600; color: var(--muted); } dd { margin: 0; overflow-wrap: anywhere; min-width: 0; }
dd ul { margin: 0; padding-left: 1.1rem; }
.sig-ok { color: var(--ok); font-weight: 600; } .sig-bad { color: var(--bad); font-weight: 700; }
.quote { white-space: pre-wrap; }
.pages { display: flex; gap: 1rem; margin-top: 1rem; }
time { color: var(--muted); font-weight: 400; font-size: .9em; margin-left: .5rem; }
`;
