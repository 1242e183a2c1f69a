// `interlock scenario chaos [--seed N] [--scale X] [--duration-ms N] [--delays stripe|fast]`: refunds and credits sent
// through the support API of several `interlock serve` processes while serves and the Redis they share are SIGKILLed
// (Redis restarted from its append-only file) and the sandbox slows, fails and drops Stripe calls; then, once every
// effect settled, the contract judged on Stripe's own objects (chaos-checks.ts). The seed fixes the requests, their
// order and the faults; the processes' timing does not repeat.
import { setTimeout as sleep } from 'node:timers/promises';
import { publicKeySet, verify } from '../src/interlock.js';
import { contractFindings, type Answer, type ChaosRequest, type EffectSeen, type Finding, type Observation } from './chaos-checks.js';
import { openChaosWorld, type ChaosServe, type ChaosWorld, type Role } from './chaos-world.js';
import { removeLeftovers, stopChildren, leftovers, type Delays } from './harness.js';
import { createProgressBar, type ProgressBar } from './progress.js';
import { startWatchdog } from './watchdog.js';

export type ChaosOptions = {
  seed: number;
  /** Multiplies the number of payments and customers (1: about 330 requests). */
  scale: number;
  /** How long the faults go on (ms); the requests are spread over its first 70 %. */
  durationMs: number;
  delays: Delays;
  /** `interlock serve` processes sharing the Redis (default 3). */
  serves?: number;
  /** Redis SIGKILLs, spread evenly over the duration (default 2). */
  redisKills?: number;
  /** How long the effects may take to settle once the requests are answered (ms, default 240 s). */
  settleMs?: number;
  /** How long the receipts may take to agree with Stripe's later facts (ms, default 60 s). */
  factsMs?: number;
  /** Progress lines (stderr by default). */
  bar?: ProgressBar;
  /**
   * The pid of the command that started the run (src/main.ts's STARTED_BY): once it is gone (an npx stopped with
   * SIGTERM, which passes it on to no one) the run stops as for SIGHUP, as run.ts does. Not watched when not given.
   */
  startedBy?: number;
};

export type ChaosResult = {
  seed: number;
  scale: number;
  durationMs: number;
  delays: Delays;
  requests: number;
  effects: number;
  /** Effects by outcome. */
  outcomes: Record<string, number>;
  /** Faults injected, by kind. */
  faults: Record<string, number>;
  findings: Finding[];
};

const INTERRUPTS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** The run's randomness: one seeded stream (a linear congruential generator), so a seed repeats its plan. */
function seeded(seed: number): () => number {
  let state = Math.abs(Math.trunc(seed)) % 2_147_483_648;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

async function inBatches<T, R>(items: readonly T[], width: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map((item, j) => task(item, i + j)))));
  return out;
}

/**
 * As a careful caller: the same call again on any live serve after a transport failure or a 5xx, until another answer
 * or `forMs`. Status 0 when it never got one.
 */
async function untilAnswered(world: ChaosWorld, rand: () => number, method: string, path: string, role: Role, body: unknown, forMs: number): Promise<{ status: number; body: Record<string, unknown> | null; tries: number; transient: string[] }> {
  const giveUp = Date.now() + forMs;
  const transient: string[] = [];
  for (let tries = 1; ; tries += 1) {
    const live = world.serves.filter((serve) => serve.alive());
    const serve: ChaosServe | undefined = live[Math.floor(rand() * live.length)] ?? world.serves[0];
    if (serve !== undefined) {
      try {
        const answer = await world.api(serve, method, path, role, body);
        if (answer.status < 500) return { ...answer, tries, transient };
        transient.push(`${answer.status} ${errorCode(answer.body) ?? ''}`);
      } catch (error) {
        transient.push(`transport ${(error as Error).message.slice(0, 60)}`);
      }
    }
    if (Date.now() > giveUp) return { status: 0, body: null, tries, transient };
    await sleep(300 + rand() * 700);
  }
}

function errorCode(body: Record<string, unknown> | null): string | null {
  const error = body?.error as { code?: unknown } | undefined;
  return typeof error?.code === 'string' ? error.code : null;
}

/** What the run asks for: the requests (shuffled), the approvals and caps they run under, the payments with an inquiry. */
type Plan = { requests: ChaosRequest[]; approvals: Observation['approvals']; caps: Observation['caps']; inquiries: string[]; customers: string[] };

async function planRequests(world: ChaosWorld, seed: number, scale: number, rand: () => number, bar: ProgressBar): Promise<Plan> {
  const n = (k: number) => Math.max(1, Math.round(k * scale));
  const stripe = world.stripe;
  const pay = async (paymentMethod: string) => String((await stripe.post('/v1/payment_intents', { amount: 5_000, currency: 'usd', payment_method: paymentMethod, confirm: true })).id);
  const plan: Plan = { requests: [], approvals: [], caps: [], inquiries: [], customers: [] };
  const grant = async (id: string, capCents: number, scope: string, maxUses = 1) => {
    const answer = await untilAnswered(world, rand, 'POST', '/v1/approvals', 'approver', { id, approver: 'dana@support', cap_cents: capCents, scope, max_uses: maxUses, expires_in: 7_200 }, 60_000);
    if (answer.status !== 201 && answer.status !== 200) throw new Error(`granting approval ${id} answered ${answer.status} ${errorCode(answer.body) ?? ''}`);
    plan.approvals.push({ id, capCents, maxUses });
  };
  const refund = (requestId: string, pi: string, amount: number, approval: string): ChaosRequest => ({ requestId, kind: 'refund', subject: `payment:${pi}`, approval, amount, incident: null, body: { request_id: requestId, payment_intent: pi, amount, approval } });
  // One refund per payment.
  for (const [i, pi] of (await inBatches(Array.from({ length: n(80) }), 20, () => pay('pm_card_visa'))).entries()) {
    await grant(`ap_s_${i}_${seed}`, 1_500, `payment:${pi}`);
    plan.requests.push(refund(`s-${seed}-${i}`, pi, 1_500, `ap_s_${i}_${seed}`));
  }
  // Four refunds of 1000 on one payment: an approval of 4000 for 5 uses, under a subject cap of 3000.
  for (const [i, pi] of (await inBatches(Array.from({ length: n(20) }), 20, () => pay('pm_card_visa'))).entries()) {
    await grant(`ap_m_${i}_${seed}`, 4_000, `payment:${pi}`, 5);
    const cap = await untilAnswered(world, rand, 'PUT', `/v1/caps/${encodeURIComponent(`payment:${pi}`)}`, 'approver', { cap_cents: 3_000 }, 60_000);
    if (cap.status >= 300) throw new Error(`setting the cap of payment:${pi} answered ${cap.status} ${errorCode(cap.body) ?? ''}`);
    plan.caps.push({ subject: `payment:${pi}`, cents: 3_000 });
    for (let j = 0; j < 4; j += 1) plan.requests.push(refund(`m-${seed}-${i}-${j}`, pi, 1_000, `ap_m_${i}_${seed}`));
  }
  // One request id sent three times, and on every third payment once more with another amount (a conflicting payload).
  for (const [i, pi] of (await inBatches(Array.from({ length: n(30) }), 20, () => pay('pm_card_visa'))).entries()) {
    await grant(`ap_d_${i}_${seed}`, 2_500, `payment:${pi}`);
    const request = refund(`d-${seed}-${i}`, pi, 2_000, `ap_d_${i}_${seed}`);
    plan.requests.push(request, request, request);
    if (i % 3 === 0) plan.requests.push({ ...request, amount: 2_400, body: { ...request.body, amount: 2_400 } });
  }
  // Payments with an inquiry, escalated during the run: the facts change under the refund.
  plan.inquiries = await inBatches(Array.from({ length: n(12) }), 12, () => pay('pm_card_createDisputeInquiry'));
  for (const [i, pi] of plan.inquiries.entries()) {
    await grant(`ap_f_${i}_${seed}`, 2_000, `payment:${pi}`);
    plan.requests.push(refund(`f-${seed}-${i}`, pi, 2_000, `ap_f_${i}_${seed}`));
  }
  // Credits: on every third customer a second request for the same incident (credited once), on others two more incidents.
  const price = await stripe.post('/v1/prices', { unit_amount: 3_000, currency: 'usd', recurring: { interval: 'month' }, product_data: { name: 'plan' } });
  plan.customers = await inBatches(Array.from({ length: n(30) }), 10, async (_, i) => {
    const customer = await stripe.post('/v1/customers', { name: `chaos ${i}`, payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
    await stripe.post('/v1/subscriptions', { customer: customer.id, items: [{ price: price.id }] });
    return String(customer.id);
  });
  for (const [i, customer] of plan.customers.entries()) {
    const approval = `ap_c_${i}_${seed}`;
    await grant(approval, 1_500, `customer:${customer}`, 3);
    const credit = (suffix: string, amount: number, incident: string, description: string): ChaosRequest => ({ requestId: `c-${seed}-${i}-${suffix}`, kind: 'credit', subject: `customer:${customer}`, approval, amount, incident, body: { request_id: `c-${seed}-${i}-${suffix}`, customer, amount, incident, approval, description } });
    plan.requests.push(credit('a', 500, `inc-${i}`, 'outage credit'));
    if (i % 3 === 0) plan.requests.push(credit('b', 500, `inc-${i}`, 'outage credit'));
    if (i % 3 === 1) plan.requests.push(credit('x', 700, `inc-${i}-x`, 'second incident'), credit('y', 600, `inc-${i}-y`, 'third incident'));
  }
  for (let i = plan.requests.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rand() * (i + 1));
    const [a, b] = [plan.requests[i], plan.requests[j]];
    if (a !== undefined && b !== undefined) [plan.requests[i], plan.requests[j]] = [b, a];
  }
  bar.note(`chaos: ${plan.requests.length} requests under ${plan.approvals.length} approvals and ${plan.caps.length} caps`);
  return plan;
}

/**
 * The faults, until `stop()` or the duration ends: the first a serve's SIGKILL, the Redis SIGKILLed and restarted
 * `redisKills` times at even intervals, and between them, by the seed, every serve at once or one SIGKILLed, Stripe's
 * refunds slowed, failed with 500 or dropped after Stripe applied them, credits dropped, premise reads failed, an
 * inquiry escalated to a dispute.
 */
function injectFaults(world: ChaosWorld, plan: Plan, options: { durationMs: number; redisKills: number; rand: () => number; bar: ProgressBar }): { done: Promise<void>; stop(): void; faults: Record<string, number> } {
  const { rand, bar } = options;
  const faults: Record<string, number> = {};
  let stopped = false;
  const count = (kind: string, line: string) => {
    faults[kind] = (faults[kind] ?? 0) + 1;
    bar.note(`chaos: ${line}`);
  };
  const control = world.sandbox.control;
  const killServe = async (serve: ChaosServe) => {
    const pid = await serve.kill();
    count('serve SIGKILL', `serve ${serve.index} SIGKILLed${pid === null ? '' : ` (pid ${pid})`}`);
  };
  const done = (async () => {
    const began = Date.now();
    let redisKills = 0;
    for (let tick = 0; !stopped && Date.now() - began < options.durationMs; tick += 1) {
      const roll = rand();
      const victim = world.serves[Math.floor(rand() * world.serves.length)];
      if (redisKills < options.redisKills && Date.now() - began > ((redisKills + 1) * options.durationMs) / (options.redisKills + 1)) {
        redisKills += 1;
        const pid = await world.redis.kill();
        count('redis SIGKILL', `redis-server SIGKILLed${pid === null ? '' : ` (pid ${pid})`}`);
        await sleep(500 + rand() * 1_500);
        await world.redis.start();
        bar.note('chaos: redis-server restarted from its append-only file');
      } else if (tick === 0 || roll < 0.45) {
        const all = tick !== 0 && roll < 0.08;
        for (const serve of all ? world.serves : victim === undefined ? [] : [victim]) await killServe(serve);
        await sleep(300 + rand() * 2_000);
        await Promise.all(world.serves.filter((serve) => !serve.alive()).map((serve) => serve.start()));
      } else if (roll < 0.6) {
        await control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 1_000 + Math.floor(rand() * 3_000), count: 10 });
        count('refunds slowed', 'the next 10 refunds slowed');
      } else if (roll < 0.7) {
        await control.failNext({ path: '/v1/refunds', method: 'POST', status: 500, count: 4 });
        count('refunds 500', 'the next 4 refunds fail with 500');
      } else if (roll < 0.78) {
        await control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 3 });
        count('refunds dropped after applying', 'the next 3 refunds dropped after Stripe applied them');
      } else if (roll < 0.84) {
        await control.dropNext({ path: '/v1/customers', method: 'POST', when: 'after', count: 2 });
        count('credits dropped after applying', 'the next 2 customer writes dropped after Stripe applied them');
      } else if (roll < 0.9) {
        await control.failNext({ path: '/v1/payment_intents', method: 'GET', status: 500, count: 5 });
        count('premise reads 500', 'the next 5 payment reads fail with 500');
      } else {
        const pi = plan.inquiries[Math.floor(rand() * plan.inquiries.length)];
        const disputes = pi === undefined ? [] : ((await world.stripe.get('/v1/disputes', { payment_intent: pi })).data as { id: string; status: string }[] | undefined) ?? [];
        const inquiry = disputes.find((dispute) => dispute.status === 'warning_needs_response');
        if (inquiry !== undefined) {
          await fetch(`${world.sandbox.url}/_sandbox/disputes/${inquiry.id}/escalate`, { method: 'POST' });
          count('inquiry escalated', `the inquiry on ${pi ?? ''} escalated to a dispute`);
        }
      }
      await sleep(800 + rand() * 1_500);
    }
  })();
  return { done, faults, stop: () => (stopped = true) };
}

/** Every request sent as a careful caller would, spread over `spreadMs`, twelve at a time; the last answer of each. */
async function sendRequests(world: ChaosWorld, requests: readonly ChaosRequest[], spreadMs: number, rand: () => number, bar: ProgressBar): Promise<Observation['sent']> {
  bar.add(requests.length);
  const began = Date.now();
  return inBatches(requests, 12, async (request, index) => {
    const cell = bar.cell();
    await sleep(Math.max(0, began + (index / requests.length) * spreadMs - Date.now()) + rand() * 200);
    cell.start(request.requestId);
    const raw = await untilAnswered(world, rand, 'POST', request.kind === 'refund' ? '/v1/refunds' : '/v1/credits', 'support', request.body, 180_000);
    cell.done();
    const effectId = raw.body?.effect_id;
    const answer: Answer = { status: raw.status, effectId: typeof effectId === 'string' ? effectId : null, errorCode: errorCode(raw.body), tries: raw.tries, transient: raw.transient };
    return { request, answer };
  });
}

/** The effects acknowledged: the first accepted answer of each request id names its effect. */
function acknowledged(sent: Observation['sent']): Map<string, ChaosRequest> {
  const effects = new Map<string, ChaosRequest>();
  for (const { request, answer } of sent) if ((answer.status === 200 || answer.status === 202) && answer.effectId !== null && !effects.has(answer.effectId)) effects.set(answer.effectId, request);
  return effects;
}

/** What the gate says of each effect now, through the auditor's API, its receipt verified with the run's public key. */
async function readEffects(world: ChaosWorld, effects: Map<string, ChaosRequest>, rand: () => number): Promise<EffectSeen[]> {
  const keys = publicKeySet([world.publicPem]);
  return inBatches([...effects], 8, async ([effectId, request]) => {
    const effect = (await untilAnswered(world, rand, 'GET', `/v1/effects/${effectId}`, 'auditor', undefined, 30_000)).body ?? {};
    const outcome = typeof effect.outcome === 'string' ? effect.outcome : null;
    const inbox = outcome === 'AMBIGUOUS' ? await untilAnswered(world, rand, 'GET', `/v1/inbox?effect=${effectId}&status=open`, 'auditor', undefined, 30_000) : null;
    const receiptAnswer = await untilAnswered(world, rand, 'GET', `/v1/effects/${effectId}/receipt`, 'auditor', undefined, 30_000);
    const verification = receiptAnswer.status === 200 ? verify(receiptAnswer.body, { publicKeys: keys }) : null;
    return {
      effectId,
      request,
      settled: effect.settled === true,
      state: typeof effect.state === 'string' ? effect.state : null,
      outcome,
      journal: Array.isArray(effect.journal) ? effect.journal.map((entry) => String((entry as { kind?: unknown }).kind)) : [],
      inboxOpen: Array.isArray(inbox?.body?.data) && inbox.body.data.length > 0,
      receipt: verification === null ? null : { valid: verification.valid, problems: verification.problems, happened: verification.happened, finalMoney: verification.finalMoney.status },
    };
  });
}

/** What Stripe holds of the gate's effects: every refund, and every customer balance transaction the gate made. */
async function readStripe(world: ChaosWorld, customers: readonly string[]): Promise<Observation['stripe']> {
  const refunds = (await world.stripe.list('/v1/refunds')).map((refund) => ({
    id: String(refund.id),
    effectId: (refund.metadata as Record<string, string> | undefined)?.interlock_effect_id ?? null,
    paymentIntent: String(refund.payment_intent),
    amount: Number(refund.amount),
    status: String(refund.status ?? ''),
  }));
  const credits = (
    await inBatches(customers, 8, async (customer) =>
      (await world.stripe.list(`/v1/customers/${customer}/balance_transactions`)).flatMap((txn) => {
        const metadata = (txn.metadata ?? {}) as Record<string, string>;
        const effectId = metadata.interlock_effect_id;
        return effectId === undefined ? [] : [{ id: String(txn.id), effectId, customer, incident: metadata.interlock_incident ?? '', amount: Number(txn.amount) }];
      }),
    )
  ).flat();
  return { refunds, credits };
}

/** Runs the chaos and judges it. The findings are empty when the contract held. */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const rand = seeded(options.seed);
  const bar = options.bar ?? createProgressBar(process.stderr, 'requests');
  const settleMs = options.settleMs ?? 240_000;
  const factsMs = options.factsMs ?? 60_000;
  // Ctrl-C, SIGTERM or a closed terminal: every process of the run stopped and its directory removed on the way out.
  const interrupted = (signal: NodeJS.Signals) => {
    bar.finish();
    leftovers.stopping = true;
    stopChildren();
    process.stderr.write(`${signal}: the chaos run stopped; nothing was judged.\n`);
    process.exit(signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143);
  };
  for (const name of INTERRUPTS) process.once(name, interrupted);
  process.once('exit', removeLeftovers);
  const parentWatch = setInterval(() => {
    if (options.startedBy === undefined || process.ppid === options.startedBy) return;
    process.stderr.write(`The command that started this run (pid ${options.startedBy}) has gone: stopping as for SIGHUP.\n`);
    interrupted('SIGHUP');
  }, 1_000);
  parentWatch.unref();
  leftovers.watchdog = startWatchdog();
  if (leftovers.watchdog !== null) leftovers.dirs.add(leftovers.watchdog.home);
  let world: ChaosWorld | null = null;
  try {
    bar.note(`chaos: seed ${options.seed}, scale ${options.scale}, ${options.durationMs / 1000} s of faults, delays ${options.delays}; starting the sandbox, redis-server and ${options.serves ?? 3} serves`);
    world = await openChaosWorld({ serves: options.serves ?? 3, delays: options.delays });
    const plan = await planRequests(world, options.seed, options.scale, rand, bar);
    const faults = injectFaults(world, plan, { durationMs: options.durationMs, redisKills: options.redisKills ?? 2, rand, bar });
    const sent = await sendRequests(world, plan.requests, options.durationMs * 0.7, rand, bar).catch(async (error: unknown) => {
      faults.stop();
      await faults.done.catch(() => undefined);
      throw error;
    });
    // The faults go on to the end of the duration: the last Redis SIGKILL may fall after the last answer.
    await faults.done;
    await world.sandbox.control.clearFaults();
    const live = world;
    await Promise.all(world.serves.filter((serve) => !serve.alive()).map((serve) => serve.start()));
    const effects = acknowledged(sent);
    bar.note(`chaos: faults over; waiting for ${effects.size} effects to settle (at most ${settleMs / 1000} s)`);
    const settleBy = Date.now() + settleMs;
    let seen = await readEffects(live, effects, rand);
    while (seen.some((effect) => !effect.settled) && Date.now() < settleBy) {
      await sleep(3_000);
      seen = await readEffects(live, effects, rand);
    }
    // A refund that fails at Stripe after the gate settled reaches its receipt as a later fact (webhook or
    // reconcile): the contract is judged again until it holds or the facts had their time.
    bar.note(`chaos: judging the contract (later facts awaited for at most ${factsMs / 1000} s)`);
    // The sandbox's webhooks delivered first: what Stripe did after a send reaches the serves before the first look.
    await live.sandbox.control.idle(Math.min(factsMs, 20_000)).catch(() => false);
    const factsBy = Date.now() + factsMs;
    const observe = async (): Promise<Observation> => ({ sent, effects: await readEffects(live, effects, rand), stripe: await readStripe(live, plan.customers), caps: plan.caps, approvals: plan.approvals });
    let observation = await observe();
    let findings = contractFindings(observation);
    while (findings.length > 0 && Date.now() < factsBy) {
      await sleep(5_000);
      observation = await observe();
      findings = contractFindings(observation);
    }
    const outcomes: Record<string, number> = {};
    for (const effect of observation.effects) outcomes[effect.outcome ?? 'none'] = (outcomes[effect.outcome ?? 'none'] ?? 0) + 1;
    return { seed: options.seed, scale: options.scale, durationMs: options.durationMs, delays: options.delays, requests: plan.requests.length, effects: effects.size, outcomes, faults: faults.faults, findings };
  } finally {
    clearInterval(parentWatch);
    bar.finish();
    await world?.close();
    for (const name of INTERRUPTS) process.removeListener(name, interrupted);
    process.removeListener('exit', removeLeftovers);
    removeLeftovers();
    leftovers.watchdog?.close();
    leftovers.watchdog = null;
  }
}

/** The run's summary: what it did, the effects by outcome, the faults by kind, and every finding. */
export function chaosSummary(result: ChaosResult): string {
  const table = (title: string, counts: Record<string, number>) => [`| ${title} | count |`, '|---|---:|', ...Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([name, count]) => `| ${name} | ${count} |`)];
  const lines = [
    `Chaos run, seed ${result.seed}, scale ${result.scale}, ${result.durationMs / 1000} s of faults, delays ${result.delays}: ${result.requests} requests, ${result.effects} effects acknowledged.`,
    '',
    ...table('outcome', result.outcomes),
    '',
    ...table('fault', result.faults),
    '',
    result.findings.length === 0 ? 'The contract held: no finding.' : `${result.findings.length} finding${result.findings.length === 1 ? '' : 's'}: the contract did not hold.`,
    ...result.findings.map((finding) => `  ${finding.check} ${finding.detail}`),
    `Run it again: npx interlock scenario chaos --seed ${result.seed} --scale ${result.scale} --duration-ms ${result.durationMs} --delays ${result.delays}`,
  ];
  return `${lines.join('\n')}\n`;
}
