// What the scenario runner's tests of folders and processes share: a run of one cell whose world never opens, and
// waiting on processes through /proc.
import { readFileSync } from 'node:fs';
import { runScenarios } from '../../scenarios/run.js';

/** A run of one cell whose world never opens (no Redis, no sandbox): it writes its failed cell, or is refused. */
export function oneCell(out: string, opened: { count: number } = { count: 0 }) {
  return runScenarios({
    scenarios: ['stripe-dispute'],
    reps: 1,
    delays: 'fast',
    out,
    rows: ['crash_after_send_chargeback_during_outage'],
    columns: ['no_check'],
    env: { REDIS_URL: 'redis://127.0.0.1:1' },
    openWorld: () => {
      opened.count += 1;
      return Promise.reject(new Error('no world here'));
    },
  });
}

/** Whether the process runs (a zombie does not). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Polls `check` every 100 ms until it holds or `ms` pass; answers whether it held. */
export async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((wait) => setTimeout(wait, 100));
  return check();
}
