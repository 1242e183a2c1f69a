// Rule: every status a route answers is one the OpenAPI document lists for it (openapi-statuses.test.ts), and that
// holds while Redis hangs too: every route that reads or writes Redis, the reads and the revoke among them, answers
// 503 redis_unavailable then, so its document lists 503. Each route of the document is asked here, so a new one must
// say how it is asked.
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { approvalBody, bearer, caseBody, creditBody, refundBody, ROLE_TOKENS, startRig, tokenRegistry, type Rig } from './rig.js';
import type { Role } from '../../webhooks/app.js';
import type { Express } from 'express';

type Operation = { operationId: string; responses: Record<string, unknown>; 'x-roles'?: Role[] };

const EFFECT = 'a'.repeat(64);
const ITEM = `stale_premise:${EFFECT}`;

/** How each route is asked: a request its schemas accept, so it goes as far as Redis. */
const ASKED: Record<string, { path: string; body?: Record<string, unknown> }> = {
  proposeRefund: { path: '/v1/refunds', body: refundBody() },
  proposeCredit: { path: '/v1/credits', body: creditBody() },
  listEffects: { path: '/v1/effects?subject=payment:pi_1' },
  getEffect: { path: `/v1/effects/${EFFECT}` },
  getReceipt: { path: `/v1/effects/${EFFECT}/receipt` },
  submitCase: { path: '/v1/cases', body: caseBody() },
  getCase: { path: '/v1/cases/case-1' },
  grantApproval: { path: '/v1/approvals', body: approvalBody() },
  getApproval: { path: '/v1/approvals/ap_1' },
  revokeApproval: { path: '/v1/approvals/ap_1/revoke' },
  setCap: { path: '/v1/caps/payment:pi_1', body: { cap_cents: 1_000 } },
  listInbox: { path: '/v1/inbox' },
  getInboxItem: { path: `/v1/inbox/${ITEM}` },
  reapproveInboxItem: { path: `/v1/inbox/${ITEM}/reapprove`, body: { approval: 'ap_2' } },
  resolveInboxItem: { path: `/v1/inbox/${ITEM}/resolve`, body: { resolution: 'landed', note: 'Checked the dashboard.' } },
  dismissInboxItem: { path: `/v1/inbox/${ITEM}/dismiss`, body: { note: 'Nothing to do.' } },
  listAlerts: { path: '/v1/alerts' },
  recover: { path: '/v1/recover' },
  listKeys: { path: '/v1/keys' },
};

/** Routes that answer without Redis: the keys are in memory, and this process runs no recovery (503 not_available). */
const WITHOUT_REDIS = new Set(['listKeys', 'recover']);

let redis: PrivateRedis;
let rig: Rig;
let app: Express;
beforeAll(async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  rig = await startRig({ config: { redisUrl: redis.url, redisCommandTimeoutMs: 300 } });
  // The alerts read from Redis, as the composition root wires them.
  app = createApp({ stores: rig.stores, effects: rig.queue, decisions: rig.decisions, readFacts: async () => ({}), tokens: tokenRegistry(), logger: rig.stores.logger, alerts: (query) => rig.stores.alerts.page(query) });
});
afterAll(async () => {
  redis?.process.kill('SIGCONT');
  await rig?.close();
  await redis?.stop();
});

// Each route waits out the command timeout in turn: about 5 s alone, more on a loaded machine.
it('while Redis hangs, every route that reaches it answers 503 redis_unavailable, and every status answered is documented', { timeout: 120_000 }, async () => {
  const doc = (await request(app).get('/v1/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
  const operations = Object.values(doc.paths).flatMap((methods) => Object.entries(methods).map(([method, operation]) => ({ method, operation })));
  const signedIn = operations.filter(({ operation }) => operation['x-roles'] !== undefined);
  expect(signedIn.map(({ operation }) => operation.operationId).sort()).toEqual(Object.keys(ASKED).sort());

  // Redis stops answering (its connections stay open): every command times out after 300 ms.
  redis.process.kill('SIGSTOP');
  const answered: string[] = [];
  const undocumented: string[] = [];
  for (const { method, operation } of signedIn) {
    const asked = ASKED[operation.operationId];
    const role = operation['x-roles']?.[0];
    if (asked === undefined || role === undefined) throw new Error(`no request for ${operation.operationId}`);
    const start = (request(app) as unknown as Record<string, ((url: string) => request.Test) | undefined>)[method];
    if (start === undefined) throw new Error(`supertest has no ${method}`);
    const sent = start(asked.path).set(bearer(ROLE_TOKENS[role]));
    const answer = asked.body === undefined ? await sent : await sent.send(asked.body);
    const code = String(answer.body?.error?.code);
    if (!WITHOUT_REDIS.has(operation.operationId)) answered.push(`${operation.operationId} ${answer.status} ${code}`);
    if (!(String(answer.status) in operation.responses)) undocumented.push(`${method.toUpperCase()} ${asked.path} ${answer.status} ${code}`);
  }
  expect(answered).toEqual([...signedIn.filter(({ operation }) => !WITHOUT_REDIS.has(operation.operationId)).map(({ operation }) => `${operation.operationId} 503 redis_unavailable`)]);
  expect(undocumented).toEqual([]);
});
