// Stripe sandbox throughput: runs the sandbox as its own process (as in use) and drives it with concurrent
// keep-alive GETs through node:http for a bounded time. Fails below 3,000 requests per second.
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const TARGET_PER_SECOND = 3_000;
const WARMUP_MS = 1_000;
const MEASURE_MS = 5_000;
const CONCURRENCY = 32;

const root = fileURLToPath(new URL('../', import.meta.url));
const server = spawn(process.execPath, ['--import', 'tsx', 'sandbox/server-main.ts', '--port', '0', '--delays', 'fast'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' },
});

const announced = await new Promise<string>((resolve, reject) => {
  if (server.stdout === null) throw new Error('sandbox has no stdout');
  createInterface({ input: server.stdout }).once('line', resolve);
  server.once('exit', (code) => reject(new Error(`sandbox exited with ${String(code)}`)));
});
const url = new URL((JSON.parse(announced) as { url: string }).url);
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

// A realistic read: one stored charge, as a premise reader would fetch it.
const intent = await post('/v1/payment_intents', 'amount=10000&currency=usd&payment_method=pm_card_visa&confirm=true');
const chargePath = `/v1/payment_intents/${intent}`;

async function drive(untilMs: number): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < untilMs) {
      const status = await get(chargePath);
      if (status === 200) ok += 1;
      else failed += 1;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { ok, failed };
}

console.log(`sandbox at ${url.origin}; warming up for ${WARMUP_MS} ms with ${CONCURRENCY} concurrent keep-alive connections`);
await drive(Date.now() + WARMUP_MS);
console.log(`measuring GET ${chargePath} for ${MEASURE_MS} ms`);
const started = Date.now();
const { ok, failed } = await drive(started + MEASURE_MS);
const perSecond = Math.round((ok * 1000) / (Date.now() - started));
console.log(`${ok} requests succeeded, ${failed} failed: ${perSecond} requests/second (target ${TARGET_PER_SECOND})`);

agent.destroy();
server.kill('SIGTERM');
const passed = failed === 0 && perSecond >= TARGET_PER_SECOND;
console.log(passed ? 'PASS' : 'FAIL');
process.exit(passed ? 0 : 1);
