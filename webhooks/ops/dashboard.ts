// The queue dashboard (issue 13 §2): bull-board under /admin/queues, for the operator role, showing the effects,
// facts and decisions queues. Read-only, twice over: every queue is added in bull-board's readOnlyMode (its own API
// answers 405 to retry, remove, promote, clean, pause, add), and this router lets only GET and HEAD through, so a
// bull-board release that forgot a check still cannot change a queue from here.
//
// Why it matters: a job is only a request to run gate.submit on the effect's latest recorded proposal. Even a job
// that was retried or re-added by hand runs through gate.submit, which re-reads the premises and checks the
// approval and the claim atomically with the send, so no job can make money move outside the gate. What the
// dashboard could still do wrong is remove a waiting job (the effect would stay recorded and unsent until the same
// request is sent again: recovery queues only a proposal whose job was never added) or run one before its delay;
// read-only mode rules that out too.
//
// The board's page loads nothing from another site. bull-board's index links Google's font stylesheet: an operator
// opening the board would tell a third party that they did (and when), and on a closed network, where this service
// often runs, the page would wait on a request that never ends. Its page is served with every stylesheet, preload or
// script from another origin taken out (its CSS falls back to the system's fonts), and its Content-Security-Policy
// lets the browser fetch nothing but from this service, so a later bull-board release that loads something new from
// elsewhere is blocked in the browser (and fails tests/ops/dashboard-own-origin.test.ts) rather than leaking.
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express, { type Router } from 'express';
import { apiError } from '../api/errors.js';
import type { OpsQueues } from './queues.js';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * The board's Content-Security-Policy: everything from this service only. Styles may also be inline: bull-board draws
 * its loading screen and parts of its queue and job views with style attributes and <style> elements, which Chromium
 * blocks under `style-src 'self'` (tests/ops/dashboard-browser.test.ts). Its scripts are all files, so no inline script
 * runs. `base-uri 'self'`: the page sets <base href> to the board's path.
 */
export const DASHBOARD_CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

// A <link> (stylesheet, preconnect, preload, icon) or a <script> whose address names a host: absolute, or
// scheme-relative. Addresses relative to the board's <base> are this service's and stay.
const OTHER_ORIGIN = String.raw`\s*=\s*["']?\s*(?:[a-z][a-z0-9+.-]*:)?//`;
const LINK_ELSEWHERE = new RegExp(String.raw`<link\b[^>]*?\shref${OTHER_ORIGIN}[^>]*>`, 'gi');
const SCRIPT_ELSEWHERE = new RegExp(String.raw`<script\b[^>]*?\ssrc${OTHER_ORIGIN}[^>]*>\s*</script\s*>`, 'gi');

/** The board's page without what it would load from another origin; a page that loads nothing from elsewhere is returned as it is. */
export function withoutOtherOrigins(page: string): string {
  return page.replace(LINK_ELSEWHERE, '').replace(SCRIPT_ELSEWHERE, '');
}

const DESCRIPTIONS: Record<string, string> = {
  effects: 'Gated effects to send; each job runs gate.submit on the latest recorded proposal.',
  facts: 'Verified Stripe events to append to receipts as post-send facts.',
  decisions: 'Support cases for the decider.',
};

export function queueDashboard(queues: OpsQueues, basePath = DASHBOARD_PATH): Router {
  const adapter = new ExpressAdapter();
  adapter.setBasePath(basePath);
  createBullBoard({
    queues: queues.queues.map(({ name, queue }) => new BullMQAdapter(queue, { readOnlyMode: true, allowRetries: false, displayName: name, description: DESCRIPTIONS[name] ?? '' })),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'Interlock queues' } },
  });
  const board = adapter.getRouter() as express.Express;
  // Answered as the /ui pages are (webhooks/ui/routes.ts send): the board's page and its JSON show every job's payment,
  // amount, approval and agent, so nothing is kept by a browser or a proxy, and no other site may frame it. Its own
  // Express app would also announce itself and tag answers for revalidation, which the service's app turns off.
  board.disable('x-powered-by');
  board.set('etag', false);
  // The adapter answers its page with res.render, which renders through the board app's render: the page is taken
  // from there, before it is sent.
  const render = board.render.bind(board);
  board.render = (name: string, options?: object | ((err: Error, html: string) => void), callback?: (err: Error, html: string) => void) => {
    const done = typeof options === 'function' ? options : callback;
    const locals = typeof options === 'function' ? {} : (options ?? {});
    render(name, locals, (err, html) => done?.(err, typeof html === 'string' ? withoutOtherOrigins(html) : html));
  };
  const router = express.Router();
  router.use(basePath, (req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Content-Security-Policy', DASHBOARD_CSP);
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    if (req.method === 'GET' || req.method === 'HEAD') {
      next();
      return;
    }
    res.setHeader('Allow', 'GET, HEAD');
    next(apiError('read_only', `The queue dashboard is read-only (${req.method} refused): jobs are retried and settled by the gate and its recovery, never from here.`));
  });
  router.use(basePath, board);
  return router;
}
