// Stripe sandbox throughput: runs the sandbox as its own process (as in use) and drives it with concurrent
// keep-alive GETs through node:http for a bounded time. Target: 3,000 requests per second. The warm-up sends more
// requests than the sandbox's request log keeps, so what is measured is a sandbox that has been running a while (a
// scenario run's), not a fresh one.
import { Agent, request } from 'node:http';
import { REQUEST_LOG_LIMIT } from '../sandbox/http/request-log.js';
import { finish, QUICK, startSandboxProcess } from './support.js';

const TARGET_PER_SECOND = 3_000;
const WARMUP_MS = QUICK ? 300 : 1_000;
/** Requests the warm-up sends at least: past the request log's bound, where it starts dropping its oldest. */
const WARMUP_REQUESTS = QUICK ? 0 : REQUEST_LOG_LIMIT + 5_000;
const MEASURE_MS = QUICK ? 1_000 : 5_000;
const CONCURRENCY = 32;

const sandbox = await startSandboxProcess();
const url = new URL(sandbox.url);
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const headers = { Authorization: 'Bearer sk_test_bench' };

function get(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function post(path: string, body: string): Promise<string> {
  const response = await fetch(`${url.origin}${path}`, { method: 'POST', headers: { ...headers, 'Content-Type': 'application/x-www-form-urlencoded' }, body });
  return ((await response.json()) as { id: string }).id;
}

/** Drives GETs until `untilMs` and, when given, until `atLeast` requests were answered. */
async function drive(chargePath: string, untilMs: number, atLeast = 0): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < untilMs || ok + failed < atLeast) {
      const status = await get(chargePath);
      if (status === 200) ok += 1;
      else failed += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { ok, failed };
}

let result: { ok: number; failed: number; perSecond: number; path: string };
try {
  // A realistic read: one stored payment, as a premise reader would fetch it.
  const intent = await post('/v1/payment_intents', 'amount=10000&currency=usd&payment_method=pm_card_visa&confirm=true');
  const path = `/v1/payment_intents/${intent}`;
  console.log(`sandbox at ${url.origin}; warming up for ${WARMUP_MS} ms and ${WARMUP_REQUESTS} requests with ${CONCURRENCY} concurrent keep-alive connections`);
  await drive(path, Date.now() + WARMUP_MS, WARMUP_REQUESTS);
  console.log(`measuring GET ${path} for ${MEASURE_MS} ms`);
  const started = Date.now();
  const { ok, failed } = await drive(path, started + MEASURE_MS);
  result = { ok, failed, perSecond: Math.round((ok * 1000) / (Date.now() - started)), path };
} finally {
  agent.destroy();
  await sandbox.stop();
}
const markdown = `The sandbox in its own process, ${CONCURRENCY} keep-alive connections from this process, \`GET /v1/payment_intents/:id\` for ${MEASURE_MS} ms after ${WARMUP_REQUESTS.toLocaleString('en-US')} requests of warm-up (more than its request log keeps): ${result.perSecond.toLocaleString('en-US')} requests/s (${result.ok} answered 200, ${result.failed} not).`;
console.log(markdown);
finish('sandboxThroughput', 'Stripe sandbox throughput (issue 5)', markdown, result, [
  { target: `sandbox ≥ ${TARGET_PER_SECOND.toLocaleString('en-US')} requests/s, none failed`, value: result.perSecond, met: result.failed === 0 && result.perSecond >= TARGET_PER_SECOND },
]);
