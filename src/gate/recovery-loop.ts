// Recovery on a schedule: run at start, then again exactly when the last pass said more can be done (a send
// deadline plus the settle margin, or a lapsing claim), and at least every `intervalMs`. No polling in between.
import type { Logger } from 'pino';
import type { Journal } from '../redis/journal.js';
import type { Gate, RecoveryReport } from './gate.js';

export type RecoveryLoop = { stop(): void; done: Promise<void> };

/** Recovers `only` (or everything open) until nothing is left waiting, sleeping until each wake-up instant. */
export async function recoverUntilSettled(gate: Gate, journal: Journal, options: { only?: readonly string[]; timeoutMs?: number } = {}): Promise<RecoveryReport[]> {
  const reports: RecoveryReport[] = [];
  const giveUpAt = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    const report = await gate.recover(options.only ? { only: options.only } : {});
    reports.push(report);
    const pending = report.waiting.length + report.skipped.filter((item) => item.retryAt !== undefined).length + report.unresolved.length;
    if (pending === 0 || report.nextAt === null || Date.now() > giveUpAt) return reports;
    const delay = Math.max(0, report.nextAt - (await journal.serverTime())) + 5;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, 5_000)));
  }
}

export function startRecoveryLoop(gate: Gate, journal: Journal, logger: Logger, options: { intervalMs?: number } = {}): RecoveryLoop {
  const intervalMs = options.intervalMs ?? 15_000;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;
  const done = (async () => {
    while (!stopped) {
      let delay = intervalMs;
      try {
        const report = await gate.recover();
        if (report.nextAt !== null) delay = Math.min(intervalMs, Math.max(0, report.nextAt - (await journal.serverTime())) + 5);
      } catch (error) {
        logger.error({ err: error }, 'recovery pass failed; retrying on the next tick');
      }
      if (stopped) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, delay);
      });
    }
  })();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
    },
    done,
  };
}
