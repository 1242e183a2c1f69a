// `serve` as an operator who gave it Stripe (STRIPE_API_BASE at a sandbox this test runs, and a key) and the shared
// Redis under a prefix of its own (its durability not required: a test machine's Redis), with a data directory that is not the default; and the lines it prints, run in a
// shell that has only PATH and HOME (another terminal) unless a test adds to it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { spawnWorker, type WorkerProcess } from '../pipeline/pipeline-support.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';
import { REPO } from './run-cli.js';

/** What `serve` wrote into <dataDir>/service.json, as far as these tests read it. */
export type ServiceFacts = { api_url: string; try: string[]; tokens: Record<string, string>; stripe_secret_key: string | null; signing_kid?: string; signing_key_file?: string; key_prefix: string; sandbox_embedded?: boolean };

export type GivenSandboxServe = { sandbox: Sandbox; service: WorkerProcess; dataDir: string; facts: ServiceFacts; stop(): Promise<void> };

/** Starts the sandbox and `serve --roles worker,api` against it; `env` adds to (or overrides) what serve is given. */
export async function serveGivenSandbox(dataDir: string, env: Record<string, string> = {}): Promise<GivenSandboxServe> {
  const sandbox = await startSandbox({ port: 0, delays: 'fast' });
  const prefix = `tgs${randomBytes(5).toString('hex')}`;
  const service = spawnWorker({ REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: dataDir, STRIPE_API_BASE: sandbox.url, STRIPE_SECRET_KEY: 'sk_test_sandbox', INTERLOCK_SIGNING_KEY_FILE: '', INTERLOCK_UNSAFE_DURABILITY: '1', ...env }, ['serve', '--roles', 'worker,api', '--port', '0']);
  const stop = async () => {
    await service.stop();
    await sandbox.close();
    await removePrefixes([prefix]);
  };
  try {
    await service.ready;
    // service.json is written once the service serves, just after its "interlock serving" line.
    const file = join(dataDir, 'service.json');
    const giveUp = Date.now() + 20_000;
    while (!existsSync(file) || !readFileSync(file, 'utf8').endsWith('}\n')) {
      if (Date.now() > giveUp) throw new Error(`serve wrote no ${file}:\n${service.logs().slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return { sandbox, service, dataDir, facts: JSON.parse(readFileSync(file, 'utf8')) as ServiceFacts, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Runs `script` in bash from the repository, with PATH and HOME and `env` only, as another terminal would. */
export function shell(script: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', script], { cwd: REPO, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 90_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The effect a `refund … --wait` printed last (the Try-it lines print the approval before it). */
export function lastEffect(stdout: string): { effectId: string; outcome: string } {
  return JSON.parse(stdout.slice(stdout.lastIndexOf('\n{\n  "effectId"') + 1)) as { effectId: string; outcome: string };
}
