// The progress line on stderr: a bar, cells done of all, the cells running now and an estimate of the time left
// (the mean time of a finished cell times the cells left, divided by how many run at once).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Progress } from './cells.js';

/** `note`: a line of its own (what happened, what the run does now), the bar drawn again under it. */
export type ProgressBar = { cell(): Progress; add(total: number): void; note(line: string): void; finish(): void };

/** `unit`: what the bar counts, as its line names it (a scenario's cells; the chaos run's requests). */
export function createProgressBar(stream: NodeJS.WriteStream = process.stderr, unit = 'cells'): ProgressBar {
  let total = 0;
  let done = 0;
  let busyMs = 0;
  const running = new Map<number, { label: string; since: number; waiting: { what: string; until: number } | null }>();
  let next = 0;
  const tty = stream.isTTY === true;
  let lastLine = 0;
  let finished = false;

  const render = (force = false) => {
    // After finish (the run's end, an interrupt), a cell that still ends must not draw the bar under the last words.
    if (finished) return;
    const now = Date.now();
    if (!force && !tty && now - lastLine < 5_000) return;
    lastLine = now;
    const width = 24;
    const filled = total === 0 ? 0 : Math.round((done / total) * width);
    const mean = done === 0 ? null : busyMs / done;
    const parallel = Math.max(1, running.size);
    const left = mean === null ? '?' : formatDuration(((total - done) * mean) / parallel);
    const labels = [...running.values()].map((entry) => (entry.waiting === null ? entry.label : `${entry.label}: waiting for ${entry.waiting.what}, ${formatDuration(Math.max(0, entry.waiting.until - now))} left`));
    const current = labels.length === 0 ? '' : ` · ${labels[0]}${labels.length > 1 ? ` (+${labels.length - 1})` : ''}`;
    const line = `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${unit} · ~${left} left${current}`;
    stream.write(tty ? `\r\x1b[2K${line.slice(0, (stream.columns ?? 160) - 1)}` : `${line}\n`);
  };
  const timer = setInterval(() => render(), 1_000);
  timer.unref();

  return {
    add(count) {
      total += count;
      render(true);
    },
    cell() {
      const id = next++;
      return {
        start(label) {
          running.set(id, { label, since: Date.now(), waiting: null });
          render(true);
        },
        async wait(what, ms) {
          const entry = running.get(id);
          if (entry !== undefined) entry.waiting = { what, until: Date.now() + ms };
          render(true);
          try {
            await sleep(ms);
          } finally {
            if (entry !== undefined) entry.waiting = null;
          }
        },
        done() {
          const entry = running.get(id);
          if (entry !== undefined) busyMs += Date.now() - entry.since;
          running.delete(id);
          done += 1;
          render(true);
        },
      };
    },
    note(line) {
      stream.write(tty ? `\r\x1b[2K${line}\n` : `${line}\n`);
      render(true);
    },
    finish() {
      if (finished) return;
      clearInterval(timer);
      render(true);
      finished = true;
      if (tty) stream.write('\n');
    },
  };
}

function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}
