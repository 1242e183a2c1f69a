// `npm run bench` itself (issue 12 §5), in its quickest form: `--only` picks benchmarks by name and refuses a name
// that matches none, and `--quick` runs a benchmark briefly and writes quick.json and quick.md, never the full run's
// latest.json and latest.md. Figures are never judged here (speed is for the benchmarks, not for tests).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');
const results = mkdtempSync(join(tmpdir(), 'interlock-bench-results-'));
afterAll(() => rmSync(results, { recursive: true, force: true }));

function bench(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [tsxCli, join(REPO, 'bench', 'run.ts'), ...args], { cwd: REPO, env: { ...process.env, BENCH_RESULTS_DIR: results }, timeout: 80_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
  });
}

describe('npm run bench', () => {
  it('--only with a name no benchmark has exits 2 and names the benchmarks there are', async () => {
    const run = await bench(['--only', 'no-such-bench']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('matches no benchmark');
    expect(run.stderr).toContain('verify.bench.ts');
  });

  it('--quick --only verify runs that one benchmark and writes quick.json and quick.md, not latest.*', async () => {
    const run = await bench(['--only', 'verify', '--quick']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('== verify.bench.ts');
    expect(run.stdout).not.toContain('== gate-throughput.bench.ts');
    expect(run.stderr).toContain('[1/1] verify.bench.ts');
    const json = JSON.parse(readFileSync(join(results, 'quick.json'), 'utf8')) as Record<string, { quick?: boolean; targets?: unknown[]; markdown?: string }>;
    expect(Object.keys(json)).toEqual(['verify']);
    expect(json.verify?.quick).toBe(true);
    expect(json.verify?.targets?.length).toBeGreaterThan(0);
    const page = readFileSync(join(results, 'quick.md'), 'utf8');
    expect(page).toContain('quick run');
    expect(page).toContain('## Receipt verification');
    expect(page).toMatch(/Node v\d+/);
    expect(page).toMatch(/redis-server (\d+\.\d+|not found)/);
    expect(existsSync(join(results, 'latest.json'))).toBe(false);
    expect(existsSync(join(results, 'latest.md'))).toBe(false);
    // Two Node processes start (run.ts and the benchmark); on a loaded machine that alone can take tens of seconds.
  }, 90_000);
});
