// Drives the official Stripe CLI (the Go binary from the `@stripe/cli` npm package) against a sandbox, as
// stripe-cli.md §8 describes: the platform binary spawned directly (the npm shim does not pass signals on), a
// throwaway config directory, telemetry off, and `--api-base` on the loopback IP.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { ChildProcess } from 'node:child_process';

const require = createRequire(import.meta.url);

/** Where the platform package for this machine keeps the binary, per the wrapper's own `platforms.json`. */
export function stripeBinary(): string {
  const platforms = JSON.parse(readFileSync(require.resolve('@stripe/cli/platforms.json'), 'utf8')) as Record<string, { pkg: string; bin: string }>;
  const platform = platforms[`${process.platform}-${process.arch}`];
  if (platform === undefined) throw new Error(`@stripe/cli has no binary for ${process.platform}-${process.arch}`);
  return join(dirname(require.resolve(`${platform.pkg}/package.json`)), 'bin', platform.bin);
}

export const CLI_API_KEY = 'sk_test_interlock_stripe_cli';

/** The environment of every CLI run: its own config dir (the CLI writes one on each run), no telemetry, our key. */
export function cliEnvironment(configDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configDir, HOME: configDir, STRIPE_CLI_TELEMETRY_OPTOUT: '1', STRIPE_API_KEY: CLI_API_KEY, ...extra };
  // An inherited device name or key would leak between runs; ours are set above or by `extra`.
  if (extra['STRIPE_DEVICE_NAME'] === undefined) delete env['STRIPE_DEVICE_NAME'];
  return env;
}

export interface TempDir {
  path: string;
  remove(): void;
}

export function tempConfigDir(): TempDir {
  const path = mkdtempSync(join(tmpdir(), 'interlock-stripe-cli-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** `--api-base` must be the loopback IP; `localhost` is rejected by the CLI (stripe-cli.md §2). */
export function apiBase(port: number): string {
  return `http://127.0.0.1:${port}`;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion (`trigger`, `listen --print-secret`). */
export function runStripe(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(stripeBinary(), args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface Listener {
  child: ChildProcess;
  /** Every stderr line so far (the CLI logs there, `Ready!` included). */
  stderr: string[];
  stdout: string[];
  /** Resolves with the first stderr line that matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM to the Go process itself, then waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts `stripe listen` with `args`, collecting its output line by line. */
export function startListen(args: readonly string[], env: NodeJS.ProcessEnv): Listener {
  const child = spawn(stripeBinary(), ['listen', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  const stdout: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve(line: string): void }> = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.stderr === null || child.stdout === null) throw new Error('stripe listen has no output pipes');
  createInterface({ input: child.stdout }).on('line', (line) => stdout.push(line));
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderr.push(line);
    for (const waiter of [...waiters]) {
      if (!waiter.pattern.test(line)) continue;
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(line);
    }
  });
  return {
    child,
    stderr,
    stdout,
    waitFor(pattern, timeoutMs = 20_000) {
      const seen = stderr.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`stripe listen printed no ${String(pattern)} within ${timeoutMs} ms; stderr:\n${stderr.join('\n')}`)), timeoutMs);
        waiters.push({
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
        void exited.then(() => {
          clearTimeout(timer);
          reject(new Error(`stripe listen exited before printing ${String(pattern)}; stderr:\n${stderr.join('\n')}`));
        });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
