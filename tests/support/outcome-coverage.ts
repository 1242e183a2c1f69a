// Global setup and teardown of the test run: gives every test process a directory to record outcomes in
// (outcomes.ts), and at the end of a full run (`npm test` sets INTERLOCK_OUTCOME_COVERAGE=1) fails the run unless
// every outcome code of DESIGN §4 was produced by its source at least once.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECOVERY_OUTCOMES, SUBMIT_OUTCOMES } from '../../src/core/outcomes.js';
import { OUTCOME_LOG_ENV } from './outcomes.js';

/** Every "source code" pair a full run must produce. */
export const REQUIRED_OUTCOMES = [...SUBMIT_OUTCOMES.map((code) => `submit ${code}`), ...RECOVERY_OUTCOMES.map((code) => `recover ${code}`), 'recover UNRESOLVED:<error>'];

export function missingOutcomes(lines: readonly string[]): string[] {
  const seen = new Set(lines.map((line) => line.trim()).filter((line) => line !== ''));
  return REQUIRED_OUTCOMES.filter((required) => !seen.has(required));
}

let dir: string | null = null;

export function setup(): void {
  dir = mkdtempSync(join(tmpdir(), 'interlock-outcomes-'));
  process.env[OUTCOME_LOG_ENV] = dir;
}

export function teardown(): void {
  if (dir === null) return;
  const lines = readdirSync(dir).flatMap((file) => readFileSync(join(dir ?? '', file), 'utf8').split('\n'));
  rmSync(dir, { recursive: true, force: true });
  if (process.env.INTERLOCK_OUTCOME_COVERAGE !== '1') return;
  const missing = missingOutcomes(lines);
  if (missing.length > 0) {
    process.stderr.write(`\nOutcome coverage: no test produced ${missing.join(', ')}. Every outcome code of DESIGN §4 must come out of a real run of its source.\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`\nOutcome coverage: all ${REQUIRED_OUTCOMES.length} outcome codes were produced by their sources.\n`);
  }
}
