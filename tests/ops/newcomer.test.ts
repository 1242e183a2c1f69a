// The newcomer's path (issue 11 §5): a fresh copy of the tree (dependencies installed), no environment variables
// but PATH and HOME, `npm start`. The service starts its own durable Redis and the sandbox, prints what to try, and
// the printed commands work as printed: a test payment, an approval, a $20 gated refund COMMITTED with a receipt
// that verifies and money returned. SIGTERM ends everything (the service, its Redis, its sandbox) within 10 s, and
// the next `npm start` finds the same effect in the journal. A second service started beside it joins it and
// leaves its service.json alone; a command run while it is stopped says whose Redis it cannot reach.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { STOP_MARGIN_MS } from '../../src/config.js';
import { shownUrl } from '../../src/core/redact.js';

const REPO = new URL('../../', import.meta.url).pathname;
const home = mkdtempSync(join(tmpdir(), 'interlock-newcomer-'));
const tree = join(home, 'interlock');
const ENV = { PATH: process.env.PATH ?? '', HOME: home };
const started: ChildProcess[] = [];

afterAll(() => {
  for (const child of started) {
    if (child.exitCode !== null || child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Its group is gone already (stopped by the test before its exit was heard).
    }
  }
  const pidFile = join(tree, '.data', 'redis', 'redis.pid');
  if (existsSync(pidFile)) {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(home, { recursive: true, force: true });
});

/** A fresh copy of the tracked tree, as a clone would have it, with the dependencies `npm ci` installed. */
function freshTree(): void {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' }).split('\n').filter((file) => file !== '' && existsSync(join(REPO, file)));
  for (const file of files) {
    mkdirSync(dirname(join(tree, file)), { recursive: true });
    cpSync(join(REPO, file), join(tree, file));
  }
  symlinkSync(join(REPO, 'node_modules'), join(tree, 'node_modules'), 'dir');
}

type Start = { child: ChildProcess; stdout: () => string; stderr: () => string };

/** A command run in the fresh tree (`npm start` unless told otherwise). */
function startInTree(command: readonly string[] = ['npm', 'start']): Start {
  let stdout = '';
  let stderr = '';
  // Its own process group, so the test can see that every process of it is gone after SIGTERM.
  const child = spawn(command[0] ?? 'npm', command.slice(1), { cwd: tree, env: ENV, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

async function until(check: () => boolean, what: string, start: Start, timeoutMs = 30_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  while (!check()) {
    if (start.child.exitCode !== null || Date.now() > giveUp) throw new Error(`${what}: not seen (exit ${start.child.exitCode}).\nstdout:\n${start.stdout()}\nstderr:\n${start.stderr().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function shell(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd: tree, env: ENV, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Whether any process of the group still runs. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** How long a stop may take, as the service bounds its own: the send deadline (30 s by default) and STOP_MARGIN_MS. */
const STOP_BOUND_MS = 30_000 + STOP_MARGIN_MS;

/**
 * SIGTERM to the start's first process, or to its whole group (`group`: npx passes no signal on to the service it
 * runs); waits for the group to end, at most as long as the service gives its own stop (a loaded machine is slow).
 */
async function stop(start: Start, options: { group?: boolean } = {}): Promise<number> {
  const began = Date.now();
  process.kill(options.group === true ? -(start.child.pid ?? 0) : (start.child.pid ?? 0), 'SIGTERM');
  while (groupAlive(start.child.pid ?? 0) && Date.now() - began < STOP_BOUND_MS) await new Promise((resolve) => setTimeout(resolve, 50));
  return Date.now() - began;
}

describe('a newcomer runs npm start on a fresh tree', () => {
  it('starts the service with embedded defaults; the printed commands commit a verified $20 refund; SIGTERM ends it all; the next start finds the effect', async () => {
    freshTree();
    const first = startInTree();
    await until(() => /Try it/.test(first.stdout()) && first.stdout().includes('--wait 15'), 'the lines to try', first);
    const printed = first.stdout();
    expect(printed).toMatch(/API {7}http:\/\/127\.0\.0\.1:\d+/);
    expect(printed).toMatch(/Webhook {3}http:\/\/127\.0\.0\.1:\d+\/webhooks\/stripe {3}signed with whsec_/);
    const facts = JSON.parse(readFileSync(join(tree, '.data', 'service.json'), 'utf8')) as { try: string[]; tokens: Record<string, string>; api_url: string };
    expect(Object.keys(facts.tokens).sort()).toEqual(['approver', 'auditor', 'operator', 'support']);
    // Its stdout is a pipe here, not a terminal: the tokens are not printed, the line says where they are and how to
    // read one, and that command reads the support token as printed.
    expect(Object.values(facts.tokens).filter((token) => printed.includes(token))).toEqual([]);
    expect(printed).toContain('  Tokens    not printed (stdout is not a terminal): kept in .data/api-tokens, and for scripts in .data/service.json; read one with\n');
    const readToken = printed.split('\n').find((line) => line.includes('.tokens.support'))?.trim().replace(/ {3}\(or .*\)$/, '') ?? 'false';
    const readSupport = await shell(readToken);
    expect(readSupport.stdout.trim()).toBe(facts.tokens.support);
    // The three commands, exactly as printed (one shell, so $PI carries from the first to the others).
    const commands = printed.split('\n').filter((line) => line.startsWith('  PI=') || line.startsWith('  npx interlock')).map((line) => line.trim());
    expect(commands).toHaveLength(3);
    expect(commands).toEqual(facts.try);
    const ran = await shell(commands.join(' && '));
    expect(ran.code, ran.stderr).toBe(0);
    const refund = JSON.parse(ran.stdout.slice(ran.stdout.lastIndexOf('\n{\n  "effectId"') + 1)) as { effectId: string; outcome: string; verification: { valid: boolean }; finalMoney: { status: string } };
    expect(refund).toMatchObject({ outcome: 'COMMITTED', verification: { valid: true }, finalMoney: { status: 'returned' } });
    // The token printed works against the API.
    const listed = await fetch(`${facts.api_url}/v1/effects/${refund.effectId}`, { headers: { authorization: `Bearer ${facts.tokens.support ?? ''}` } });
    expect(listed.status).toBe(200);

    // A second whole service in the same directory joins this one (its Redis and sandbox) and, stopped, leaves the
    // file every command finds the service through as this one wrote it.
    const written = readFileSync(join(tree, '.data', 'service.json'), 'utf8');
    const joiner = startInTree(['npx', 'interlock', 'serve', '--port', '0']);
    await until(() => /is running/.test(joiner.stdout()), 'the joining service', joiner);
    // Shown without its password (the private Redis's URL carries one).
    expect(joiner.stdout()).toContain(`Redis     ${shownUrl(JSON.parse(written).redis_url as string)}`);
    expect(joiner.stdout()).not.toContain(JSON.parse(written).redis_url as string);
    // It sends to the first one's sandbox, and says so (it called it "Stripe at ...").
    expect(joiner.stdout()).toContain(`Stripe    the offline sandbox at ${JSON.parse(written).stripe_api_base as string}\n`);
    // Stopped as a terminal's Ctrl-C does (the whole group): npx would not pass a SIGTERM on, and a joiner still running
    // keeps the first one's private Redis up when the first stops (it is left for processes still using it).
    await stop(joiner, { group: true });
    expect(groupAlive(joiner.child.pid ?? 0)).toBe(false);
    expect(readFileSync(join(tree, '.data', 'service.json'), 'utf8')).toBe(written);

    const redisPid = Number(readFileSync(join(tree, '.data', 'redis', 'redis.pid'), 'utf8'));
    expect(() => process.kill(redisPid, 0)).not.toThrow();
    const took = await stop(first);
    expect(groupAlive(first.child.pid ?? 0)).toBe(false);
    expect(took).toBeLessThan(10_000);
    // Its private Redis stopped with it (and removed its pid file on the way out).
    expect(() => process.kill(redisPid, 0)).toThrow();
    // A command run meanwhile still aims at that Redis (service.json), and says whose it is and how to reach it.
    const stopped = await shell(`npx interlock effect show ${refund.effectId}`);
    expect(stopped.code, stopped.stderr).toBe(2);
    expect(stopped.stderr).toMatch(/That is the Redis of the service that wrote \.data\/service\.json \(pid \d+\), which is not running: start it again \(`npm start`\) to reach its journal/);

    const second = startInTree();
    await until(() => /Try it/.test(second.stdout()), 'the second start', second);
    // The journal is the same (the sandbox is new).
    const shown = await shell(`npx interlock effect show ${refund.effectId}`);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ effectId: refund.effectId, outcome: 'COMMITTED' });
    await stop(second);
    expect(groupAlive(second.child.pid ?? 0)).toBe(false);
  }, 180_000);
});
