// Shared pieces of the benchmarks: a private Redis, measuring a run (wall time, this process's CPU, Redis's CPU and
// commands), medians, and the results file every benchmark adds its section to.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'results');
export const RESULTS_FILE = join(RESULTS_DIR, 'latest.json');

/** Redis's own CPU time so far, in seconds. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const cpu = String(await redis.info('cpu'));
  return Number(/used_cpu_user:([0-9.]+)/.exec(cpu)?.[1] ?? 0) + Number(/used_cpu_sys:([0-9.]+)/.exec(cpu)?.[1] ?? 0);
}

/**
 * Counts the commands a client sends (a script call is one command, whatever it does inside; Redis's own
 * commandstats would count every call a script makes too).
 */
export function countCommands(redis: Redis): { read(): number } {
  let sent = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent += 1;
    return send(...args);
  }) as Redis['sendCommand'];
  return { read: () => sent };
}

export type Measured = { perSecond: number; commandsPerEffect: number; nodeCpuUsPerEffect: number; redisCpuUsPerEffect: number; mainThreadBusy: number };

/**
 * Runs `work` for `count` items with `concurrency` in flight; measures it from outside the work. `observer` is a
 * connection of its own, for Redis's CPU; `commands` counts what the work's client sent.
 */
export async function measure(observer: Redis, commands: { read(): number }, count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<Measured> {
  let next = 0;
  const redisBefore = await redisCpuSeconds(observer);
  const sentBefore = commands.read();
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let index = next++; index < count; index = next++) await work(index);
    }),
  );
  const elapsed = performance.now() - started;
  const busy = performance.eventLoopUtilization(elu).utilization;
  const used = process.cpuUsage(cpu);
  const sent = commands.read() - sentBefore;
  const redisAfter = await redisCpuSeconds(observer);
  return {
    perSecond: Math.round((count * 1000) / elapsed),
    commandsPerEffect: round(sent / count, 2),
    nodeCpuUsPerEffect: Math.round((used.user + used.system) / count),
    redisCpuUsPerEffect: Math.round(((redisAfter - redisBefore) * 1e6) / count),
    mainThreadBusy: round(busy, 2),
  };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function machine(): { cores: number; cpu: string; memoryGiB: number; node: string } {
  return { cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
}

/** Adds (or replaces) one benchmark's section of bench/results/latest.json. */
export function recordResults(section: string, data: unknown): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const current = existsSync(RESULTS_FILE) ? (JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as Record<string, unknown>) : {};
  current[section] = { ...(data as object), recordedAt: new Date().toISOString(), machine: machine() };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(current, null, 2)}\n`);
}

/** A console progress line that rewrites itself when standard error is a terminal. */
export function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
  else process.stderr.write(`${text}\n`);
}
