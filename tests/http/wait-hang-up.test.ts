// Rule: a long poll (`POST /v1/refunds?wait=30`, credits and cases alike) whose client hangs up stops waiting at once:
// it takes its listeners off the queue's event stream and clears its timer, and only the waiting stops (the job stays
// queued). Otherwise N abandoned polls hold N listener pairs, each run on every job completion of the process, and N
// timers, for up to 30 s each.
import { request as httpRequest, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueueEvents } from 'bullmq';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalBody, bearer, caseBody, creditBody, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

let rig: Rig;
let server: Server;
let port: number;
// The queues' event streams, noted as each opens (it calls setMaxListeners(0) once then), to count their listeners.
const streams: QueueEvents[] = [];
const setMaxListeners = QueueEvents.prototype.setMaxListeners;

beforeAll(async () => {
  QueueEvents.prototype.setMaxListeners = function noted(this: QueueEvents, n: number) {
    streams.push(this);
    return setMaxListeners.call(this, n);
  };
  // No effects or decisions worker: nothing settles, so every poll would wait its whole 30 s.
  rig = await startRig({ deps: { limits: { ratePerMinute: null } } });
  server = rig.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  QueueEvents.prototype.setMaxListeners = setMaxListeners;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rig.close();
});

const listeners = () => streams.reduce((sum, stream) => sum + stream.listenerCount('completed') + stream.listenerCount('failed'), 0);
const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;

/** Polls every 50 ms until `done` holds, for at most `ms` (well under the polls' 30 s); says whether it held. */
async function until(done: () => boolean | Promise<boolean>, ms = 15_000): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 50) {
    if (await done()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return done();
}

/** A POST over a real socket (supertest waits for the answer; these callers hang up before it). */
function post(path: string, body: Record<string, unknown>): ClientRequest {
  const text = JSON.stringify(body);
  const sent = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers: { ...bearer(TOKENS.support), 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } });
  sent.on('error', () => undefined);
  sent.end(text);
  return sent;
}

async function grant(overrides: Record<string, unknown>): Promise<string> {
  const approval = approvalBody({ max_uses: 100, cap_cents: 1_000_000, ...overrides });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  return String(approval.id);
}

/** Sends `bodies` with ?wait=30, waits until every poll listens, hangs them all up, and says what is left. */
async function hangUp(path: string, bodies: Record<string, unknown>[]): Promise<void> {
  const before = { listeners: listeners(), timers: timers() };
  const sent = bodies.map((body) => post(`${path}?wait=30`, body));
  expect(await until(() => listeners() === before.listeners + 2 * bodies.length), 'every poll listening').toBe(true);
  for (const caller of sent) caller.destroy();
  expect(await until(() => listeners() === before.listeners), 'listener pairs held for callers that hung up').toBe(true);
  // A timer or two of Redis clients may come and go meanwhile; the polls' would be one per caller.
  expect(await until(() => timers() <= before.timers + 2), 'wait timers armed for callers that hung up').toBe(true);
}

describe('a ?wait poll whose client hangs up', () => {
  it('refunds and credits: the waits end and their jobs stay queued', { timeout: 60_000 }, async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const refunds = await grant({ scope: `payment:${pi}` });
    const customer = `cus_${uid()}`;
    rig.target.world.set(`customer:${customer}`, { subscription_status: 'active', incident_compensation: 0 });
    const credits = await grant({ scope: `customer:${customer}` });
    const queued = await rig.queue.queue.getWaitingCount();

    await hangUp('/v1/refunds', Array.from({ length: 20 }, () => refundBody({ payment_intent: pi, approval: refunds, amount: 100 })));
    await hangUp('/v1/credits', Array.from({ length: 5 }, () => creditBody({ customer, approval: credits, amount: 100 })));
    // The waiting stopped, not the effects: each was recorded and queued for the worker.
    expect(await rig.queue.queue.getWaitingCount()).toBe(queued + 25);
  });

  it('cases: the wait for the decision ends and the case stays queued', { timeout: 60_000 }, async () => {
    const pi = `pi_${uid()}`;
    const approval = await grant({ scope: `payment:${pi}` });
    const queued = await rig.decisions.queue.getWaitingCount();
    await hangUp('/v1/cases', Array.from({ length: 10 }, () => caseBody({ payment_intent: pi, approval })));
    expect(await rig.decisions.queue.getWaitingCount()).toBe(queued + 10);
  });

  it('a caller that stays gets its answer as before', async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = await grant({ scope: `payment:${pi}` });
    const before = listeners();
    // Short wait, no worker: the poll runs out and answers the effect as it stands, its listeners gone with it.
    const answer = await request(rig.app).post('/v1/refunds?wait=0.2').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval, amount: 100 }));
    expect(answer.status).toBe(202);
    expect(answer.body.outcome).toBeNull();
    expect(listeners()).toBe(before);
  });
});
